"""The graph IR: immutable nodes, entries and graphs, plus one rewrite helper.

A :class:`Node` is an op application (or a variable, op ``"null"``); an :class:`Entry` names one
output of a node; a :class:`Graph` is a tuple of output entries. Nodes never change after
construction: passes build new nodes through :func:`rewrite`, which walks in topological order and
lets a callback return a replacement. Node identity is object identity, so dicts keyed by nodes or
entries are the natural caches.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable, NamedTuple, Optional, Sequence, Union

from .attrs import Attrs
from .base import GraphError
from .registry import get_op

VARIABLE = "null"


_NO_ATTRS = Attrs()


@dataclass(frozen=True, eq=False, init=False, slots=True, weakref_slot=True)
class Node:
    """One operation: ``op`` (registry name or ``"null"``), unique ``name``, parsed ``attrs``,
    input entries and ``extra`` user attributes (MXNet's ``attr`` dict: ``__shape__``,
    ``__lr_mult__``, ...)."""

    op: str
    name: str
    attrs: Attrs = field(default_factory=Attrs)
    inputs: tuple["Entry", ...] = ()
    extra: Attrs = field(default_factory=Attrs)
    _entries: Optional[tuple["Entry", ...]] = field(default=None, init=False, repr=False)

    def __init__(self, op: str, name: str, attrs: Optional[Attrs] = None,
                 inputs: tuple["Entry", ...] = (), extra: Optional[Attrs] = None,
                 n_outputs: int = 0) -> None:
        # Written through the slots directly: passes and autodiff make a node per graph node,
        # and the frozen dataclass __init__ (one object.__setattr__ per field) was a visible
        # share of bind time. Slots, not a __dict__: a training graph holds 10^5..10^6 nodes,
        # and every pass reads all of them. Attrs are immutable: the empty default is shared.
        # ``n_outputs``: the number of outputs when the maker knows it (the entries are made
        # now instead of asking the op on first use).
        _SET_OP(self, op)
        _SET_NAME(self, name)
        _SET_INPUTS(self, inputs)
        _SET_ATTRS(self, _NO_ATTRS if attrs is None else attrs)
        _SET_EXTRA(self, _NO_ATTRS if extra is None else extra)
        if n_outputs == 1:  # (most nodes: _make_entries inlined)
            _SET_ENTRIES(self, (_new_tuple(Entry, (self, 0)),))
        else:
            _SET_ENTRIES(self, self._make_entries(n_outputs) if n_outputs else None)

    @staticmethod
    def make(op: str, name: str, attrs: Attrs, inputs: tuple["Entry", ...],
             extra: Attrs) -> "Node":
        """A node from all its parts, without ``__init__``'s defaults (the imperative engine
        makes one per op call). Example: ``Node.make("relu", "relu0", Attrs(), (x,), Attrs())``."""
        node = _new_object(Node)
        _SET_OP(node, op)
        _SET_NAME(node, name)
        _SET_INPUTS(node, inputs)
        _SET_ATTRS(node, attrs)
        _SET_EXTRA(node, extra)
        _SET_ENTRIES(node, None)
        return node

    @property
    def is_variable(self) -> bool:
        return self.op == VARIABLE

    @property
    def num_outputs(self) -> int:
        """Number of outputs, hidden ones included."""
        return len(self.entries())

    def entries(self) -> tuple["Entry", ...]:
        """One entry per output (made once: the node never changes, and passes ask often)."""
        cached = self._entries
        if cached is None:  # (a None slot, not a missing attribute: raising costs more)
            n = 1 if self.op == VARIABLE else get_op(self.op).num_outputs(self.attrs)
            cached = self._make_entries(n)
            _SET_ENTRIES(self, cached)
        return cached

    def set_entries(self, n: int) -> tuple["Entry", ...]:
        """Make the node's entries knowing it has ``n`` outputs (the maker of a node that
        knows spares asking the op); returns them."""
        made = self._make_entries(n)
        _SET_ENTRIES(self, made)
        return made

    def _make_entries(self, n: int) -> tuple["Entry", ...]:
        # (tuple.__new__: the NamedTuple constructor is a Python-level function, and every
        # node of every pass makes its entries here)
        if n == 1:
            return (_new_tuple(Entry, (self, 0)),)
        return tuple([_new_tuple(Entry, (self, i)) for i in range(n)])

    def with_inputs(self, inputs: Sequence["Entry"]) -> "Node":
        """A copy of this node reading ``inputs`` (as many outputs: same op, same attrs)."""
        new = Node(self.op, self.name, self.attrs, tuple(inputs), self.extra)
        mine = self._entries
        if mine is not None:  # passes rebuild many nodes: skip asking the op again
            new.set_entries(len(mine))
        return new

    def __repr__(self) -> str:
        return f"Node({self.name}:{self.op})"


_SET_OP, _SET_NAME, _SET_INPUTS, _SET_ATTRS, _SET_EXTRA, _SET_ENTRIES = (
    Node.__dict__[f].__set__ for f in ("op", "name", "inputs", "attrs", "extra", "_entries"))


class Entry(NamedTuple):
    """Output ``index`` of ``node``."""

    node: Node
    index: int = 0

    def __repr__(self) -> str:
        return f"{self.node.name}[{self.index}]" if self.index else self.node.name


_new_tuple, _new_object = tuple.__new__, object.__new__


def variable(name: str, extra: Optional[dict] = None) -> Node:
    """A graph input (argument or auxiliary state)."""
    return Node(VARIABLE, name, Attrs(), (), Attrs(extra or {}))


def topo_order(outputs: Iterable[Entry]) -> list[Node]:
    """Nodes reachable from ``outputs`` in depth-first post-order (inputs in order first).

    This is MXNet's order: ``list_arguments`` lists variables in it. Iterative (graphs are
    deep) and linear: the stack holds each open node with an iterator over its inputs; a node
    without inputs is placed at once instead of being pushed (the same order, fewer steps).
    """
    return walk(outputs)[0]


def walk(outputs: Iterable[Entry]) -> tuple[list[Node], dict[Node, int]]:
    """:func:`topo_order`, and each node's position in it (the walk needs a table of the
    nodes it has seen anyway: passes that number the nodes take it instead of making one)."""
    order: list[Node] = []
    placed: dict[Node, object] = {}  # False while on the stack (a cycle reaches it), then
    for out in outputs:              # the node's position in the order
        root = out.node
        if root in placed:
            continue
        placed[root] = False
        stack = [(root, iter(root.inputs))]
        while stack:
            node, ins = stack[-1]
            for e in ins:
                child = e.node
                state = placed.get(child)
                if state is None:
                    if child.inputs:
                        placed[child] = False
                        stack.append((child, iter(child.inputs)))
                        break
                    placed[child] = len(order)
                    order.append(child)
                elif state is False:
                    raise GraphError(f"cycle through node {child.name}")
            else:
                stack.pop()
                placed[node] = len(order)
                order.append(node)
    return order, placed  # type: ignore[return-value]  (every value is a position now)


@dataclass(frozen=True, eq=False)
class Graph:
    """A computation: the output entries; everything else is reachable from them.

    ``types``: after inference, the :class:`~symgraph.core.types.table.TypeTable` of the graph's
    entries (shapes and dtypes), carried along by :func:`rewrite` and every pass."""

    outputs: tuple[Entry, ...]
    types: Optional["TypeTable"] = field(default=None, compare=False)  # noqa: F821

    def nodes(self) -> list[Node]:
        """Every node in topological order (computed once per graph; a copy each call)."""
        return list(self._walked()[0])

    def positions(self) -> dict[Node, int]:
        """Each node's position in :meth:`nodes` (computed with it; shared: do not modify)."""
        return self._walked()[1]

    def _walked(self) -> tuple[list[Node], dict[Node, int]]:
        cached = self.__dict__.get("_walk")
        if cached is None:
            cached = walk(self.outputs)
            object.__setattr__(self, "_walk", cached)
        return cached

    def op_names(self) -> frozenset[str]:
        """The ops the graph's nodes apply (``"null"`` for variables), found once per graph:
        passes ask it before walking, and return a graph without their ops untouched.

        Example: ``(sg.sym.relu(sg.sym.var("x")).graph().op_names() == {"null", "relu"})``."""
        cached = self.__dict__.get("_ops")
        if cached is None:
            cached = frozenset([n.op for n in self._walked()[0]])
            object.__setattr__(self, "_ops", cached)
        return cached

    def with_types(self, types: Optional["TypeTable"]) -> "Graph":  # noqa: F821
        """The same graph carrying ``types`` (its node list is shared, not walked again)."""
        out = Graph(self.outputs, types)
        for key in ("_walk", "_ops"):
            cached = self.__dict__.get(key)
            if cached is not None:
                object.__setattr__(out, key, cached)
        return out

    def variables(self) -> list[Node]:
        return [n for n in self.nodes() if n.op == VARIABLE]

    def consumers(self) -> dict[Node, list[Node]]:
        """For each node, the nodes reading one of its outputs (graph outputs not included)."""
        users: dict[Node, list[Node]] = {n: [] for n in self.nodes()}
        for n in users:
            for e in n.inputs:
                if n not in users[e.node]:
                    users[e.node].append(n)
        return users


