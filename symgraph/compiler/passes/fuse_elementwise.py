"""Elementwise fusion: ``Graph -> Graph``.

Requires: the graph's types (``Graph.types``); autodiff has run (fused nodes are not
differentiable). Guarantees: maximal groups (greedy, in topological order) of nodes whose
``OpDef.pattern`` is elementwise or broadcast and which have an ``OpDef.expr`` become one
``_fused`` node (format: ``symgraph/ops/fused.py``) computing the same values:

* a group may have several outputs: every member read outside the group, or a graph output;
* an elementwise node that is the only reader of a GEMM-like node (pattern ``gemm``, or an op
  with ``OpDef.epilogue`` such as pooling) takes it as its ``head``, so bias/activation become
  that op's epilogue;
* no cycle: a node joins a group only if none of its inputs from outside the group depends on the
  group (a backward search from those inputs, cut where no group that recent is upstream); when
  the groups still read each other (an outside input whose group holds another member that
  reads this group), the grouping is redone with group-level searches (``strict``);
* nothing is recomputed: every node lands in exactly one group or stays as it is;
* a node that depends on an input bound only in the backward phase (``__phase__`` = backward, the
  head gradients) never joins a group that does not, so the forward phase never waits on one.

Only ``OpDef.pattern``, ``OpDef.epilogue``, ``OpDef.expr`` and the arity are read; no op is
named. The grouping is ``fuse_groups.py`` (facts per node position in ``Graph.positions``'
order); the kernels and the remaining nodes are rebuilt in the order of one depth-first walk
over those units (``fuse_groups.unit_order``), each kernel's output entries taking the types
of the entries they replace.
"""
from __future__ import annotations

from typing import Optional

from ...core.attrs import Attrs
from ...core.base import GraphError
from ...core.expr import Expr, inp
from ...core.graph import Entry, Graph, Node
from ...core.registry import get_op
from ...core.types.table import TypeTable, types_of
from .fuse_groups import MAX_MEMBERS, NONE, Grouping, unit_order  # noqa: F401 (MAX_MEMBERS)


def _kernel_name(ops: list[str]) -> str:
    names: list[str] = []
    for op in ops:
        n = op.lstrip("_")
        if not names or names[-1] != n:
            names.append(n)
    if len(names) > 5:
        names = names[:5] + [f"{len(names) - 5}more"]
    return "fused_" + "_".join(names)


def _formulas(sig: tuple, outs: tuple[int, ...]) -> tuple[Expr, ...]:
    """The formulas of a group's outputs from its signature: per body member (op, attrs,
    references to its operands: ``k >= 0`` is expression input ``k``, ``-1 - j`` member j)."""
    vals: list[Expr] = []
    for op, attrs, refs in sig:
        vals.append(get_op(op).expr(attrs, *[inp(r) if r >= 0 else vals[-1 - r]
                                             for r in refs]))
    return tuple(vals[j] for j in outs)


def _wiring(members: list[int], head: int, pos: dict[int, int], g: Grouping, new: list
            ) -> tuple[list[Entry], list[int], list[tuple], list[int], list[int]]:
    """A group's node inputs (new entries), the member reading each, the signature (per body
    member: op, attrs, references to its operands: ``k >= 0`` is expression input ``k``,
    ``-1 - j`` body member j), and the body members that are outputs of the kernel: their
    places in the body and their node positions."""
    nodes, ins, out0, users = g.nodes, g.ins, g.out0, g.users
    head_node = nodes[head] if head != NONE else None
    node_inputs: list[Entry] = []
    readers: list[int] = []  # the member reading each node input
    # expression reference of each value read, by producer position (and output index when
    # not 0: ints hash faster than entries); the head's output is expression input 0
    ref_of: dict = {}
    if head_node is not None:
        node_inputs = [new[j][e.index] for j, e in zip(ins[head], head_node.inputs)]
        readers = [pos[head]] * len(node_inputs)
        ref_of[head] = 0
    base = len(node_inputs) - (1 if head_node is not None else 0)  # inputs feeding the head
    sig: list[tuple] = []
    outs: list[int] = []
    out_pos: list[int] = []
    for m in members:
        if m == head:
            continue
        node = nodes[m]
        refs = []
        for j, e in zip(ins[m], node.inputs):
            key = j if e.index == 0 else (j, e.index)
            r = ref_of.get(key)
            if r is None:  # read from outside: the next expression input
                r = ref_of[key] = len(node_inputs) - base
                node_inputs.append(new[j][e.index])
                readers.append(pos[m])
            refs.append(r)
        k = len(sig)
        ref_of[m] = -1 - k
        sig.append((node.op, node.attrs, tuple(refs)))
        if m in out0:  # a graph output, or read outside the group: an output of the kernel
            outs.append(k)
            out_pos.append(m)
        else:
            for u in users[m]:
                if u not in pos:
                    outs.append(k)
                    out_pos.append(m)
                    break
    return node_inputs, readers, sig, outs, out_pos


