"""The grouping of ``fuse_elementwise``: which nodes become one fused kernel, and an order in
which the kernels and the remaining nodes can be built.

Not a pass of its own: ``fuse_elementwise`` (its module docstring states the contract) makes a
:class:`Grouping` over the graph's nodes in topological order, adds them one by one, defers
some members to their reader's group and asks :func:`unit_order` for a build order.

Everything is kept per node position in that order (lists of ints, inputs as positions), not
in dicts keyed by nodes: a training graph of 10^5 forward nodes has 4 * 10^5 nodes, and the
grouping reads and writes a few facts per node and edge (one dict insertion per fact and node
was a fifth of the pass).
"""
from __future__ import annotations

from typing import Optional

from ...core.graph import VARIABLE, Graph, Node
from ...core.registry import BROADCAST, ELEMWISE, GEMM, get_op
from ...core.types.table import TypeTable

MAX_MEMBERS = 48  # keeps generated kernels (and Expr hashing) small

FUSE, HEAD = 1, 2  # what a node can be in a group: a member, or a GEMM-like head
NONE = -1  # no group, no head


def op_role(op: str) -> int:
    """``FUSE`` for an elementwise/broadcast op with a formula, ``HEAD`` for a GEMM-like one
    (pattern ``gemm`` or ``OpDef.epilogue``), 0 otherwise."""
    opdef = get_op(op)
    if opdef.pattern in (ELEMWISE, BROADCAST) and opdef.expr is not None:
        return FUSE
    return HEAD if opdef.pattern == GEMM or opdef.epilogue else 0