Replacement = Union[None, Node, Sequence[Entry]]


def rewrite(graph: Graph, fn: Callable[[Node], Replacement]) -> Graph:
    """Rebuild ``graph`` bottom-up.

    Each node is first rebuilt on its (possibly replaced) inputs, then passed to ``fn``, which
    returns ``None`` (keep), a replacement node with the same outputs, or one entry per output.

    Passes keep every entry's type (their contract), so a node rebuilt only because its
    inputs were replaced has its old outputs' types: they are copied into ``graph.types``
    rather than recomputed (``verify`` replays the rules and catches a pass that broke this).
    """
    remap: dict[Entry, Entry] = {}
    table = graph.types
    for node in graph.nodes():
        current = node
        if remap:
            ins = node.inputs
            for e in ins:  # rebuilt only when an input was replaced (most nodes: none was)
                if e in remap:
                    new_inputs = tuple([remap.get(e, e) for e in ins])
                    if new_inputs != ins:
                        current = node.with_inputs(new_inputs)
                        if table is not None:
                            table.copy(node, current)
                    break
        result = fn(current)
        if result is None:
            result = current
        if result is node:
            continue
        entries = result.entries() if isinstance(result, Node) else tuple(result)
        for i, old in enumerate(node.entries()):
            remap[old] = entries[i]
    if not remap:  # nothing replaced: the same graph (and its node list, already walked)
        return graph
    return Graph(tuple([remap.get(e, e) for e in graph.outputs]), graph.types)


def check_unique_inputs(graph: Graph) -> None:
    """Two different variables may not share a name (bind could not tell them apart)."""
    seen: dict[str, object] = {}
    for node in graph.variables():
        if seen.setdefault(node.name, node) is not node:
            raise GraphError(f"duplicate argument name {node.name!r}: two different variables "
                             f"carry it")


def aux_variables(nodes: Iterable[Node]) -> set[Node]:
    """The variables among ``nodes``' inputs read as auxiliary states (BatchNorm's moving
    statistics)."""
    aux: set[Node] = set()
    for node in nodes:
        if node.op == VARIABLE:
            continue
        opdef = get_op(node.op)
        if opdef.aux == ():  # (most ops: no aux inputs, nothing to ask per node)
            continue
        names = opdef.aux_names(node.attrs)
        for slot, e in zip(opdef.input_names(node.attrs), node.inputs):
            if slot in names and e.node.op == VARIABLE:
                aux.add(e.node)
    return aux


def unique_name(stem: str, taken: set[str], sep: str = "_") -> str:
    """``stem``, or ``stem`` + ``sep`` + the first free number; added to ``taken``."""
    name, k = stem, 1
    while name in taken:
        name, k = f"{stem}{sep}{k}", k + 1
    taken.add(name)
    return name
