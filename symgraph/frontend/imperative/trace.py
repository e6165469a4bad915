"""What ``backward`` and forcing differentiate or compute: the recorded nodes a set of roots
needs, as a :class:`Trace` (nodes in topological order, leaf values, structural signature).

:func:`walk` finds them from the roots; a :class:`Tape` follows them while ``record()``
records, so that ``backward`` can skip the walk (docs/imperative.md, "The tape").
Requires: nodes made by :mod:`symgraph.imperative`. Guarantees: a trace's key is the same for
the same structure, shapes and dtypes, whatever the node names and values.
"""
from __future__ import annotations

import weakref
from typing import Any, Optional, Sequence

from ...core.graph import Entry, Node
from ...runtime.ndarray import NDArray
from .engine import (ATTR_SERIAL, PENDING, PLAIN, REC, REC_TRN, THREAD, TRN, VALUE, is_recorded,
                     is_training)


class Trace:
    """A walked subgraph: op nodes in topological order, leaf values, and its signature."""

    __slots__ = ("nodes", "local", "leaves", "leaf_entries", "leaf_of", "sig", "train")

    def __init__(self) -> None:
        self.nodes: list[Node] = []
        self.local: dict[Node, int] = {}
        self.leaves: list[NDArray] = []
        self.leaf_entries: list[Entry] = []
        self.leaf_of: dict[Entry, int] = {}
        self.sig: list[tuple] = []
        self.train = False

    def ref(self, e: Entry) -> Any:
        k = self.leaf_of.get(e)
        return -1 - k if k is not None else (self.local[e.node], e.index)

    def key(self) -> tuple:
        return (tuple(self.sig), tuple([(a._buf.shape, a._buf.dtype) for a in self.leaves]))

    def refs(self, entries: Sequence[Entry]) -> tuple:
        """:meth:`ref` of each of ``entries``."""
        leaf_of, local = self.leaf_of, self.local
        return tuple([-1 - leaf_of[e] if e in leaf_of else (local[e.node], e.index)
                      for e in entries])


MAX_TAPE = 10000  # nodes a tape follows; past this it stops (backward() then walks)


class Tape(Trace):
    """The nodes recorded since recording last started, walked while they are recorded.

    ``record`` adds each recorded node with its inputs' references (a node of the tape, or a
    leaf: the inputs ``backward``'s walk would not go into, found as it would find them), so
    a ``backward`` whose heads need exactly the tape's nodes takes the tape as its trace
    instead of walking. The order is the recording order (a topological order) and the key
    holds each node's call (op and parsed attributes), mode, wiring and input shapes and
    dtypes. An input the walk would go into but the tape does not hold (a node recorded
    before recording restarted, a pending value read under ``record()``) makes the tape
    ``ok = False``: that backward walks."""

    __slots__ = ("ok", "alive", "settled", "pkeys")

    def __init__(self) -> None:
        super().__init__()
        self.ok = True
        # Per node, the weak references to its pending output arrays: what PENDING holds for
        # other nodes. ``backward``'s tape path reads them here; the nodes are registered in
        # PENDING only when anything else needs them there (:meth:`settle`).
        self.alive: list[list] = []
        self.settled = 0  # nodes [0, settled) are registered in PENDING, under ``pkeys``
        self.pkeys: list[Any] = []

    def add(self, node: Node, alive: list, sig: tuple) -> bool:
        """Follow ``node`` (``alive``: weak references to its pending outputs; ``sig``: its
        call, mode, input references and input shapes and dtypes); False when the tape is
        full (it then stops following: :meth:`drop`)."""
        nodes = self.nodes
        k = len(nodes)
        if k >= MAX_TAPE:
            self.drop()
            return False
        self.local[node] = k
        nodes.append(node)
        self.alive.append(alive)  # (PENDING[node], until the tape settles)
        self.sig.append(sig)
        if sig[2]:
            self.train = True
        return True

    def settle(self) -> None:
        """Register the nodes not registered yet in PENDING (their live pending outputs must
        be found by whatever forces, flushes or writes: the tape does not hold them then)."""
        data, gone, ref = PENDING.data, PENDING._remove, weakref.ref
        nodes, alive, keys = self.nodes, self.alive, self.pkeys
        for k in range(self.settled, len(nodes)):
            key = ref(nodes[k], gone)
            keys.append(key)
            data[key] = alive[k]  # PENDING[node] = alive
        self.settled = len(nodes)

    def pending_of(self, k: int) -> Optional[list]:
        """The weak references to node ``k``'s pending outputs (None: none left)."""
        return self.alive[k] if k >= self.settled else PENDING.data.get(self.pkeys[k])

    def leaf(self, e: Entry) -> int:
        """The reference of input ``e`` that is not a node of the tape: a leaf, unless the
        walk would go into it (then the tape stops; leaf values: see :meth:`resolve`)."""
        k = self.leaf_of.get(e)
        if k is None:
            n = e.node
            k = len(self.leaf_entries)
            if n.op != "null" and is_recorded(n) or k >= MAX_TAPE:
                self.drop()
                return 0
            self.leaf_of[e] = k
            self.leaf_entries.append(e)
        return -1 - k

    def resolve(self) -> bool:
        """Find the leaves' values as the walk would; False where it would not stop at one
        (a value not computed: the walk goes on into its node)."""
        value_of, ref = VALUE.data.get, weakref.ref
        leaves = []
        for e in self.leaf_entries:
            vals = value_of(ref(e.node))
            v = None
            if vals is not None:
                v = vals[0] if e.node.op == "null" else (
                    vals[e.index] if e.index < len(vals) else None)
            if v is None:
                return False
            leaves.append(v)
        self.leaves = leaves
        return True

    def drop(self) -> None:
        """Stop following (and let go of the nodes; their pending outputs go to PENDING)."""
        self.settle()
        self.ok = False
        self.nodes, self.local, self.leaves, self.leaf_entries, self.leaf_of, self.sig = \
            [], {}, [], [], {}, []
        self.alive, self.settled, self.pkeys = [], 0, []

    def key(self) -> tuple:
        # (the shapes of every node's inputs are in sig, the leaves' among them)
        return ("tape", tuple(self.sig))

    def needs_all(self, heads: Sequence[Entry]) -> bool:
        """Whether ``heads`` need every node of the tape (so that walking from them would
        find the tape's nodes, no more, no fewer)."""
        need = [False] * len(self.nodes)
        local = self.local
        for e in heads:
            need[local[e.node]] = True
        sig = self.sig
        for k in range(len(need) - 1, -1, -1):
            if not need[k]:
                return False
            for r in sig[k][3]:
                if r.__class__ is tuple:
                    need[r[0]] = True
        return True


