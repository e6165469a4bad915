"""BatchNorm with moving statistics as auxiliary states, and its gradient op.

BatchNorm's outputs are (output, mean, var) as in MXNet (mean and var visible only with
``output_mean_var``) plus two hidden outputs holding the updated moving statistics; ``mutates``
has the executor copy those into ``moving_mean``/``moving_var`` after a training forward.
Its gradient is one ``_backward_BatchNorm`` node (the GPU's two-stage per-channel sums and one
elementwise kernel); it is not differentiable again. Data may be float16/bfloat16 with gamma,
beta and the statistics in float32 (MXNet's rule for narrow data; AMP runs BatchNorm so): the
statistics are then computed in float32.
"""
from __future__ import annotations

from typing import Any, Callable, Optional

import numpy as np

from ...core.attrs import Attrs, Param
from ...core.dtypes import is_narrow
from ...core.build import Handle, apply_op
from ...core.graph import Entry, Node
from ...core.registry import CHANNEL_AXIS, NO_GRADIENT, OPAQUE, OpDef, RunCtx, alias, register
from ._util import check_attr, norm_axis


def vector_shape(n: int, like: tuple, axis: int) -> tuple:
    """Shape of length ``len(like)``: ``n`` at ``axis``, 1 elsewhere."""
    ax = check_axis(axis, len(like))
    return tuple(n if i == ax else 1 for i in range(len(like)))


def check_axis(axis: int, ndim: int) -> int:
    """``axis`` normalised for ``ndim`` axes (the shared ``_util.norm_axis``)."""
    return norm_axis(axis, ndim)


# -- BatchNorm -------------------------------------------------------------------------------------

BN_PARAMS = {
    "eps": Param("float", 1e-3), "momentum": Param("float", 0.9),
    "fix_gamma": Param("bool", True), "use_global_stats": Param("bool", False),
    "output_mean_var": Param("bool", False), "axis": Param("int", 1),
    "cudnn_off": Param("bool", False),
}
BN_INPUTS = ("data", "gamma", "beta", "moving_mean", "moving_var")