class Grouping:
    """Greedy grouping state (union-find over group ids); nodes are named by their position
    ``i`` in ``nodes`` (topological order), their inputs by ``ins[i]``.

    "Does this node depend on group g" is answered by searching upward from the node
    (:meth:`reaches`): ``born[i]`` is the group a node was put in when it was added, ``top[i]``
    the newest such group among the node and its ancestors, so the search stops at every node
    whose ancestry holds no group as recent as the ones asked about (on a long graph: at once).
    ``ext[root]`` lists the nodes a group reads from outside it. (A bitmask of all the groups
    upstream of each node answered with one AND, but on a deep chain each mask held a bit per
    earlier group: time and memory grew with the square of the graph.) Checks are
    conservative: a merge they refuse is safe. Every member of a group shares one dtype and one
    phase (joins and merges check them), kept per group in ``kind``.
    """

    def __init__(self, graph: Graph, sc: TypeTable, nodes: list[Node],
                 strict: bool = False) -> None:
        self.sc, self.nodes, self.strict = sc, nodes, strict  # strict: see _reaches_strict
        self.index = index = graph.positions()  # (``nodes`` is ``graph.nodes()``)
        ins: list[list[int]] = []
        users: list[list[int]] = [[] for _ in nodes]
        for i, n in enumerate(nodes):  # (one loop for both: once per node)
            js = [index[e.node] for e in n.inputs] if n.inputs else []
            ins.append(js)
            for j in js:  # a node's own appends are consecutive: the last one tells a repeat
                u = users[j]
                if not u or u[-1] != i:
                    u.append(i)
        self.ins = ins
        self.users = users  # readers of each node, in order, each once
        self.out0 = {index[e.node] for e in graph.outputs if e.index == 0}  # graph outputs
        n = len(nodes)
        self.group, self.born, self.top = [NONE] * n, [NONE] * n, [NONE] * n
        self.late = [False] * n  # depends on an input bound in the backward phase
        self.parent: list[int] = []
        self.bits: list[frozenset] = []  # per root: its id and those of the groups merged in
        self.ext: list[list[int]] = []  # per root: the nodes its members read from outside
        self.members: list[list[int]] = []
        self.head: list[int] = []
        self.kind: list[tuple] = []  # (dtype, late) of each group's members
        self.roles: dict[str, int] = {}  # op -> op_role (asked once per op, not per node)

    def kind_of(self, i: int) -> tuple:
        return self.sc.dtype(self.nodes[i].entries()[0]), self.late[i]

    def reaches(self, starts: list[int], gids: frozenset) -> bool:
        """Whether a node of ``starts`` or an ancestor was put in a group of ``gids`` when it
        was added. Group ids grow in topological order, so a node whose ``top`` is older than
        every id asked about has none of them upstream: the search goes no further there."""
        if self.strict:
            return self._reaches_strict(starts, gids)
        floor, top, born, ins = min(gids), self.top, self.born, self.ins
        stack = [j for j in starts if top[j] >= floor]
        if not stack:  # (the usual answer on a long graph: nothing that recent upstream)
            return False
        seen = set(stack)
        while stack:
            j = stack.pop()
            if born[j] in gids:
                return True
            for m in ins[j]:
                if top[m] >= floor and m not in seen:
                    seen.add(m)
                    stack.append(m)
        return False

    def _reaches_strict(self, starts: list[int], gids: frozenset) -> bool:
        """:meth:`reaches` through groups: a fused kernel reads the inputs of all its members,
        so a node in a group stands for every member's inputs (the node-level search misses a
        cycle through a group whose other member depends on ``gids``). No pruning: this runs
        only when the node-level grouping made a cycle (``fuse_elementwise``)."""
        targets = {self.root(g) for g in gids}
        stack, seen, expanded = list(starts), set(starts), set()
        while stack:
            j = stack.pop()
            r = self.root_of(j)
            if self.born[j] in gids or r in targets:
                return True
            nxt = list(self.ins[j])
            if r != NONE and r not in expanded:
                expanded.add(r)
                nxt += [m for k in self.members[r] for m in self.ins[k]]
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

    def root_of(self, i: int) -> int:
        gid = self.group[i]
        return NONE if gid == NONE else self.root(gid)

    def _new(self, i: int, head: bool, kind: tuple) -> int:
        gid = len(self.parent)
        self.parent.append(gid)
        self.bits.append(frozenset((gid,)))
        self.ext.append([])
        self.members.append([i])
        self.head.append(i if head else NONE)
        self.kind.append(kind)
        return gid

    def _compatible(self, i: int, r: int, kind: tuple) -> bool:
        """Size, phase, dtype (``kind`` is node ``i``'s), and a lone GEMM head read only by
        node ``i``."""
        size = len(self.members[r])
        if size >= MAX_MEMBERS or self.kind[r] != kind:
            return False
        head = self.head[r]
        return head == NONE or size > 1 or \
            (self.users[head] == [i] and head not in self.out0)

    def _outside_reaches(self, i: int, in_roots: list[int], roots: tuple[int, ...],
                         gids: frozenset) -> bool:
        outside = [j for j, r in zip(self.ins[i], in_roots) if r not in roots]
        return bool(outside) and self.reaches(outside, gids)

    def _can_merge(self, r: int, h: int, i: int, kind: tuple, in_roots: list[int]) -> bool:
        if not self._compatible(i, h, kind) or (self.head[r] != NONE and self.head[h] != NONE):
            return False
        if len(self.members[r]) + len(self.members[h]) > MAX_MEMBERS:
            return False
        if self.reaches(self.ext[r], self.bits[h]) or self.reaches(self.ext[h], self.bits[r]):
            return False
        return not self._outside_reaches(i, in_roots, (r, h), self.bits[r] | self.bits[h])

    def _input_roots(self, i: int) -> list[int]:
        """The group root of each input's producer (NONE outside groups); ``root`` inlined:
        this runs once per node of the graph."""
        group, parent = self.group, self.parent
        out: list[int] = []
        for j in self.ins[i]:
            gid = group[j]
            if gid != NONE:
                while parent[gid] != gid:
                    parent[gid] = parent[parent[gid]]
                    gid = parent[gid]
            out.append(gid)
        return out

    def _join(self, i: int, kind: tuple) -> int:
        """Node ``i`` (``kind`` is its (dtype, late)) joins a group its inputs are in, merging
        others into it where allowed, or starts one. (A node with one input: _join_one.)"""
        in_roots = self._input_roots(i)
        roots: list[int] = []  # distinct, in input order (plain loops: once per node)
        for x in in_roots:
            if x != NONE and x not in roots:
                roots.append(x)
        r = NONE
        for x in roots:
            if self._compatible(i, x, kind) \
                    and not self._outside_reaches(i, in_roots, (x,), self.bits[x]):
                r = x
                break
        if r == NONE:
            r = self._new(i, False, kind)
        else:
            self.members[r].append(i)
            for h in roots:
                if h != r and self._can_merge(r, h, i, kind, in_roots):
                    self._merge(r, h)
                    in_roots = [r if x == h else x for x in in_roots]
        ext = self.ext[r]
        for j, x in zip(self.ins[i], in_roots):
            if x != r:
                ext.append(j)
        return r

    def _merge(self, r: int, h: int) -> None:
        """Group ``h`` becomes part of group ``r``."""
        self.parent[h] = r
        self.bits[r] = self.bits[r] | self.bits[h]
        self.ext[r] = self.ext[r] + self.ext[h]
        self.members[r] += self.members[h]
        if self.head[r] == NONE:
            self.head[r] = self.head[h]

    def _join_one(self, i: int, src: int, kind: tuple) -> int:
        """``_join`` of a node whose one input is node ``src``: it joins that input's group
        when compatible (no other input can reach the group), else starts one that reads the
        input from outside (the general case, without its loops)."""
        x = self.group[src]
        if x != NONE:
            x = self.root(x)
            if self._compatible(i, x, kind):
                self.members[x].append(i)
                return x
        r = self._new(i, False, kind)
        self.ext[r].append(src)
        return r

    def add(self, i: int) -> None:
        """Put node ``i`` (after its inputs) in a group, or leave it alone. (Runs once per
        node: role, kind and the one-input join are inlined.)"""
        node = self.nodes[i]
        ins = self.ins[i]
        top, late = NONE, node.op == VARIABLE and node.extra.get("__phase__") == "backward"
        top_of, late_of = self.top, self.late
        for j in ins:
            t = top_of[j]
            if t > top:
                top = t
            late = late or late_of[j]
        late_of[i] = late
        role = self.roles.get(node.op)
        if role is None:
            role = self.roles[node.op] = 0 if node.op == VARIABLE else op_role(node.op)
        gid = NONE
        if role:
            entries = node.entries()
            if len(entries) == 1:
                kind = (self.sc.dtype(entries[0]), late)
                if role == HEAD:
                    gid = self._new(i, True, kind)
                    self.ext[gid] = list(ins)
                elif len(ins) == 1:
                    gid = self._join_one(i, ins[0], kind)
                else:
                    gid = self._join(i, kind)
        if gid != NONE:
            self.group[i] = self.born[i] = gid
            if gid > top:
                top = gid
        top_of[i] = top

    def _is_group_output(self, j: int, r: int, besides: int) -> bool:
        return j in self.out0 or any(self.root_of(u) != r and u != besides
                                     for u in self.users[j])

    def defer_to_consumers(self) -> None:
        """Move a member whose only reader sits in another group into that group, when it only
        reads values its own group outputs anyway (relu's mask ``y > 0``: computed where the
        backward multiply needs it instead of being saved from the forward kernel)."""
        group, born, users, head = self.group, self.born, self.users, self.head
        for i in range(len(self.nodes) - 1, -1, -1):
            if born[i] == NONE:  # (the cheap tests first: most nodes stop here)
                continue
            us = users[i]
            if len(us) != 1 or i in self.out0 or group[us[0]] == group[i]:
                continue  # (the last: its reader is in its group, the usual case: same root)
            r = self.root_of(i)
            if head[r] == i:
                continue
            u = us[0]
            h = self.root_of(u)
            # A head's inputs come from outside its group (fused.py's format), so never defer
            # a node into the group whose head reads it.
            if h == NONE or h == r or head[h] == u or not self._compatible(i, h,
                                                                          self.kind_of(i)):
                continue
            if all((self.root_of(j) != r or self._is_group_output(j, r, i))
                   and not self.reaches([j], self.bits[h]) for j in self.ins[i]):
                self.members[r].remove(i)
                self.members[h].append(i)
                group[i] = h

    def groups(self) -> dict[int, list[int]]:
        """Root id -> members (node positions)."""
        return {r: ms for r, ms in enumerate(self.members) if self.parent[r] == r}


