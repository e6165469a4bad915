"""BatchNorm with moving statistics as auxiliary states, and ``_axis_vector`` (a per-channel
vector laid along one axis of a tensor), which BatchNorm's and PReLU's gradients use.

BatchNorm's outputs are (output, mean, var) as in MXNet (mean and var visible only with
``output_mean_var``) plus two hidden outputs holding the updated moving statistics; ``mutates``
has the executor copy those into ``moving_mean``/``moving_var`` after a training forward.
Its gradient is composed from registered ops, so it fuses and differentiates again.
"""
from __future__ import annotations

import numpy as np

from ..attrs import Attrs, Param
from ..base import ShapeError
from ..registry import INJECTIVE, OPAQUE, OpDef, RunCtx, alias, register
from ._util import check_attr, fmt, norm_axis

# -- _axis_vector ----------------------------------------------------------------------------------


def vector_shape(n: int, like: tuple, axis: int) -> tuple:
    """Shape of length ``len(like)``: ``n`` at ``axis``, 1 elsewhere."""
    ax = check_axis(axis, len(like))
    return tuple(n if i == ax else 1 for i in range(len(like)))


def check_axis(axis: int, ndim: int) -> int:
    """``axis`` normalised for ``ndim`` axes (the shared ``_util.norm_axis``)."""
    return norm_axis(axis, ndim)


def _axis_vector_shape(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    vec, like = ins
    if vec is None or like is None:
        return ins, outs
    if len(vec) != 1:
        raise ShapeError(f"vector must be 1-D, got {fmt(vec)}")
    return ins, [vector_shape(vec[0], like, a["axis"])]


register(OpDef(
    "_axis_vector", {"axis": Param("int", 1)}, ("data", "like"), _axis_vector_shape,
    lambda a, xs, ctx: [xs[0].reshape(vector_shape(xs[0].shape[0], xs[1].shape, a["axis"]))],
    lambda c: [c.sym.reshape_like(c.ograds[0], c.inputs[0]), None], INJECTIVE, lowering='copy',
    doc="A (C,) vector reshaped to broadcast along `axis` of `like` (C at axis, 1 elsewhere)."))

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


def _bn_compute(a: Attrs, xs: list, ctx: RunCtx) -> list:
    x, gamma, beta, mm, mv = xs
    ax = check_axis(a["axis"], x.ndim)
    red = tuple(i for i in range(x.ndim) if i != ax)
    shape = vector_shape(x.shape[ax], x.shape, ax)
    if ctx.is_train and not a["use_global_stats"]:
        mean, var = x.mean(axis=red), x.var(axis=red)
        m = a["momentum"]
        new_mm, new_mv = mm * m + mean * (1 - m), mv * m + var * (1 - m)
    else:
        mean, var, new_mm, new_mv = mm, mv, mm.copy(), mv.copy()
    g = np.ones_like(gamma) if a["fix_gamma"] else gamma
    scale = g / np.sqrt(var + a["eps"])
    y = (x - mean.reshape(shape)) * scale.reshape(shape) + beta.reshape(shape)
    return [y.astype(x.dtype, copy=False), mean, var, new_mm, new_mv]


def _bn_grad(c) -> list:
    S, a = c.sym, c.attrs
    x, gamma, dy = c.inputs[0], c.inputs[1], c.ograds[0]
    ax = a["axis"]
    mean, var = S._axis_vector(c.outputs[1], x, axis=ax), S._axis_vector(c.outputs[2], x, axis=ax)
    rstd = S.rsqrt(var + a["eps"])
    xhat = (x - mean) * rstd
    scale = rstd if a["fix_gamma"] else rstd * S._axis_vector(gamma, x, axis=ax)
    over = dict(axis=ax, exclude=True)
    dgamma = None if a["fix_gamma"] else S.sum(dy * xhat, **over)
    dbeta = S.sum(dy, **over)
    if a["use_global_stats"]:
        dx = dy * scale
    else:
        centred = dy - S.mean(dy, keepdims=True, **over)
        dx = (centred - xhat * S.mean(dy * xhat, keepdims=True, **over)) * scale
    return [dx, dgamma, dbeta, None, None]


register(OpDef(
    "BatchNorm", BN_PARAMS, BN_INPUTS, _bn_shape, _bn_compute, _bn_grad, OPAQUE,
    lowering='batch_norm',
    aux=("moving_mean", "moving_var"),
    outputs=("output", "mean", "var", "moving_mean_new", "moving_var_new"),
    num_visible=lambda a: 3 if a["output_mean_var"] else 1, mutates=((3, 3), (4, 4)),
    train_dependent=True,
    doc="Batch normalisation over every axis but `axis`; batch statistics in training "
        "(moving statistics updated with `momentum`), moving statistics otherwise."))
# MXNet's legacy BatchNorm (channel axis 1, a subset of BatchNorm's parameters): the same op.
alias("BatchNorm_v1", "BatchNorm")