def _bn_shape(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    check_attr(a["eps"] >= 0, "eps", a["eps"], "must be >= 0 (it is added to the variance)")
    data = ins[0] if ins[0] is not None else outs[0]
    if data is None:
        return ins, outs
    c = (data[check_axis(a["axis"], len(data))],)
    return [data, c, c, c, c], [data, c, c, c, c]


def bn_type(n_data: int) -> Callable:
    """The dtype rule of an op whose first ``n_data`` inputs and first output are data (the
    data's dtype) and the rest parameters (gamma, beta, statistics: the parameters' dtype,
    float32 by default for narrow data as MXNet's cuDNN BatchNorm has it, else the data's)."""
    def rule(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
        d = next((t for t in ins[:n_data] + outs[:1] if t is not None), None)
        p = next((t for t in ins[n_data:] + outs[1:] if t is not None), None)
        if p is None and d is not None:
            p = np.dtype(np.float32) if is_narrow(d) else d
        return [d] * n_data + [p] * (len(ins) - n_data), [d] + [p] * (len(outs) - 1)
    return rule


def bn_statistics(a: Attrs, x: np.ndarray, gamma: np.ndarray, mm: np.ndarray, mv: np.ndarray,
                  is_train: bool) -> tuple:
    """BatchNorm's (mean, var, new moving mean, new moving var, per-channel scale ``gamma /
    sqrt(var + eps)``) for data ``x``: the batch's statistics in training (unless
    ``use_global_stats``), else the moving ones. The numpy reference and the compiled CPU
    backend (``runtime/cpu/norm.py``) both normalise with these."""
    ax = check_axis(a["axis"], x.ndim)
    if is_train and not a["use_global_stats"]:
        red = tuple(i for i in range(x.ndim) if i != ax)
        mean, var = x.mean(axis=red), x.var(axis=red)
        m = a["momentum"]
        new_mm, new_mv = mm * m + mean * (1 - m), mv * m + var * (1 - m)
    else:
        mean, var, new_mm, new_mv = mm, mv, mm.copy(), mv.copy()
    g = np.ones_like(gamma) if a["fix_gamma"] else gamma
    return mean, var, new_mm, new_mv, g / np.sqrt(var + a["eps"])


def _bn_compute(a: Attrs, xs: list, ctx: RunCtx) -> list:
    x, gamma, beta, mm, mv = xs
    ax = check_axis(a["axis"], x.ndim)
    shape = vector_shape(x.shape[ax], x.shape, ax)
    if is_narrow(x.dtype) and not is_narrow(mm.dtype):  # statistics in the parameters' type
        x = x.astype(mm.dtype)
    mean, var, new_mm, new_mv, scale = bn_statistics(a, x, gamma, mm, mv, ctx.is_train)
    y = (x - mean.reshape(shape)) * scale.reshape(shape) + beta.reshape(shape)
    return [y.astype(xs[0].dtype, copy=False)] + \
        [v.astype(mm.dtype, copy=False) for v in (mean, var, new_mm, new_mv)]


def _bn_grad(c) -> list:
    """One ``_backward_BatchNorm`` node (the GPU runs it as two reductions and one
    elementwise kernel instead of a dozen steps of registered ops)."""
    a = c.attrs
    back = c.sym._backward_BatchNorm(c.ograds[0], c.inputs[0], c.inputs[1], c.outputs[1],
                                     c.outputs[2], **a)
    return [back[0], None if a["fix_gamma"] else back[1], back[2], None, None]


def _bn_backward(a: Attrs, xs: list, ctx: RunCtx) -> list:
    """(dx, dgamma, dbeta) from (dy, x, gamma, mean, var), in float64: with the batch's
    statistics dx = (dy - mean(dy) - xhat * mean(dy * xhat)) * gamma / std; with the moving
    ones (``use_global_stats``) dx = dy * gamma / std."""
    dy, x, gamma, mean, var = (np.asarray(v, np.float64) for v in xs)
    ax = check_axis(a["axis"], x.ndim)
    red = tuple(i for i in range(x.ndim) if i != ax)
    shape = vector_shape(x.shape[ax], x.shape, ax)
    rstd = 1.0 / np.sqrt(var + a["eps"])
    xhat = (x - mean.reshape(shape)) * rstd.reshape(shape)
    g = np.ones_like(gamma) if a["fix_gamma"] else gamma
    dbeta, dgamma = dy.sum(axis=red), (dy * xhat).sum(axis=red)
    scale = (g * rstd).reshape(shape)
    if a["use_global_stats"]:
        dx = dy * scale
    else:
        m = x.size // x.shape[ax]
        dx = (dy - (dbeta / m).reshape(shape) - xhat * (dgamma / m).reshape(shape)) * scale
    return [dx.astype(xs[1].dtype), dgamma.astype(xs[2].dtype), dbeta.astype(xs[2].dtype)]


def _bn_recompute(node: Node, index: int, ins: tuple, types: Any,
                  extra: dict) -> Optional[Entry]:
    """Output 0 again from the data and the batch statistics the training forward saved
    (``passes/rematerialise``), as elementwise ops that fusion merges with what follows:
    ``(x - mean) * (gamma / sqrt(var + eps)) + beta``, the numpy reference's formula in its
    order (so the CPU gives the same bits); for narrow data with float32 statistics, one
    BatchNorm applying them (the same formula, in float32)."""
    if index != 0 or types is None:
        return None
    a = node.attrs
    x, gamma, beta = ins[:3]
    mean, var = (ins[3], ins[4]) if a["use_global_stats"] else (Entry(node, 1), Entry(node, 2))
    shape, dtype = types.shape_dtype(x)
    stat_type = types.dtype(mean)

    def op(name: str, *args: Entry, **attrs: Any) -> Entry:
        return apply_op(name, [Handle((e,)) for e in args], attrs, extra=extra).outputs_[0]
    if is_narrow(dtype) and not is_narrow(stat_type):
        # (casts do not fuse: one BatchNorm applying the statistics reads narrow data once)
        again = Node("BatchNorm", f"{node.name}_remat", a.replace(use_global_stats=True),
                     (x, gamma, beta, mean, var), Attrs({**dict(node.extra.items()), **extra}))
        types.copy(node, again)
        return Entry(again, 0)
    vec = vector_shape(shape[check_axis(a["axis"], len(shape))], shape, a["axis"])
    root = op("sqrt", op("_plus_scalar", var, scalar=a["eps"]))
    scale = op("_rdiv_scalar", root, scalar=1.0) if a["fix_gamma"] else \
        op("broadcast_div", gamma, root)
    y = op("broadcast_add", op("broadcast_mul", op("broadcast_sub", x,
                                                   op("Reshape", mean, shape=vec)),
                                op("Reshape", scale, shape=vec)),
           op("Reshape", beta, shape=vec))
    return y


def _bn_backward_shape(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    data = next((s for s in (ins[0], ins[1], outs[0]) if s is not None), None)
    if data is None:
        return ins, outs
    c = (data[check_axis(a["axis"], len(data))],)
    return [data, data, c, c, c], [data, c, c]


register(OpDef(
    "BatchNorm", BN_PARAMS, BN_INPUTS, _bn_shape, _bn_compute, _bn_grad, OPAQUE,
    lowering='batch_norm', infer_type=bn_type(1),
    aux=("moving_mean", "moving_var"),
    outputs=("output", "mean", "var", "moving_mean_new", "moving_var_new"),
    num_visible=lambda a: 3 if a["output_mean_var"] else 1, mutates=((3, 3), (4, 4)),
    train_dependent=True, layout=CHANNEL_AXIS, group_epilogue=True,
    extra={"recompute": ((0,), _bn_recompute)},
    doc="Batch normalisation over every axis but `axis`; batch statistics in training "
        "(moving statistics updated with `momentum`), moving statistics otherwise."))
register(OpDef(
    "_backward_BatchNorm", BN_PARAMS, ("ograd", "data", "gamma", "mean", "var"),
    _bn_backward_shape, _bn_backward, NO_GRADIENT, OPAQUE, lowering="batch_norm_backward",
    infer_type=bn_type(2),
    outputs=("data_grad", "gamma_grad", "beta_grad"),
    doc="Gradient of BatchNorm w.r.t. data, gamma and beta, from the statistics it used."))
# MXNet's legacy BatchNorm (channel axis 1, a subset of BatchNorm's parameters): the same op.
alias("BatchNorm_v1", "BatchNorm")
