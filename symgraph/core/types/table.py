"""Types on the IR: the shape and dtype of every entry of a graph, after inference.

A :class:`TypeTable` is made once per bind from one full, bidirectional inference
(``types/infer_shape.py``, ``types/infer_type.py``) and then travels with the graph
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

from ..attrs import parse_shape
from ..base import SymgraphError
from ..graph import VARIABLE, Entry, Graph, Node
from ..registry import PartialShape, get_op

Shape = tuple[int, ...]
_MISSING: Any = object()  # "not in the table" (None is a value: unknown)


def declared_shape(node: Node) -> Optional[Shape]:
    """The ``shape=`` a variable was declared with, if fully known (0 means unknown, as MXNet)."""
    shape = declared_partial(node)
    return None if shape is None or 0 in shape else shape


def declared_partial(node: Node) -> Optional[Shape]:
    """The declared ``shape=``, unknown dimensions (0, or -1 as numpy shapes spell it)
    included as 0."""
    text = node.extra.get("__shape__")
    return None if text is None else tuple(0 if d == -1 else d for d in parse_shape(text))


def declared_dtype(node: Node) -> Optional[np.dtype]:
    """The ``dtype=`` a variable was declared with, if any."""
    t = node.extra.get("__dtype__")
    return None if t is None else np.dtype(t)


class TypeTable:
    """Shape and dtype per entry: known ones given, the rest computed forward on demand.

    One dict, entry -> ``(shape, dtype)`` (``_MISSING`` for a part not known to the table):
    a bind's table grows to several entries per graph node, and one record per entry is half
    the lookups and insertions of a dict per part. Records are shared: a rebuilt node's
    entries get its old record, and nodes whose rule saw the same inputs get the same one.
    """

    def __init__(self, shapes: Optional[Mapping[Entry, Shape]] = None,
                 dtypes: Optional[Mapping[Entry, np.dtype]] = None) -> None:
        shapes, dtypes = shapes or {}, dtypes or {}
        recs: dict[Entry, tuple] = {e: (s, dtypes.get(e, _MISSING)) for e, s in shapes.items()}
        for e, t in dtypes.items():
            if e not in recs:
                recs[e] = (_MISSING, t)
        self._recs = recs
        # (op, attrs, each input's (shape, dtype) record) -> each output's record: autodiff's
        # nodes repeat a few such combinations many times (a rule is a function of these).
        self._memo: dict[tuple, tuple[tuple, ...]] = {}

    def add(self, entry: Entry, shape: Shape, dtype: Any) -> None:
        """Give the type of a new entry (a variable made after inference: head gradients)."""
        self._recs[entry] = (tuple(int(d) for d in shape), np.dtype(dtype))

    def copy(self, old: Node, new: Node) -> None:
        """Give ``new``'s outputs the known types of ``old``'s: ``new`` is ``old`` rebuilt on
        inputs of the same types (``graph.rewrite``), so its rules would give the same."""
        recs = self._recs
        for eo, en in zip(old.entries(), new.entries()):  # (copy_entry inlined: per node)
            r = recs.get(eo)
            if r is not None and r[0] is not _MISSING and r[1] is not _MISSING:
                recs[en] = r

    def copy_entry(self, old: Entry, new: Entry) -> None:
        """Give ``new`` the known type of ``old``: a pass replaced ``old`` by ``new``, which
        computes the same values (fusion's kernels)."""
        r = self._recs.get(old)
        if r is not None and r[0] is not _MISSING and r[1] is not _MISSING:
            self._recs[new] = r

    def shape(self, e: Entry) -> Optional[Shape]:
        # (a sentinel, not KeyError: every node autodiff makes misses once, and raising costs)
        r = self._recs.get(e)
        if r is None or r[0] is _MISSING:
            self._fill_upto(e.node)
            r = self._recs[e]
        return r[0]

    def dtype(self, e: Entry) -> Optional[np.dtype]:
        r = self._recs.get(e)
        if r is None or r[1] is _MISSING:
            self._fill_upto(e.node)
            r = self._recs[e]
        return r[1]

    def shape_dtype(self, e: Entry) -> tuple[Optional[Shape], Optional[np.dtype]]:
        """``(shape(e), dtype(e))`` in one lookup (lowering asks both of every entry)."""
        r = self._recs.get(e)
        if r is None or r[0] is _MISSING or r[1] is _MISSING:
            self._fill_upto(e.node)
            r = self._recs[e]
        return r

    def _known(self, e: Entry) -> bool:
        r = self._recs.get(e)
        return r is not None and r[0] is not _MISSING and r[1] is not _MISSING

    def _fill_upto(self, node: Node) -> None:
        """Fill ``node`` and its unknown ancestors, inputs first (iterative: graphs are deep)."""
        if node.op != VARIABLE and self._fill_typed(node):
            return  # usually every input is known already: just this node was filled
        known = self._known
        stack = [node]
        while stack:
            n = stack[-1]
            if known(n.entries()[0]):  # filled meanwhile (shared ancestor)
                stack.pop()
                continue
            missing = [e.node for e in n.inputs if not known(e)]
            if missing:
                stack.extend(missing)
                continue
            stack.pop()
            self._fill(n)

    def _put(self, e: Entry, rec: tuple) -> None:
        """Record ``rec`` for ``e``, keeping any part the table knew already."""
        got = self._recs.setdefault(e, rec)
        if got is not rec and (got[0] is _MISSING or got[1] is _MISSING):
            self._recs[e] = (rec[0] if got[0] is _MISSING else got[0],
                             rec[1] if got[1] is _MISSING else got[1])

    def _fill_typed(self, node: Node) -> bool:
        """:meth:`_fill` of an op node whose inputs are all typed (False, nothing done, if
        one is not): one lookup per input (autodiff's nodes all come here once)."""
        recs = self._recs
        key = [node.op, node.attrs]  # then each input's record: (shape, dtype)
        for e in node.inputs:
            r = recs.get(e)
            if r is None or r[0] is _MISSING or r[1] is _MISSING:
                return False
            key.append(r)
        found = self._memo.get(tuple(key))
        if found is None:
            found = self._fill_rule(node, key)
        for e, rec in zip(node.entries(), found):
            got = recs.setdefault(e, rec)  # (a new node: nothing known yet, the usual case)
            if got is not rec:
                self._put(e, rec)
        return True

    def _fill_rule(self, node: Node, key: list) -> tuple[tuple, ...]:
        """Run ``node``'s rules on the input records in ``key`` (op, attrs, then one record
        per input) and remember each output's record under that key."""
        in_recs = key[2:]
        found = tuple(zip(*forward_types(node, [r[0] for r in in_recs],
                                         [r[1] for r in in_recs])))
        self._memo[tuple(key)] = found
        return found

    def _fill(self, node: Node) -> None:
        if node.op == VARIABLE:
            self._put(node.entries()[0], (declared_shape(node), declared_dtype(node)))
            return
        recs = self._recs
        key = [node.op, node.attrs] + [recs[e] for e in node.inputs]
        found = self._memo.get(tuple(key))
        if found is None:
            found = self._fill_rule(node, key)
        for e, rec in zip(node.entries(), found):
            self._put(e, rec)


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
