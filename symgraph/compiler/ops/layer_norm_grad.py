"""``_backward_LayerNorm``: LayerNorm's gradient as one op, so the GPU runs it as one kernel
(``cuda/kernels_layer_norm_grad.py``: a block per row for dx, the column sums of dgamma and
dbeta folded by the grid's last block) instead of a dozen reductions and elementwise steps.

Inputs are the head gradient, LayerNorm's data and gamma, and the mean and std it saved
(std = sqrt(var + eps)); outputs dx, dgamma, dbeta. Its definition in registered ops
(``rowstats.standardize_grad_terms``) gives its own gradient, so LayerNorm stays differentiable
twice. Rows of up to ``MAX_ROW`` values (the kernel keeps a row in registers): LayerNorm's
gradient uses this op for those and the registered ops for longer rows and when its statistics
are outputs too (their gradients join dx).

Example::

    dx, dgamma, dbeta = sg.sym._backward_LayerNorm(dy, x, gamma, mean, std, axis=-1)
"""
from __future__ import annotations

from math import prod
from typing import Any

import numpy as np

from ...core.attrs import Attrs, Param
from ...core.base import ShapeError
from ...core.dtypes import is_narrow
from ...core.registry import OPAQUE, OpDef, RunCtx, register
from ._composite import composite_gradient
from ._util import fmt, norm_axis
from .rowstats import RowView, data_shape, standardize_grad, standardize_grad_terms

MAX_ROW = 4096  # 16 values in registers for each of 256 threads
INPUTS = ("ograd", "data", "gamma", "mean", "std")


def layer_norm_view(a: Attrs, shape: tuple) -> RowView:
    """(outer, C, inner) reducing C, gamma along C."""
    ax = norm_axis(a["axis"], len(shape))
    return RowView((prod(shape[:ax]), shape[ax], prod(shape[ax + 1:])), (False, True, False), 1)


def _shape(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    data = next((tuple(s) for s in (ins[1], ins[0], outs[0]) if s is not None), None)
    if data is None:
        return ins, outs
    ax = norm_axis(a["axis"], len(data))
    if data[ax] > MAX_ROW:
        raise ShapeError(f"_backward_LayerNorm: rows of {data[ax]} values along axis {ax} of "
                         f"data {fmt(data)}; at most {MAX_ROW} (LayerNorm's gradient uses "
                         f"registered ops for longer rows)")
    p = (data[ax],)
    stat = tuple(1 if i == ax else d for i, d in enumerate(data))
    return [data, data, p, stat, stat], [data, p, p]


def _types(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    d = next((t for t in (ins[1], ins[0], outs[0]) if t is not None), None)
    p = next((t for t in (ins[2], outs[1], outs[2]) if t is not None), None)
    if p is None and d is not None:
        p = np.dtype(np.float32) if is_narrow(d) else d
    s = ins[3] if ins[3] is not None else d
    return [d, d, p, s, s], [d, p, p]


def _compute(a: Attrs, xs: list, ctx: RunCtx) -> list:
    """float64: dx = (gy - mean(gy) - xhat * mean(gy * xhat)) / std, gy = dy * gamma."""
    dy, x, gamma, mean, std = (np.asarray(v, np.float64) for v in xs)
    view = layer_norm_view(a, x.shape)
    xv, dyv = x.reshape(view.dims), dy.reshape(view.dims)
    sd = std.reshape(view.kept_shape)
    xhat = (xv - mean.reshape(view.kept_shape)) / sd
    gy = dyv * gamma.reshape(view.param_shape)
    dx = (gy - gy.mean(axis=1, keepdims=True) - xhat * (gy * xhat).mean(axis=1, keepdims=True))
    dx = dx / sd
    dgamma, dbeta = (dyv * xhat).sum(axis=(0, 2)), dyv.sum(axis=(0, 2))
    return [dx.reshape(x.shape).astype(xs[1].dtype), dgamma.astype(xs[2].dtype),
            dbeta.astype(xs[2].dtype)]


def _expand(S: Any, a: Attrs, xs: list, shapes: list, dtypes: list) -> list:
    """The op in registered ops (float32 sums for narrow data)."""
    view = layer_norm_view(a, tuple(shapes[1]))
    narrow = [is_narrow(t) for t in dtypes]

    def up(k: int, shape: tuple) -> Any:
        v = S.Reshape(xs[k], shape=shape)
        return S.Cast(v, dtype="float32") if narrow[k] else v

    def down(v: Any, k: int) -> Any:
        return S.Cast(v, dtype=np.dtype(dtypes[k]).name) if narrow[k] else v
    dxv, dgamma, dbeta, _ = standardize_grad_terms(
        S, view, up(0, view.dims), up(1, view.dims), up(2, view.param_shape),
        up(3, view.kept_shape), up(4, view.kept_shape))
    return [down(S.Reshape(dxv, shape=tuple(shapes[1])), 1), down(dgamma, 2), down(dbeta, 2)]


def layer_norm_gradient(c: Any) -> list:
    """LayerNorm's gradient: this op for rows of up to ``MAX_ROW`` values without statistic
    outputs, else ``standardize_grad`` (registered ops)."""
    view = layer_norm_view(c.attrs, data_shape(c))
    if c.attrs["output_mean_var"] or view.count > MAX_ROW:
        return standardize_grad(c, view, c.outputs[2], c.attrs["output_mean_var"])
    back = c.sym._backward_LayerNorm(c.ograds[0], c.inputs[0], c.inputs[1], c.outputs[1],
                                     c.outputs[2], axis=c.attrs["axis"])
    return [back[0], back[1], back[2]]


register(OpDef(
    "_backward_LayerNorm", {"axis": Param("int", -1, doc="LayerNorm's axis.")}, INPUTS,
    _shape, _compute, composite_gradient(_expand), OPAQUE, infer_type=_types,
    outputs=("data_grad", "gamma_grad", "beta_grad"), lowering=("layer_norm_backward", {}),
    doc="Gradient of LayerNorm along `axis` w.r.t. data, gamma and beta, from the head "
        "gradient and the mean and std (sqrt(var + eps)) LayerNorm saved."))