def _build_fused(members: list[int], head: int, g: Grouping, new: list, memo: dict
                 ) -> list[tuple[int, Entry, Entry]]:
    """One ``_fused`` node for a group (node positions, sorted); returns (member, old entry,
    new entry) for each of its outputs. ``new``: each built node's new entries, by position.
    ``memo``: formulas, member ops and kernel name by group signature (graphs repeat the same
    groups many times)."""
    nodes = g.nodes
    pos = {m: k for k, m in enumerate(members)}
    head_node = nodes[head] if head != NONE else None
    node_inputs, readers, sig, outs, out_pos = _wiring(members, head, pos, g, new)
    # The signature and the head's op and place decide the formulas, member ops and name.
    key = (tuple(sig), tuple(outs), (head_node.op, pos[head]) if head_node else None)
    found = memo.get(key)
    if found is None:
        ops = tuple([nodes[m].op for m in members])
        found = memo[key] = (_formulas(key[0], key[1]), ops, _kernel_name(list(ops)))
    exprs, ops, kname = found
    shape = g.sc.shape
    outputs = [nodes[m].entries()[0] for m in out_pos]
    attrs = Attrs.from_sorted((  # (keys in order: one kernel per group, no sort needed)
        ("exprs", exprs),
        ("head", (head_node.op, head_node.attrs, len(head_node.inputs)) if head_node else None),
        ("in_members", tuple(readers)),  # the member that reads input i (first reader)
        ("members", ops),
        ("name", kname),
        ("nodes", tuple([nodes[m].name for m in members])),  # for profiles and pictures
        ("num_inputs", len(node_inputs)),
        ("out_members", tuple([pos[m] for m in out_pos])),  # which member is output i
        ("shapes", tuple([shape(e) for e in outputs]))))
    last = members[-1] if members[-1] != head else members[-2]
    fused = Node("_fused", f"{kname}:{nodes[last].name}", attrs, tuple(node_inputs))
    # one entry per output, known here: the node need not ask its op (lowering asks)
    made = fused.set_entries(len(outputs))
    return list(zip(out_pos, outputs, made))


def fuse_elementwise(graph: Graph) -> Graph:
    """Replace fusible groups by ``_fused`` nodes."""
    sc = types_of(graph)
    nodes = graph.nodes()
    g, units = _grouped(graph, sc, nodes, strict=False)
    if units is None:  # a cycle through a group's other member: group-level checks instead
        g, units = _grouped(graph, sc, nodes, strict=True)
    if units is None:
        raise GraphError("fuse_elementwise: the grouping has a cycle even with group-level "
                         "checks (a bug: please report the graph)")
    n, ins = len(nodes), g.ins
    new: list = [None] * n  # each node's new entries (a fused member's: only its output's)
    memo: dict[tuple, tuple] = {}
    # Rebuilt nodes and fused kernels compute the values they replace: their types are
    # copied, not recomputed (``verify`` replays the rules in the tests).
    for u in units:
        if u < n:
            node = nodes[u]
            new_inputs = tuple([new[j][e.index] for j, e in zip(ins[u], node.inputs)])
            if new_inputs == node.inputs:
                new[u] = node.entries()
            else:
                rebuilt = node.with_inputs(new_inputs)
                sc.copy(node, rebuilt)
                new[u] = rebuilt.entries()
        else:
            r = u - n
            for m, old, new_entry in _build_fused(g.members[r], g.head[r], g, new, memo):
                sc.copy_entry(old, new_entry)
                new[m] = (new_entry,)
    index = g.index
    return Graph(tuple([new[index[e.node]][e.index] for e in graph.outputs]), graph.types)


def _grouped(graph: Graph, sc: TypeTable, nodes: list[Node], strict: bool
             ) -> tuple[Grouping, Optional[list[int]]]:
    """The grouping and its units in dependency order (None when the groups depend on each
    other in a cycle); see ``fuse_groups.unit_order``."""
    g = Grouping(graph, sc, nodes, strict)
    for i in range(len(nodes)):
        g.add(i)
    g.defer_to_consumers()
    found = unit_order(g)
    return g, None if found is None else found[1]
