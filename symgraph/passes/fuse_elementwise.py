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
named.
"""
from __future__ import annotations

from collections import deque
from typing import Optional

from ..attrs import Attrs
from ..base import GraphError
from ..expr import Expr, inp
from ..graph import VARIABLE, Entry, Graph, Node
from ..registry import BROADCAST, ELEMWISE, GEMM, get_op
from ..typetable import TypeTable, types_of

MAX_MEMBERS = 48  # keeps generated kernels (and Expr hashing) small


FUSE, HEAD = 1, 2  # what a node can be in a group: a member, or a GEMM-like head


def _op_role(op: str) -> int:
    """``FUSE`` for an elementwise/broadcast op with a formula, ``HEAD`` for a GEMM-like one
    (pattern ``gemm`` or ``OpDef.epilogue``), 0 otherwise."""
    opdef = get_op(op)
    if opdef.pattern in (ELEMWISE, BROADCAST) and opdef.expr is not None:
        return FUSE
    return HEAD if opdef.pattern == GEMM or opdef.epilogue else 0


class _Grouping:
    """Greedy grouping state (union-find over group ids).

    "Does this node depend on group g" is answered by searching upward from the node
    (``_reaches``): ``born[node]`` is the group a node was put in when it was added, ``top[node]``
    the newest such group among the node and its ancestors, so the search stops at every node
    whose ancestry holds no group as recent as the ones asked about (on a long graph: at once).
    ``ext[root]`` lists the nodes a group reads from outside it. (A bitmask of all the groups
    upstream of each node answered with one AND, but on a deep chain each mask held a bit per
    earlier group: time and memory grew with the square of the graph.) Checks are
    conservative: a merge they refuse is safe. Every member of a group shares one dtype and one
    phase (joins and merges check them), kept per group in ``kind``.
    """

    def __init__(self, graph: Graph, sc: TypeTable, strict: bool = False) -> None:
        self.sc = sc
        self.strict = strict  # group-level searches (see _reaches_strict)
        self.outputs = set(graph.outputs)
        self.users = graph.consumers()
        self.group: dict[Node, int] = {}
        self.parent: list[int] = []
        self.merged: dict[int, frozenset] = {}  # root -> ids of the groups merged into it
        self.ext: list[list[Node]] = []  # per root: the nodes its members read from outside
        self.members: list[list[Node]] = []
        self.head: list[Optional[Node]] = []
        self.kind: list[tuple] = []  # (dtype, late) of each group's members
        self.born: dict[Node, int] = {}  # the group a node was put in when added
        self.top: dict[Node, int] = {}  # newest group id among the node and its ancestors
        self.late: dict[Node, bool] = {}  # depends on an input bound in the backward phase
        self.roles: dict[str, int] = {}  # op -> _op_role (asked once per op, not per node)

    def _role(self, node: Node) -> int:
        """The node's role in a group; single-output op nodes only."""
        role = self.roles.get(node.op)
        if role is None:
            role = self.roles[node.op] = 0 if node.op == VARIABLE else _op_role(node.op)
        return role if role and len(node.entries()) == 1 else 0

    def _bits(self, r: int) -> frozenset:
        """The group ids of root ``r``: its own, and those of the groups merged into it."""
        return self.merged.get(r) or frozenset((r,))

    def _reaches(self, starts: list[Node], gids: frozenset) -> bool:
        """Whether a node of ``starts`` or an ancestor was put in a group of ``gids`` when it
        was added. Group ids grow in topological order, so a node whose ``top`` is older than
        every id asked about has none of them upstream: the search goes no further there."""
        if self.strict:
            return self._reaches_strict(starts, gids)
        floor, top, born = min(gids), self.top, self.born
        stack = [n for n in starts if top[n] >= floor]
        seen = set(stack)
        while stack:
            n = stack.pop()
            if born.get(n) in gids:
                return True
            for e in n.inputs:
                m = e.node
                if top[m] >= floor and m not in seen:
                    seen.add(m)
                    stack.append(m)
        return False

    def _reaches_strict(self, starts: list[Node], gids: frozenset) -> bool:
        """:meth:`_reaches` through groups: a fused kernel reads the inputs of all its members,
        so a node in a group stands for every member's inputs (the node-level search misses a
        cycle through a group whose other member depends on ``gids``). No pruning: this runs
        only when the node-level grouping made a cycle (``fuse_elementwise``)."""
        targets = {self.root(g) for g in gids}
        stack, seen, expanded = list(starts), set(starts), set()
        while stack:
            n = stack.pop()
            r = self.root_of(n)
            if self.born.get(n) in gids or r in targets:
                return True
            nxt = [e.node for e in n.inputs]
            if r is not None and r not in expanded:
                expanded.add(r)
                nxt += [e.node for m in self.members[r] for e in m.inputs]
            for m in nxt:
                if m not in seen:
                    seen.add(m)
                    stack.append(m)
        return False

    def root(self, gid: int) -> int:
        parent = self.parent
        while parent[gid] != gid:
            parent[gid] = parent[parent[gid]]
            gid = parent[gid]
        return gid

    def root_of(self, node: Node) -> Optional[int]:
        gid = self.group.get(node)
        return None if gid is None else self.root(gid)

    def _new(self, node: Node, head: bool, kind: tuple) -> int:
        gid = len(self.parent)
        self.parent.append(gid)
        self.ext.append([])
        self.members.append([node])
        self.head.append(node if head else None)
        self.kind.append(kind)
        return gid

    def _kind(self, node: Node) -> tuple:
        return self.sc.dtype(node.entries()[0]), self.late[node]

    def _compatible(self, node: Node, r: int, kind: tuple) -> bool:
        """Size, phase, dtype (``kind`` is ``node``'s), and a lone GEMM head read only by
        ``node``."""
        if len(self.members[r]) >= MAX_MEMBERS or self.kind[r] != kind:
            return False
        head = self.head[r]
        return head is None or len(self.members[r]) > 1 or \
            (self.users[head] == [node] and Entry(head) not in self.outputs)

    def _outside_reaches(self, node: Node, in_roots: list, roots: tuple[int, ...],
                         gids: frozenset) -> bool:
        outside = [e.node for e, r in zip(node.inputs, in_roots) if r not in roots]
        return bool(outside) and self._reaches(outside, gids)

    def _can_merge(self, r: int, h: int, node: Node, kind: tuple, in_roots: list) -> bool:
        if not self._compatible(node, h, kind) or (self.head[r] and self.head[h]):
            return False
        if len(self.members[r]) + len(self.members[h]) > MAX_MEMBERS:
            return False
        if self._reaches(self.ext[r], self._bits(h)) or self._reaches(self.ext[h], self._bits(r)):
            return False
        return not self._outside_reaches(node, in_roots, (r, h), self._bits(r) | self._bits(h))

    def _input_roots(self, node: Node) -> list[Optional[int]]:
        """The group root of each input's producer (None outside groups); ``root`` inlined:
        this runs once per node of the graph."""
        group, parent = self.group, self.parent
        out: list[Optional[int]] = []
        for e in node.inputs:
            gid = group.get(e.node)
            if gid is not None:
                while parent[gid] != gid:
                    parent[gid] = parent[parent[gid]]
                    gid = parent[gid]
            out.append(gid)
        return out

    def _join(self, node: Node) -> int:
        if len(node.inputs) == 1:  # most nodes: what the general case does, without its loops
            return self._join_one(node)
        in_roots = self._input_roots(node)
        roots: list[int] = []  # distinct, in input order (plain loops: once per node)
        for x in in_roots:
            if x is not None and x not in roots:
                roots.append(x)
        kind = self._kind(node)
        r = None
        for x in roots:
            if self._compatible(node, x, kind) \
                    and not self._outside_reaches(node, in_roots, (x,), self._bits(x)):
                r = x
                break
        if r is None:
            r = self._new(node, False, kind)
        else:
            self.members[r].append(node)
            for h in roots:
                if h != r and self._can_merge(r, h, node, kind, in_roots):
                    self.parent[h] = r
                    self.merged[r] = self._bits(r) | self._bits(h)
                    self.ext[r] = self.ext[r] + self.ext[h]
                    self.members[r] += self.members[h]
                    self.head[r] = self.head[r] or self.head[h]
                    in_roots = [r if x == h else x for x in in_roots]
        ext = self.ext[r]
        for e, x in zip(node.inputs, in_roots):
            if x != r:
                ext.append(e.node)
        return r

    def _join_one(self, node: Node) -> int:
        """``_join`` of a node with one input: it joins its input's group when compatible (no
        other input can reach that group), else starts one that reads the input from outside."""
        src = node.inputs[0].node
        kind = self._kind(node)
        x = self.group.get(src)
        if x is not None:
            x = self.root(x)
            if self._compatible(node, x, kind):
                self.members[x].append(node)
                return x
        r = self._new(node, False, kind)
        self.ext[r].append(src)
        return r

    def add(self, node: Node) -> None:
        top, late = -1, node.op == VARIABLE and node.extra.get("__phase__") == "backward"
        top_of, late_of = self.top, self.late
        for e in node.inputs:
            t = top_of[e.node]
            if t > top:
                top = t
            late = late or late_of[e.node]
        late_of[node] = late
        gid = None
        role = self._role(node)
        if role == FUSE:
            gid = self._join(node)
        elif role == HEAD:
            gid = self._new(node, True, self._kind(node))
            self.ext[gid] = [e.node for e in node.inputs]
        if gid is not None:
            self.group[node] = self.born[node] = gid
            if gid > top:
                top = gid
        top_of[node] = top

    def _is_group_output(self, e: Entry, r: int, besides: Node) -> bool:
        return e in self.outputs or any(self.root_of(u) != r and u is not besides
                                        for u in self.users[e.node])

    def defer_to_consumers(self) -> None:
        """Move a member whose only reader sits in another group into that group, when it only
        reads values its own group outputs anyway (relu's mask ``y > 0``: computed where the
        backward multiply needs it instead of being saved from the forward kernel)."""
        for node in reversed(list(self.group)):
            users = self.users[node]  # (the cheap tests first: most nodes stop here)
            if len(users) != 1 or Entry(node) in self.outputs:
                continue
            r = self.root_of(node)
            if self.head[r] is node:
                continue
            h = self.root_of(users[0])
            # A head's inputs come from outside its group (fused.py's format), so never defer
            # a node into the group whose head reads it.
            if h is None or h == r or self.head[h] is users[0] \
                    or not self._compatible(node, h, self._kind(node)):
                continue
            if all((self.root_of(e.node) != r or self._is_group_output(e, r, node))
                   and not self._reaches([e.node], self._bits(h)) for e in node.inputs):
                self.members[r].remove(node)
                self.members[h].append(node)
                self.group[node] = h

    def groups(self) -> dict[int, list[Node]]:
        """Root id -> members in topological order."""
        return {r: ms for r, ms in enumerate(self.members) if self.parent[r] == r}


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


