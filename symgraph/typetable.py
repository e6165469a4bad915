"""Types on the IR: the shape and dtype of every entry of a graph, after inference.

A :class:`TypeTable` is made once per bind from one full, bidirectional inference
(``passes/infer_shape.py``, ``passes/infer_type.py``) and then travels with the graph
(``Graph.types``) through every pass, autodiff and lowering. Nodes are immutable and entries are
keyed by node identity, so what the table knows stays true for every node a pass keeps; for a
node a pass creates, :meth:`TypeTable.shape` runs that op's own rule forward from its inputs'
types, once (local recomputation: nothing re-infers the whole graph). ``passes/verify.py``
checks a table against the graph by replaying each rule (``check``).

Variables the table was not told about fall back to what the user declared on them
(``sg.sym.var(shape=..., dtype=...)``: MXNet's ``__shape__``/``__dtype__`` user attributes).
Unknown stays ``None``: passes whose rules need a shape simply do not fire.
"""
from __future__ import annotations

from typing import Any, Mapping, Optional

import numpy as np

from .attrs import _parse_shape
from .base import SymgraphError
from .graph import VARIABLE, Entry, Graph, Node
from .registry import PartialShape, get_op

Shape = tuple[int, ...]
_MISSING: Any = object()  # "not in the table" (None is a value: unknown)


def declared_shape(node: Node) -> Optional[Shape]:
    """The ``shape=`` a variable was declared with, if fully known (0 means unknown, as MXNet)."""
    shape = declared_partial(node)
    return None if shape is None or 0 in shape else shape


def declared_partial(node: Node) -> Optional[Shape]:
    """The declared ``shape=``, unknown dimensions (0) included."""
    text = node.extra.get("__shape__")
    return None if text is None else _parse_shape(text)


def declared_dtype(node: Node) -> Optional[np.dtype]:
    """The ``dtype=`` a variable was declared with, if any."""
    t = node.extra.get("__dtype__")
    return None if t is None else np.dtype(t)


