"""Elementwise fusion: ``Graph -> Graph``.

Requires: variables carry ``__shape__``/``__dtype__``; autodiff has run (fused nodes are not
differentiable). Guarantees: maximal groups (greedy, in topological order) of nodes whose
``OpDef.pattern`` is elementwise or broadcast and which have an ``OpDef.expr`` become one
``_fused`` node (format: ``symgraph/ops/fused.py``) computing the same values:

* a group may have several outputs: every member read outside the group, or a graph output;
* an elementwise node that is the only reader of a GEMM-like node (pattern ``gemm``) takes it as
  its ``head``, so bias/activation become the GEMM's epilogue;
* no cycle: a node joins a group only if none of its inputs from outside the group depends on the
  group (a bitmask of the groups each node depends on makes this one OR per edge);
* nothing is recomputed: every node lands in exactly one group or stays as it is;
* a node that depends on an input bound only in the backward phase (``__phase__`` = backward, the
  head gradients) never joins a group that does not, so the forward phase never waits on one.

Only ``OpDef.pattern``, ``OpDef.expr`` and the arity are read; no op is named.
"""
from __future__ import annotations

from collections import deque
from typing import Optional

from ..attrs import Attrs
from ..expr import Expr, inp
from ..graph import Entry, Graph, Node
from ..registry import BROADCAST, ELEMWISE, GEMM, get_op
from ._shapes import ShapeCache

MAX_MEMBERS = 48  # keeps generated kernels (and Expr hashing) small


def _fusible(node: Node) -> bool:
    if node.is_variable:
        return False
    opdef = get_op(node.op)
    return opdef.pattern in (ELEMWISE, BROADCAST) and opdef.expr is not None \
        and node.num_outputs == 1


def _is_head(node: Node) -> bool:
    return not node.is_variable and get_op(node.op).pattern == GEMM and node.num_outputs == 1


class _Grouping:
    """Greedy grouping state: group id per node, members, heads, dependency bitmasks."""

    def __init__(self, graph: Graph, sc: ShapeCache) -> None:
        self.sc = sc
        self.outputs = set(graph.outputs)
        self.users = graph.consumers()
        self.group: dict[Node, int] = {}
        self.members: list[list[Node]] = []
        self.head: list[Optional[Node]] = []
        self.anc: dict[Node, int] = {}   # bit g set: depends on (or is in) group g
        self.late: dict[Node, bool] = {}  # depends on an input bound in the backward phase

    def _new(self, node: Node, head: bool) -> int:
        self.members.append([node])
        self.head.append(node if head else None)
        return len(self.members) - 1

    def _can_join(self, node: Node, gid: int) -> bool:
        first = self.members[gid][0]
        if len(self.members[gid]) >= MAX_MEMBERS or self.late[first] != self.late[node]:
            return False
        if self.sc.dtype(Entry(first)) != self.sc.dtype(Entry(node)):
            return False
        head = self.head[gid]
        if head is not None and len(self.members[gid]) == 1:
            if self.users[head] != [node] or Entry(head) in self.outputs:
                return False
        bit = 1 << gid
        return not any(self.group.get(e.node) != gid and self.anc[e.node] & bit
                       for e in node.inputs)

    def add(self, node: Node) -> None:
        anc, late = 0, node.is_variable and node.extra.get("__phase__") == "backward"
        for e in node.inputs:
            anc |= self.anc[e.node]
            late = late or self.late[e.node]
        self.late[node] = late
        gid = None
        if _fusible(node):
            for e in node.inputs:
                g = self.group.get(e.node)
                if g is not None and self._can_join(node, g):
                    gid = g
                    self.members[g].append(node)
                    break
            if gid is None:
                gid = self._new(node, head=False)
        elif _is_head(node):
            gid = self._new(node, head=True)
        if gid is not None:
            self.group[node] = gid
            anc |= 1 << gid
        self.anc[node] = anc


