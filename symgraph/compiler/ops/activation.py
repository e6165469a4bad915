"""LeakyReLU (leaky/elu/prelu/selu/gelu/rrelu), softmax, log_softmax, SoftmaxActivation,
Dropout.

LeakyReLU's formulas are scalar Exprs (evaluated by ``expr.evaluate``); the op is OPAQUE rather
than elementwise because PReLU's per-channel ``gamma`` (shape (C,)) does not broadcast against
NCHW data the numpy way, and a pattern is per op, not per attribute value.
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np

from ...core import expr as E
from ...core import rng as global_rng
from ...core.attrs import Attrs, Param
from ...core.base import ShapeError
from ...core.registry import INJECTIVE, OPAQUE, REDUCE, OpDef, RunCtx, register, same_type
from ._util import check_attr, fmt, norm_axis, same_shape
from .nn import softmax_np
from .norm import check_axis

SELU_ALPHA, SELU_LAMBDA = 1.6732632423543772, 1.0507009873554805
SQRT1_2, INV_SQRT_2PI = math.sqrt(0.5), 1.0 / math.sqrt(2.0 * math.pi)


def _gelu(x: E.Expr) -> E.Expr:
    # MXNet 1.9.1's GELU is the exact (erf) form, x * Phi(x).
    return 0.5 * x * (1.0 + E.call("erf", x * SQRT1_2))


def _elu(x: E.Expr, s: float) -> E.Expr:
    return E.where(E.call("gt", x, 0.0), x, s * (E.exp(x) - 1.0))


# act_type: formula of (x, slope or gamma)
LEAKY: dict[str, Callable[[E.Expr, E.Expr], E.Expr]] = {
    "leaky": lambda x, s: E.where(E.call("gt", x, 0.0), x, s * x),
    "prelu": lambda x, s: E.where(E.call("gt", x, 0.0), x, s * x),
    "elu": _elu,
    "selu": lambda x, s: SELU_LAMBDA * _elu(x, SELU_ALPHA),
    "gelu": lambda x, s: _gelu(x),
    # randomized leaky ReLU: s is the slope array (hidden output "mask": a draw from
    # U[lower_bound, upper_bound) per element in training, their mean in inference)
    "rrelu": lambda x, s: E.where(E.call("gt", x, 0.0), x, s * x),
}


def prelu_gamma_shape(gamma: tuple, data: tuple) -> tuple:
    """PReLU's ``gamma`` laid over ``data`` (MXNet's ``expand_shape``): its axes go, from the
    right, onto the data's axes 1 and 0, each of the same size or 1; every other axis is 1.
    So (C,) is per channel, (N, C) per sample and channel, (1,) one slope. ShapeError if
    gamma does not fit."""
    out = [1] * len(data)
    k = len(gamma) - 1
    for i in range(min(len(data), 2) - 1, -1, -1):
        if k >= 0 and gamma[k] in (data[i], 1):
            out[i] = gamma[k]
            k -= 1
    if k >= 0 or not gamma:
        raise ShapeError(f"gamma {fmt(gamma)} does not fit data {fmt(data)}: it takes the "
                         f"data's channel axis, optionally preceded by its batch axis "
                         f"(each of that size or 1)")
    return tuple(out)


def rrelu_slopes(a: Attrs, x: np.ndarray, ctx: RunCtx) -> np.ndarray:
    """RReLU's slope per element: uniform in [lower_bound, upper_bound) in training, their
    mean in inference (MXNet's rule)."""
    lo, hi = a["lower_bound"], a["upper_bound"]
    if not ctx.is_train:
        return np.full(x.shape, (lo + hi) / 2.0, x.dtype)
    return (ctx.rng or _random.generator()).uniform(lo, hi, x.shape).astype(x.dtype)


def _leaky_compute(a: Attrs, xs: list, ctx: RunCtx) -> list:
    x = xs[0]
    if a["act_type"] == "rrelu":
        s = rrelu_slopes(a, x, ctx)
        return [np.where(x > 0, x, s * x), s]
    if a["act_type"] == "prelu":
        s = xs[1].reshape(prelu_gamma_shape(xs[1].shape, x.shape))
    else:
        s = x.dtype.type(a["slope"])
    return E.evaluate([LEAKY[a["act_type"]](E.inp(0), E.inp(1))], [x, s], x.dtype)


def _leaky_grad(c) -> list:
    S, a = c.sym, c.attrs
    x, y, dy = c.inputs[0], c.outputs[0], c.ograds[0]
    pos = x > 0.0
    kind = a["act_type"]
    if kind == "leaky":
        return [S.where(pos, dy, dy * a["slope"])]
    if kind == "elu":
        return [S.where(pos, dy, dy * (y + a["slope"]))]
    if kind == "selu":
        return [S.where(pos, dy * SELU_LAMBDA, dy * (y + SELU_LAMBDA * SELU_ALPHA))]
    if kind == "rrelu":  # the slopes the forward used (hidden output 1)
        return [S.where(pos, dy, dy * c.outputs[1])]
    if kind == "gelu":  # Phi(x) + x phi(x)
        d = (S.erf(x * SQRT1_2) + 1.0) * 0.5 + x * S.exp(S.square(x) * -0.5) * INV_SQRT_2PI
        return [dy * d]
    gamma = S._prelu_gamma(c.inputs[1], x)
    neg = S.where(pos, S.zeros_like(x), x)
    dgamma = S.reshape_like(S._broadcast_backward(dy * neg, gamma), c.inputs[1])
    return [S.where(pos, dy, S.broadcast_mul(dy, gamma)), dgamma]


def _leaky_shape(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    ins, outs = list(ins), list(outs)
    data = ins[0] if ins[0] is not None else outs[0]
    if data is None:
        return ins, outs
    if a["act_type"] == "prelu":
        ins[1] = ins[1] or ((data[1],) if len(data) > 1 else (1,))
        prelu_gamma_shape(ins[1], data)
    ins[0] = data
    return ins, [data] * (2 if a["act_type"] == "rrelu" else 1)


register(OpDef(
    "LeakyReLU",
    {"act_type": Param("str", "leaky", tuple(LEAKY)), "slope": Param("float", 0.25),
     "lower_bound": Param("float", 0.125), "upper_bound": Param("float", 0.334)},
    lambda a: ("data", "gamma") if a["act_type"] == "prelu" else ("data",),
    _leaky_shape, _leaky_compute, _leaky_grad, OPAQUE, lowering='leaky_relu',
    # as MXNet, a gamma created with the layer starts at 0.25 (not a `*_gamma` one)
    extra={"input_init": {"gamma": '["Constant", {"value": 0.25}]'}},
    outputs=lambda a: ("output", "mask") if a["act_type"] == "rrelu" else ("output",),
    train_dependent=True,  # rrelu draws its slopes in training (and shows them, as MXNet)
    doc="leaky: x>0 ? x : slope*x; prelu: learned per-channel slope gamma; elu: "
        "slope*(e^x-1) below 0; selu; gelu (erf form, as MXNet 1.9.1); rrelu: a slope "
        "drawn from U[lower_bound, upper_bound) per element in training, their mean in "
        "inference."))

register(OpDef(
    "_prelu_gamma", {}, ("gamma", "like"),
    lambda a, ins, outs: (ins, [prelu_gamma_shape(ins[0], ins[1])] if None not in ins else outs),
    lambda a, xs, ctx: [xs[0].reshape(prelu_gamma_shape(xs[0].shape, xs[1].shape))],
    lambda c: [c.sym.reshape_like(c.ograds[0], c.inputs[0]), None], INJECTIVE, lowering='copy',
    infer_type=lambda a, ins, outs: (ins, [ins[0]] if ins[0] is not None else outs),
    doc="PReLU's gamma reshaped to broadcast over `like` (its axes on like's axes 0-1)."))

# -- softmax family --------------------------------------------------------------------------------

SOFTMAX_PARAMS = {"axis": Param("int", -1), "temperature": Param("float?", None),
                  "dtype": Param("dtype?", None, doc="the output's dtype (default: the "
                                                      "input's); computed in it")}
LENGTH_PARAMS = {**SOFTMAX_PARAMS, "use_length": Param(
    "bool", False, doc="take a second input `length` (data's shape without `axis`): only "
                       "the first length[i] entries along axis take part, the rest give 0")}


def _softmax_shape(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    """Same shape; the axis must exist and a temperature of 0 divides by zero."""
    t = a["temperature"]
    check_attr(t is None or t != 0, "temperature", t, "must not be 0 (it divides the input)")
    ins, outs = same_shape(a, ins, outs)
    if ins[0] is not None:
        norm_axis(a["axis"], len(ins[0]))
    return ins, outs


def _scaled(a: Attrs, x: np.ndarray) -> np.ndarray:
    t = a["temperature"]
    return x if t is None or t == 1.0 else x / x.dtype.type(t)


def _log_softmax_np(x: np.ndarray, axis: int) -> np.ndarray:
    z = x - x.max(axis=axis, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=axis, keepdims=True))


def _inv_t(a: Attrs) -> float:
    return 1.0 if a.get("temperature") is None else 1.0 / a["temperature"]


def softmax_grad(c, over: dict) -> object:
    """dx of y = softmax: y * (dy - sum(dy * y)) over the softmax axes ``over``; one row op
    (``_softmax_backward``) when that is the input's last axis alone."""
    y, dy = c.outputs[0], c.ograds[0]
    if set(over) == {"axis"} and _last_axis(c, over["axis"]):
        g = c.sym._softmax_backward(y, dy)
    else:
        g = y * (dy - c.sym.sum(dy * y, keepdims=True, **over))
    return g * _inv_t(c.attrs) if _inv_t(c.attrs) != 1.0 else g


def _last_axis(c, axis: int) -> bool:
    """Whether ``axis`` is the last axis of the input of gradient rule ``c``'s node."""
    shape = c.types.shape(c.node.inputs[0]) if c.types is not None and axis >= 0 else None
    return axis == -1 or (shape is not None and axis == len(shape) - 1)


def _log_softmax_grad(c) -> list:
    y, dy = c.outputs[0], c.ograds[0]
    if _last_axis(c, c.attrs["axis"]):  # one row op: one pass over each row, not four
        g = c.sym._softmax_backward(y, dy, log=True)
    else:
        g = dy - c.sym.exp(y) * c.sym.sum(dy, axis=c.attrs["axis"], keepdims=True)
    return [g * _inv_t(c.attrs) if _inv_t(c.attrs) != 1.0 else g]


def _length_shape(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    """softmax: data and output alike; ``length`` is data's shape without ``axis``."""
    if not a["use_length"]:
        return _softmax_shape(a, ins, outs)
    (data,), outs = _softmax_shape(a, ins[:1], outs)
    if data is None:
        return [data, ins[1]], outs
    ax = norm_axis(a["axis"], len(data))
    return [data, tuple(data[:ax]) + tuple(data[ax + 1:])], outs


def _length_type(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    """The length may be of any (integer) dtype; data and output share one."""
    (data,), outs = same_type(a, ins[:1], outs)
    return [data] + list(ins[1:]), outs


def out_dtype(rule: Callable) -> Callable:
    """A softmax dtype rule honouring the ``dtype`` attribute: the output in that dtype, the
    data free (MXNet computes in it and writes it)."""
    def typed(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
        if a.get("dtype") is None:
            return rule(a, ins, outs)
        return list(ins), [np.dtype(a["dtype"])]
    return typed


def in_dtype(compute: Callable) -> Callable:
    """A softmax reference computing in the ``dtype`` attribute when it is given."""
    def run(a: Attrs, xs: list, ctx: RunCtx) -> list:
        if a.get("dtype") is not None:
            xs = [xs[0].astype(a["dtype"])] + list(xs[1:])
        return compute(a, xs, ctx)
    return run


def back_to_input(grad: Callable) -> Callable:
    """A softmax gradient rule converting data's gradient back to data's dtype when the
    ``dtype`` attribute gave the output another one."""
    def rule(c) -> list:
        g = grad(c)
        if c.attrs.get("dtype") is not None:
            g[0] = c.sym._backward_Cast(g[0], c.inputs[0])
        return g
    return rule


def _softmax_compute(a: Attrs, xs: list, ctx: RunCtx) -> list:
    x, axis = _scaled(a, xs[0]), a["axis"] % xs[0].ndim
    if not a["use_length"]:
        return [softmax_np(x, axis)]
    pos = np.arange(x.shape[axis]).reshape((-1,) + (1,) * (x.ndim - axis - 1))
    keep = pos < np.expand_dims(xs[1].astype(np.int64), axis)
    z = np.exp(np.where(keep, x - np.where(keep, x, -np.inf).max(axis, keepdims=True), -np.inf))
    return [(z / np.maximum(z.sum(axis, keepdims=True), 1e-38)).astype(x.dtype)]


register(OpDef(
    "softmax", LENGTH_PARAMS, lambda a: ("data", "length") if a["use_length"] else ("data",),
    _length_shape, in_dtype(_softmax_compute),
    # entries past the length have y = 0, so the usual formula gives them a zero gradient
    back_to_input(lambda c: [softmax_grad(c, {"axis": c.attrs["axis"]})]
                  + [None] * (len(c.inputs) - 1)),
    REDUCE, infer_type=out_dtype(_length_type), lowering=('softmax', {'axis_from': 'attr'}),
    extra={"input_cast_attr": "dtype"},
    doc="exp(x/T) / sum(exp(x/T)) along axis (over the first `length` entries with "
        "use_length)."))
register(OpDef(
    "log_softmax", SOFTMAX_PARAMS, ("data",), _softmax_shape,
    in_dtype(lambda a, xs, ctx: [_log_softmax_np(_scaled(a, xs[0]), a["axis"])]),
    back_to_input(_log_softmax_grad), REDUCE, infer_type=out_dtype(same_type),
    lowering=('softmax', {'axis_from': 'attr', 'log': True}),
    extra={"input_cast_attr": "dtype"},
    doc="log(softmax(x/T)) along axis, computed stably."))

register(OpDef(
    "softmin", SOFTMAX_PARAMS, ("data",), _softmax_shape,
    in_dtype(lambda a, xs, ctx: [softmax_np(-_scaled(a, xs[0]), a["axis"] % xs[0].ndim)]),
    back_to_input(lambda c: [-softmax_grad(c, {"axis": c.attrs["axis"]})]), REDUCE,
    infer_type=out_dtype(same_type), lowering=('softmax', {'axis_from': 'attr', 'negate': True}),
    extra={"input_cast_attr": "dtype"},
    doc="softmax(-x/T) along axis."))


def _softmax_activation(a: Attrs, xs: list, ctx: RunCtx) -> list:
    x = xs[0]
    if a["mode"] == "channel":
        return [softmax_np(x, 1)]
    return [softmax_np(x.reshape(x.shape[0], -1), 1).reshape(x.shape)]


register(OpDef(
    "SoftmaxActivation", {"mode": Param("str", "instance", ("instance", "channel"))},
    ("data",), same_shape, _softmax_activation,
    lambda c: [softmax_grad(c, {"axis": 1} if c.attrs["mode"] == "channel"
                            else {"axis": 0, "exclude": True})],
    REDUCE, lowering=('softmax', {'axis_from': 'mode'}),
    extra={"monitor_inputs": "input"},  # MXNet's monitor calls its input <name>_input0
    doc="Softmax over all but the first axis (instance) or over axis 1 (channel)."))

# -- Dropout ---------------------------------------------------------------------------------------

DROPOUT_PARAMS = {"p": Param("float", 0.5),
                  "mode": Param("str", "training", ("training", "always")),
                  "axes": Param("shape", ()), "cudnn_off": Param("bool", False)}


def _mask_shape(a: Attrs, shape: tuple) -> tuple:
    axes = {check_axis(ax, len(shape)) for ax in a["axes"]}
    return tuple(1 if i in axes else d for i, d in enumerate(shape))


def _dropout_shape(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    data = ins[0] if ins[0] is not None else outs[0]
    if data is None:
        return ins, outs
    if not 0.0 <= a["p"] <= 1.0:
        raise ShapeError(f"p={a['p']} must lie in [0, 1]")
    return [data], [data, _mask_shape(a, data)]


def dropout_mask(p: float, shape: tuple, dtype: np.dtype, ctx: RunCtx) -> np.ndarray:
    """A fresh dropout mask: 0 with probability ``p``, else 1/(1-p) (all 0 when p is 1),
    drawn from the run's generator (``sg.random``'s when the run gives none)."""
    rng = ctx.rng or global_rng.generator()
    keep = rng.random(shape) >= p
    return (keep * (1.0 / (1.0 - p) if p < 1.0 else 0.0 * keep)).astype(dtype)


def _dropout_compute(a: Attrs, xs: list, ctx: RunCtx) -> list:
    x = xs[0]
    shape = _mask_shape(a, x.shape)
    if not (ctx.is_train or a["mode"] == "always") or a["p"] == 0.0:
        return [x.copy(), np.ones(shape, x.dtype)]
    mask = dropout_mask(a["p"], shape, x.dtype, ctx)
    return [x * mask, mask]


register(OpDef(
    "Dropout", DROPOUT_PARAMS, ("data",), _dropout_shape, _dropout_compute,
    lambda c: [c.ograds[0] * c.outputs[1]], OPAQUE,
    outputs=("output", "mask"), num_visible=1, train_dependent=True, lowering="dropout",
    doc="Zeroes each element (or slice along `axes`) with probability p and scales the rest "
        "by 1/(1-p) in training (always with mode='always'); identity otherwise. The mask is "
        "a hidden output; sg.random.seed makes it reproducible."))
