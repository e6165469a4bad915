"""``autograd.grad(..., create_graph=True)``: gradients as recorded nodes of the trace itself.

The autodiff pass (``passes/gradient.py``) is run on the recorded graph; the gradient nodes it
builds from registered ops read the recorded nodes directly, so the returned arrays are pending
and recorded like any op result: forcing them compiles through the usual cache, and they can be
differentiated again (second derivatives).
"""
from __future__ import annotations

import weakref
from typing import Optional, Sequence

from ...core.base import ExecutionError, ShapeError
from ...core.graph import Graph
from ...runtime.ndarray import NDArray
from ...compiler.passes.gradient import gradient
from ...core.types.infer_shape import infer_shapes
from ...core.types.infer_type import infer_types
from .calls import call, input_entry
from .compute import check_heads, describe
from .engine import LATE, PENDING, THREAD, VALUE
from .trace import settle


def grad_graph(heads: Sequence[NDArray], variables: Sequence[NDArray],
               head_grads: Optional[Sequence[Optional[NDArray]]]) -> list[NDArray]:
    """Pending, recorded arrays holding d(heads . head_grads)/d(variables)."""
    check_heads(heads)
    for v in variables:
        if not isinstance(v, NDArray) or v._var is None or v._entry is None \
                or v._entry.node is not v._var:
            raise ExecutionError(f"autograd.grad: {v!r:.60} is not a variable; call "
                                 f"attach_grad() first")
    saved, THREAD.state.recording = THREAD.state.recording, True
    try:
        hg = [call("ones_like", [h], {}) if head_grads is None or head_grads[i] is None
              else head_grads[i] for i, h in enumerate(heads)]
        hg_entries = [input_entry(g, True) for g in hg]
    finally:
        THREAD.state.recording = saved
    for i, (h, g) in enumerate(zip(heads, hg)):
        # A head gradient that merely broadcasts against its head would give the variables
        # gradients of the wrong shape; MXNet refuses it too.
        if g.shape != h.shape:
            raise ShapeError(f"autograd.grad: head_grads[{i}] has shape {g.shape}, "
                             f"its head is {describe(h)}")
    graph = Graph(tuple(h._entry for h in heads))
    out_graph = Graph(tuple(gradient(graph, [v._var for v in variables], hg_entries)))
    leaves = {n: VALUE[n][0] for n in out_graph.variables()}
    shapes = infer_shapes(out_graph, {n.name: a.shape for n, a in leaves.items()})
    types = infer_types(out_graph, {n.name: a.dtype for n, a in leaves.items()})
    for node in out_graph.nodes():
        if not node.is_variable and node not in VALUE and node not in LATE:
            LATE[node] = (True, THREAD.state.training)
    results = []
    for v, e in zip(variables, out_graph.outputs):
        if e.node.is_variable:  # the gradient is a head gradient itself
            results.append(NDArray(VALUE[e.node][0]._buf, v._ctx))
            continue
        if e not in shapes:
            raise ExecutionError(f"autograd.grad: cannot decide the gradient's shape for "
                                 f"{describe(v)}")
        a = NDArray(None, v._ctx)
        a._entry, a._shape, a._dtype, a._recorded = e, shapes[e], types[e], True
        settle()  # (PENDING must hold the tape's nodes before one of them gets arrays here)
        PENDING.setdefault(e.node, [])
        refs = PENDING[e.node]
        refs.extend([lambda: None] * (e.index + 1 - len(refs)))
        refs[e.index] = weakref.ref(a)
        results.append(a)
    return results