def unit_order(grouping: Grouping) -> Optional[tuple[list[int], list[int]]]:
    """``(unit, order)``: each node's unit (its own position, or ``len(nodes) + root`` for a
    group of several members, whose member lists are sorted) and the units in an order where
    every unit follows the units it reads; None if there is none (the groups read each other
    in a cycle). A depth-first walk over units: each unit and edge is looked at once."""
    n, ins, members = len(grouping.nodes), grouping.ins, grouping.members
    unit = list(range(n))
    for r, ms in grouping.groups().items():
        if len(ms) > 1:
            ms.sort()
            for m in ms:
                unit[m] = n + r

    def reads(u: int) -> list[int]:
        if u < n:
            return [unit[j] for j in ins[u]]
        return [unit[j] for m in members[u - n] for j in ins[m] if unit[j] != u]

    state = [0] * (n + len(members))  # 0 not seen, 1 open (on the stack), 2 placed
    order: list[int] = []
    for start in unit:
        if state[start]:
            continue
        state[start] = 1
        stack = [(start, iter(reads(start)))]
        while stack:
            u, it = stack[-1]
            for v in it:
                s = state[v]
                if s == 0:
                    state[v] = 1
                    stack.append((v, iter(reads(v))))
                    break
                if s == 1:
                    return None
            else:
                stack.pop()
                state[u] = 2
                order.append(u)
    return unit, order