def _build_fused(members: list[Node], head: Optional[Node], g: _Grouping,
                 remap: dict[Entry, Entry], memo: dict) -> list[tuple[Entry, Entry]]:
    """One ``_fused`` node for a group; returns (old entry, new entry) pairs for its outputs.
    ``memo``: formulas, member ops and kernel name by group signature (graphs repeat the same
    groups many times)."""
    inside, pos = set(members), {m: i for i, m in enumerate(members)}
    node_inputs: list[Entry] = [remap[e] for e in head.inputs] if head else []
    readers = [pos[head]] * len(node_inputs) if head else []  # member reading each input
    ref_of: dict[Entry, int] = {head.entries()[0]: 0} if head else {}
    base = 1 if head else 0  # the head's output is expression input 0
    n_head = len(node_inputs)  # node inputs feeding the head come first
    body = [m for m in members if m is not head]
    sig = []
    for j, m in enumerate(body):
        refs = []
        for e in m.inputs:
            r = ref_of.get(e)
            if r is None:  # read from outside: the next expression input
                r = ref_of[e] = base + len(node_inputs) - n_head
                node_inputs.append(remap[e])
                readers.append(pos[m])
            refs.append(r)
        ref_of[m.entries()[0]] = -1 - j
        sig.append((m.op, m.attrs, tuple(refs)))
    outputs, users = g.outputs, g.users
    outs = tuple([j for j, m in enumerate(body) if m.entries()[0] in outputs
                  or any(u not in inside for u in users[m])])
    # The signature and the head's op and place decide the formulas, member ops and name.
    key = (tuple(sig), outs, (head.op, pos[head]) if head else None)
    found = memo.get(key)
    if found is None:
        ops = tuple([m.op for m in members])
        found = memo[key] = (_formulas(key[0], outs), ops, _kernel_name(list(ops)))
    exprs, ops, kname = found
    shape = g.sc.shape
    attrs = Attrs({
        "exprs": exprs,
        "shapes": tuple([shape(body[j].entries()[0]) for j in outs]),
        "members": ops,
        "nodes": tuple(m.name for m in members),  # for profiles and pictures of the schedule
        "out_members": tuple(pos[body[j]] for j in outs),  # which member is output i
        "in_members": tuple(readers),  # the member that reads input i (first reader)
        "head": (head.op, head.attrs, len(head.inputs)) if head else None,
        "num_inputs": len(node_inputs), "name": kname})
    fused = Node("_fused", f"{kname}:{body[-1].name}", attrs, tuple(node_inputs))
    return [(body[j].entries()[0], Entry(fused, i)) for i, j in enumerate(outs)]


