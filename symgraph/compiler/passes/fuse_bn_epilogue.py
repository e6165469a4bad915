"""BatchNorm's normalisation takes the fused group that reads it as its epilogue:
``Graph -> Graph``.

Why: after ``fuse_elementwise`` a ResNet block's BatchNorm is followed by a kernel of its own
for the ReLU (or the residual add and the ReLU) that reads BatchNorm's output back and writes
it again: a pass over the data and a launch per layer. BatchNorm can apply that formula where
it stores its output instead (``cuda/lowering_norm``: its normalisation kernel, or the
normalising phase of its one-kernel channel-last form), as a convolution or a dense layer
applies its epilogue.

Requires: the graph's types, and ``fuse_elementwise`` to have run (it reads ``_fused`` nodes).
A ``BatchNorm`` whose output 0 is read by exactly one node, a ``_fused`` group with no head
(or a lone elementwise node with a formula: a ReLU), one output and every input of that
output's shape and dtype (elementwise operands), none of them depending on the BatchNorm, and whose other outputs are read only by nodes after that
group (the backward), becomes with the group one ``_fused`` node whose head is the BatchNorm:
its inputs are BatchNorm's five and the group's others, its output 0 the group's, its outputs
1-4 BatchNorm's statistics and moving statistics (``ops/fused.py``'s ``extra``).

Guarantees: every entry keeps its value, its type and the position of the graph outputs that
name it (BatchNorm's outputs are computed by the same op on the same inputs; the group's
formula reads them as before); nothing is computed twice; the graph is unchanged when no
BatchNorm qualifies.
"""
from __future__ import annotations

from typing import Optional

from ...core.attrs import Attrs
from ...core.expr import inp, substitute
from ...core.graph import Entry, Graph, Node
from ...core.registry import OpDef, get_op, ops_where
from ...core.types.table import TypeTable, types_of
from ..ops.fused import lone_group
from .fuse_groups import FUSE, op_role


def _takes_groups(opdef: OpDef) -> bool:
    return opdef.group_epilogue


def _heads(node: Node) -> bool:
    """Whether ``node`` may take a group as its epilogue (``OpDef.group_epilogue``)."""
    return not node.is_variable and get_op(node.op).group_epilogue


def _depends_on(starts: list[Node], target: Node, pos: dict[Node, int]) -> bool:
    """Whether ``target`` is among the ancestors of ``starts`` (only nodes after it can have
    it upstream, so the search stops at every earlier one)."""
    floor = pos[target]
    stack = [n for n in starts if pos[n] > floor]
    seen = set(stack)
    while stack:
        n = stack.pop()
        for e in n.inputs:
            m = e.node
            if m is target:
                return True
            if pos[m] > floor and m not in seen:
                seen.add(m)
                stack.append(m)
    return False


def _plan(graph: Graph, types: TypeTable) -> dict[Node, tuple[Node, Attrs]]:
    """Group node -> the BatchNorm whose epilogue it becomes, and the group's attributes
    (``_group``)."""
    nodes = graph.nodes()
    pos = graph.positions()
    users = graph.consumers()
    named = {e.node for e in graph.outputs if e.index == 0}
    plan: dict[Node, tuple[Node, Attrs]] = {}
    for bn in nodes:
        if not _heads(bn) or bn in named:
            continue
        readers = [u for u in users[bn] if any(e.node is bn and e.index == 0 for e in u.inputs)]
        if len(readers) != 1 or readers[0] in plan:
            continue
        g = readers[0]
        a = _group(g, types)
        if a is None:
            continue
        y = Entry(bn, 0)
        kind = (types.shape(y), types.dtype(y))
        if len(g.entries()) != 1 or (types.shape(Entry(g)), types.dtype(Entry(g))) != kind \
                or any((types.shape(e), types.dtype(e)) != kind for e in g.inputs):
            continue
        others = [e.node for e in g.inputs if e.node is not bn]
        if any(e.node is bn and e.index for e in g.inputs) or _depends_on(others, bn, pos):
            continue
        if any(pos[u] < pos[g] for u in users[bn] if u is not g):
            continue  # a statistic read before the group (the backward reads them after)
        plan[g] = (bn, a)
    return plan


def _group(g: Node, types: TypeTable) -> Optional[Attrs]:
    """``g``'s attributes as a headless ``_fused`` group of one output: its own if it is one,
    made up for a lone elementwise node with a formula (fusion leaves those as they are)."""
    if g.op == "_fused":
        a = g.attrs
        ok = a["head"] is None and len(a["exprs"]) == 1 and not a.get("extra")
        return a if ok else None
    if op_role(g.op) != FUSE or len(g.entries()) != 1:
        return None
    return lone_group(g, types.shape(Entry(g)))


def _merged(g: Node, a: Attrs, bn: Node, inputs: list[Entry], types: TypeTable) -> Node:
    """The ``_fused`` node of BatchNorm ``bn`` (inputs ``inputs[:5]``, rebuilt) heading group
    ``g`` (attributes ``a``, its other inputs ``inputs[5:]``)."""
    refs, k = [], 0
    for e in g.inputs:
        if e.node is bn:
            refs.append(inp(0))
        else:
            k += 1
            refs.append(inp(k))
    n_head = len(bn.inputs)
    extra = tuple((tuple(types.shape(Entry(bn, i))), types.dtype(Entry(bn, i)).name)
                  for i in range(1, len(bn.entries())))
    in_members = (0,) * n_head + tuple(m + 1 for e, m in zip(g.inputs, a["in_members"])
                                       if e.node is not bn) if a["in_members"] else ()
    attrs = Attrs.from_sorted((
        ("exprs", (substitute(a["exprs"][0], refs),)),
        ("extra", extra),
        ("head", (bn.op, bn.attrs, n_head)),
        ("in_members", in_members),
        ("members", (bn.op,) + tuple(a["members"])),
        ("name", "fused_" + bn.op + "_" + a["name"].removeprefix("fused_")),
        ("nodes", (bn.name,) + tuple(a["nodes"]) if a["nodes"] else ()),
        ("num_inputs", len(inputs)),
        ("out_members", (a["out_members"][0] + 1,) + (0,) * len(extra)
         if a["out_members"] else ()),
        ("shapes", a["shapes"])))
    return Node("_fused", g.name, attrs, tuple(inputs), n_outputs=1 + len(extra))


def fuse_bn_epilogue(graph: Graph) -> Graph:
    """``graph`` with each qualifying BatchNorm heading the fused group that reads it."""
    if graph.op_names().isdisjoint(ops_where(_takes_groups)):
        return graph
    types = types_of(graph)
    plan = _plan(graph, types)
    if not plan:
        return graph
    remap: dict[Entry, Entry] = {}
    for node in graph.nodes():  # (graph.rewrite's walk, with the BatchNorms' entries remapped)
        ins = tuple([remap.get(e, e) for e in node.inputs])
        current = node if ins == node.inputs else node.with_inputs(ins)
        if current is not node:
            types.copy(node, current)
        planned = plan.get(node)
        if planned is not None:
            bn, a = planned
            current = _merged(node, a, bn, [remap.get(e, e) for e in bn.inputs]
                              + [e for e, old in zip(ins, node.inputs) if old.node is not bn],
                              types)
            types.copy_entry(Entry(node), Entry(current))
            for i in range(1, len(bn.entries())):
                types.copy_entry(Entry(bn, i), Entry(current, i))
                remap[Entry(bn, i)] = Entry(current, i)
        if current is not node:
            for i, old in enumerate(node.entries()):
                remap[old] = Entry(current, i)
    return Graph(tuple([remap.get(e, e) for e in graph.outputs]), graph.types)