def settle() -> None:
    """Register the current tape's nodes in PENDING (see :meth:`Tape.settle`): before anything
    reads PENDING or lets the tape go."""
    tape = THREAD.state.tape
    if tape is not None and tape.settled < len(tape.nodes):
        tape.settle()


def unsettled() -> bool:
    """Whether the current tape holds pending nodes PENDING does not know yet."""
    tape = THREAD.state.tape
    return tape is not None and tape.settled < len(tape.nodes)


def walk(roots: Sequence[Entry], for_backward: bool) -> Trace:
    """Depth-first post-order over the nodes ``roots`` need (iterative: chains can be long).

    An input is a leaf when its value is known: a variable, or a computed output (backward
    recomputes recorded nodes instead, since their gradient needs the graph). This runs on
    every step, so the weak tables are read through their dicts (one C call per lookup) and
    the mode tests are inlined."""
    tr = Trace()
    local, leaf_of, leaves, sig = tr.local, tr.leaf_of, tr.leaves, tr.sig
    nodes, leaf_entries = tr.nodes, tr.leaf_entries
    value_of, serial_of, ref = VALUE.data.get, ATTR_SERIAL.get, weakref.ref
    train_any = False
    for root in roots:
        if root.node in local:
            continue
        stack = [[root.node, 0]]
        while stack:
            top = stack[-1]
            node, i = top
            inputs = node.inputs
            if i < len(inputs):
                top[1] = i + 1
                e = inputs[i]
                n = e.node
                if n in local or e in leaf_of:
                    continue
                vals = value_of(ref(n))
                v = None
                if vals is not None:
                    if n.op == "null":
                        v = vals[0]
                    elif e.index < len(vals) and not (for_backward and is_recorded(n)):
                        v = vals[e.index]
                if v is None:
                    stack.append([n, 0])
                else:
                    leaf_of[e] = len(leaves)
                    leaves.append(v)
                    leaf_entries.append(e)
                continue
            stack.pop()
            x = node.extra
            train = x is TRN or x is REC_TRN or (x is not PLAIN and x is not REC
                                                    and is_training(node))
            train_any |= train
            local[node] = len(nodes)
            nodes.append(node)
            attrs = node.attrs
            got = serial_of(id(attrs))
            sig.append((node.op, got[1] if got is not None and got[0] is attrs else attrs,
                        train, tuple([-1 - leaf_of[e] if e in leaf_of else
                                      (local[e.node], e.index) for e in inputs])))
    tr.train = train_any
    return tr