class TypeTable:
    """Shape and dtype per entry: known ones given, the rest computed forward on demand."""

    def __init__(self, shapes: Optional[Mapping[Entry, Shape]] = None,
                 dtypes: Optional[Mapping[Entry, np.dtype]] = None) -> None:
        self._shapes: dict[Entry, Optional[Shape]] = dict(shapes or {})
        self._types: dict[Entry, Optional[np.dtype]] = dict(dtypes or {})
        # (op, attrs, input shapes, input dtypes) -> output types: autodiff's nodes repeat a
        # few such combinations many times (a rule is a function of exactly these).
        self._memo: dict[tuple, tuple[list, list]] = {}

    def add(self, entry: Entry, shape: Shape, dtype: Any) -> None:
        """Give the type of a new entry (a variable made after inference: head gradients)."""
        self._shapes[entry] = tuple(int(d) for d in shape)
        self._types[entry] = np.dtype(dtype)

    def copy(self, old: Node, new: Node) -> None:
        """Give ``new``'s outputs the known types of ``old``'s: ``new`` is ``old`` rebuilt on
        inputs of the same types (``graph.rewrite``), so its rules would give the same."""
        shapes, types = self._shapes, self._types
        for eo, en in zip(old.entries(), new.entries()):  # (copy_entry inlined: per node)
            s = shapes.get(eo, _MISSING)
            t = types.get(eo, _MISSING)
            if s is not _MISSING and t is not _MISSING:
                shapes[en] = s
                types[en] = t

    def copy_entry(self, old: Entry, new: Entry) -> None:
        """Give ``new`` the known type of ``old``: a pass replaced ``old`` by ``new``, which
        computes the same values (fusion's kernels)."""
        s = self._shapes.get(old, _MISSING)
        t = self._types.get(old, _MISSING)
        if s is not _MISSING and t is not _MISSING:
            self._shapes[new] = s
            self._types[new] = t

    def shape(self, e: Entry) -> Optional[Shape]:
        # (a sentinel, not KeyError: every node autodiff makes misses once, and raising costs)
        s = self._shapes.get(e, _MISSING)
        if s is _MISSING:
            self._fill_upto(e.node)
            s = self._shapes[e]
        return s

    def dtype(self, e: Entry) -> Optional[np.dtype]:
        t = self._types.get(e, _MISSING)
        if t is _MISSING:
            self._fill_upto(e.node)
            t = self._types[e]
        return t

    def _fill_upto(self, node: Node) -> None:
        """Fill ``node`` and its unknown ancestors, inputs first (iterative: graphs are deep)."""
        if node.op != VARIABLE and self._fill_typed(node):
            return  # usually every input is known already: just this node was filled
        shapes, types = self._shapes, self._types
        stack = [node]
        while stack:
            n = stack[-1]
            e0 = n.entries()[0]
            if e0 in types and e0 in shapes:  # filled meanwhile (shared ancestor)
                stack.pop()
                continue
            missing = [e.node for e in n.inputs if e not in types or e not in shapes]
            if missing:
                stack.extend(missing)
                continue
            stack.pop()
            self._fill(n)

    def _fill_typed(self, node: Node) -> bool:
        """:meth:`_fill` of an op node whose inputs are all typed (False, nothing done, if
        one is not): one lookup per input and table (autodiff's nodes all come here once)."""
        shapes, types = self._shapes, self._types
        in_shapes, in_types = [], []
        for e in node.inputs:
            s = shapes.get(e, _MISSING)
            t = types.get(e, _MISSING)
            if s is _MISSING or t is _MISSING:
                return False
            in_shapes.append(s)
            in_types.append(t)
        key = (node.op, node.attrs, tuple(in_shapes), tuple(in_types))
        found = self._memo.get(key)
        if found is None:
            found = self._memo[key] = forward_types(node, in_shapes, in_types)
        for e, s, t in zip(node.entries(), *found):
            shapes.setdefault(e, s)
            types.setdefault(e, t)
        return True

    def _fill(self, node: Node) -> None:
        shapes, types = self._shapes, self._types
        if node.op == VARIABLE:
            e0 = node.entries()[0]
            shapes.setdefault(e0, declared_shape(node))
            types.setdefault(e0, declared_dtype(node))
            return
        in_shapes = tuple([shapes.get(e) for e in node.inputs])
        in_types = tuple([types[e] for e in node.inputs])
        key = (node.op, node.attrs, in_shapes, in_types)
        found = self._memo.get(key)
        if found is None:
            found = self._memo[key] = forward_types(node, list(in_shapes), list(in_types))
        outs, touts = found
        for e, s, t in zip(node.entries(), outs, touts):
            shapes.setdefault(e, s)
            types.setdefault(e, t)


def forward_types(node: Node, in_shapes: list, in_types: list) -> tuple[list, list]:
    """Output shapes and dtypes of ``node`` from its inputs' by its op's rules (``None`` for
    what the rules cannot decide or refuse)."""
    opdef = get_op(node.op)
    n = node.num_outputs
    try:
        outs = opdef.infer_shape(node.attrs, list(in_shapes), [None] * n)[1]
    except SymgraphError:
        outs = [None] * n
    try:
        touts = opdef.infer_type(node.attrs, list(in_types), [None] * n)[1]
    except SymgraphError:
        touts = [None] * n
    # a PartialShape leaves dimensions to consumers: forward alone does not decide it
    outs = [None if isinstance(s, PartialShape) else s for s in outs]
    return ([s if s is None or _is_shape(s) else tuple(int(d) for d in s) for s in outs],
            [t if t is None or isinstance(t, np.dtype) else np.dtype(t) for t in touts])


def _is_shape(s: Any) -> bool:
    """Already a tuple of Python ints (most rules return one): no copy needed."""
    return type(s) is tuple and all(type(d) is int for d in s)


def types_of(graph: Graph) -> TypeTable:
    """The graph's table, or a new one from what its variables declare."""
    return graph.types if graph.types is not None else TypeTable()
