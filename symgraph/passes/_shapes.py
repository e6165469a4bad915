"""Shapes and dtypes of entries while a pass rebuilds the graph.

Passes that need shapes create new entries as they go, so a one-off ``infer_shapes`` of the input
graph is not enough. :class:`ShapeCache` runs each op's own rule forward, once per entry, from the
variables' baked ``__shape__``/``__dtype__`` (the executor declares them before the pipeline runs).
Unknown stays ``None``: rules that need a shape simply do not fire.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from ..base import SymgraphError
from ..graph import Entry, Node
from ..registry import get_op
from .infer_shape import declared_shape

Shape = tuple[int, ...]


class ShapeCache:
    """Memoised forward shape/dtype inference per entry."""

    def __init__(self) -> None:
        self._shapes: dict[Entry, Optional[Shape]] = {}
        self._types: dict[Entry, Optional[np.dtype]] = {}

    def shape(self, e: Entry) -> Optional[Shape]:
        if e not in self._shapes:
            self._fill_upto(e.node)
        return self._shapes[e]

    def dtype(self, e: Entry) -> Optional[np.dtype]:
        if e not in self._types:
            self._fill_upto(e.node)
        return self._types[e]

    def _fill_upto(self, node: Node) -> None:
        """Fill ``node`` and its unknown ancestors, inputs first (iterative: graphs are deep)."""
        stack = [(node, False)]
        while stack:
            n, ready = stack.pop()
            if Entry(n) in self._shapes:
                continue
            if ready:
                self._fill(n)
                continue
            stack.append((n, True))
            stack.extend((e.node, False) for e in n.inputs if e not in self._shapes)

    def _fill(self, node: Node) -> None:
        if node.is_variable:
            t = node.extra.get("__dtype__")
            self._shapes[Entry(node)] = declared_shape(node)
            self._types[Entry(node)] = None if t is None else np.dtype(t)
            return
        opdef = get_op(node.op)
        n = node.num_outputs
        ins = [self.shape(e) for e in node.inputs]
        tins = [self.dtype(e) for e in node.inputs]
        try:
            outs = opdef.infer_shape(node.attrs, list(ins), [None] * n)[1]
            touts = opdef.infer_type(node.attrs, list(tins), [None] * n)[1]
        except SymgraphError:
            outs, touts = [None] * n, [None] * n
        for i in range(n):
            s, t = outs[i], touts[i]
            self._shapes[Entry(node, i)] = None if s is None else tuple(int(d) for d in s)
            self._types[Entry(node, i)] = None if t is None else np.dtype(t)