def _kernel_name(ops: list[str]) -> str:
    names: list[str] = []
    for op in ops:
        n = op.lstrip("_")
        if not names or names[-1] != n:
            names.append(n)
    if len(names) > 5:
        names = names[:5] + [f"{len(names) - 5}more"]
    return "fused_" + "_".join(names)


def _build_fused(members: list[Node], head: Optional[Node], g: _Grouping,
                 remap: dict[Entry, Entry]) -> list[tuple[Entry, Entry]]:
    """One ``_fused`` node for a group; returns (old entry, new entry) pairs for its outputs."""
    inside = set(members)
    node_inputs: list[Entry] = [remap[e] for e in head.inputs] if head else []
    expr_of: dict[Entry, Expr] = {Entry(head): inp(0)} if head else {}
    base = 1 if head else 0
    ext_index: dict[Entry, int] = {}
    body = [m for m in members if m is not head]
    for m in body:
        args = []
        for e in m.inputs:
            if e not in expr_of:
                if e not in ext_index:
                    ext_index[e] = base + len(ext_index)
                    node_inputs.append(remap[e])
                expr_of[e] = inp(ext_index[e])
            args.append(expr_of[e])
        expr_of[Entry(m)] = get_op(m.op).expr(m.attrs, *args)
    outs = [m for m in body if Entry(m) in g.outputs or any(u not in inside for u in g.users[m])]
    ops = [m.op for m in members]
    kname = _kernel_name(ops)
    attrs = Attrs({
        "exprs": tuple(expr_of[Entry(m)] for m in outs),
        "shapes": tuple(g.sc.shape(Entry(m)) for m in outs),
        "members": tuple(ops),
        "head": (head.op, head.attrs, len(head.inputs)) if head else None,
        "num_inputs": len(node_inputs), "name": kname})
    fused = Node("_fused", f"{kname}:{body[-1].name}", attrs, tuple(node_inputs))
    return [(Entry(m), Entry(fused, i)) for i, m in enumerate(outs)]


def fuse_elementwise(graph: Graph) -> Graph:
    """Replace fusible groups by ``_fused`` nodes."""
    sc = ShapeCache()
    g = _Grouping(graph, sc)
    nodes = graph.nodes()
    for node in nodes:
        g.add(node)
    units: dict[Node, object] = {}
    for node in nodes:
        gid = g.group.get(node)
        big = gid is not None and len(g.members[gid]) > 1
        units[node] = ("group", gid) if big else node
    remap: dict[Entry, Entry] = {}
    for unit in _unit_order(nodes, units):
        if isinstance(unit, Node):
            new_inputs = tuple(remap[e] for e in unit.inputs)
            new = unit if new_inputs == unit.inputs else unit.with_inputs(new_inputs)
            remap.update(zip(unit.entries(), new.entries()))
        else:
            gid = unit[1]
            remap.update(_build_fused(g.members[gid], g.head[gid], g, remap))
    return Graph(tuple(remap[e] for e in graph.outputs))


def _unit_order(nodes: list[Node], units: dict[Node, object]) -> list[object]:
    """Units (single nodes or groups) in an order where every unit follows its inputs."""
    deps: dict[object, set] = {}
    for node in nodes:
        u = units[node]
        deps.setdefault(u, set()).update(units[e.node] for e in node.inputs
                                         if units[e.node] != u)
    users: dict[object, list] = {u: [] for u in deps}
    for u, ds in deps.items():
        for d in ds:
            users[d].append(u)
    indeg = {u: len(ds) for u, ds in deps.items()}
    ready = deque(u for u, n in indeg.items() if n == 0)
    order = []
    while ready:
        u = ready.popleft()
        order.append(u)
        for v in users[u]:
            indeg[v] -= 1
            if indeg[v] == 0:
                ready.append(v)
    assert len(order) == len(deps), "fusion made a cycle"
    return order