def fuse_elementwise(graph: Graph) -> Graph:
    """Replace fusible groups by ``_fused`` nodes."""
    sc = types_of(graph)
    nodes = graph.nodes()
    index = {n: i for i, n in enumerate(nodes)}
    g, units, order = _grouped(graph, sc, nodes, index, strict=False)
    if order is None:  # a cycle through a group's other member: group-level checks instead
        g, units, order = _grouped(graph, sc, nodes, index, strict=True)
    if order is None:
        raise GraphError("fuse_elementwise: the grouping has a cycle even with group-level "
                         "checks (a bug: please report the graph)")
    remap: dict[Entry, Entry] = {}
    memo: dict[tuple, tuple] = {}
    # Rebuilt nodes and fused kernels compute the values they replace: their types are
    # copied, not recomputed (``verify`` replays the rules in the tests).
    for unit in order:
        if isinstance(unit, Node):
            new_inputs = tuple([remap[e] for e in unit.inputs])
            if new_inputs == unit.inputs:
                new = unit
            else:
                new = unit.with_inputs(new_inputs)
                sc.copy(unit, new)
            remap.update(zip(unit.entries(), new.entries()))
        else:
            gid = unit[1]
            pairs = _build_fused(g.members[gid], g.head[gid], g, remap, memo)
            for old, new_entry in pairs:
                sc.copy_entry(old, new_entry)
            remap.update(pairs)
    return Graph(tuple(remap[e] for e in graph.outputs), graph.types)


def _grouped(graph: Graph, sc: TypeTable, nodes: list[Node], index: dict, strict: bool
             ) -> tuple[_Grouping, dict[Node, object], Optional[list[object]]]:
    """The grouping, each node's unit (itself, or ``("group", root)``) and the units in
    dependency order (None when the groups depend on each other in a cycle)."""
    g = _Grouping(graph, sc, strict)
    for node in nodes:
        g.add(node)
    g.defer_to_consumers()
    units: dict[Node, object] = {}
    for r, members in g.groups().items():
        members.sort(key=index.__getitem__)
        for m in members:
            units[m] = ("group", r) if len(members) > 1 else m
    for node in nodes:
        units.setdefault(node, node)
    return g, units, _unit_order(nodes, units)


def _unit_order(nodes: list[Node], units: dict[Node, object]) -> Optional[list[object]]:
    """Units (single nodes or groups) in an order where every unit follows its inputs; None
    if there is none (a cycle)."""
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
    return order if len(order) == len(deps) else None
