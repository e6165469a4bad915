"""``_conv_act_pool``: Convolution -> Activation -> non-overlapping max Pooling as one op, and
its parameter gradient ``_backward_conv_act_pool``.

Made by ``cuda/fuse_conv_pool.py`` (before autodiff) for convolutions whose receptive field
is small (few input channels: the first layer of a LeNet-style network). The point is memory
traffic: the convolution's output, the largest tensor of such a network, is never stored. The
forward writes only the pooled map; the backward recomputes the few products of each window
from the input (cheaper than reading a stored map) to find the window's maximum, and reduces
the weight and bias gradients in the same pass, so the map is not stored in the backward
either.

Attributes are Convolution's plus ``act_type`` (an Activation type or None) and
``pool_kernel`` (the pooling window, equal to its stride, no padding, 'valid' rounding).
"""
from __future__ import annotations

from functools import lru_cache
from typing import Any, Callable, Optional

import numpy as np

from ...core import expr as E
from ...core.attrs import Attrs, Param, parse_attrs
from ...core.base import ShapeError
from ...core.registry import NOT_DIFFERENTIABLE, OPAQUE, OpDef, RunCtx, register
from .conv import CONV_PARAMS, conv_shape, conv_window, layer_inputs
from .geometry import ConvPoolWindow
from .elemwise import UNARY
from .pool import POOL_PARAMS, pool_backward, pool_forward
from ._window import conv_forward, conv_weight_grad

# act_type -> derivative as a formula of the activation's output (what the backward kernel
# has at the window's maximum). None is the identity.
ACT_GRAD: dict[Optional[str], Callable[[E.Expr], E.Expr]] = {
    None: lambda y: E.const(1.0),
    "relu": lambda y: E.call("gt", y, 0.0),
    "sigmoid": lambda y: y * (1.0 - y),
    "tanh": lambda y: 1.0 - y * y,
}

Shape = tuple[int, ...]
PARAMS = {**CONV_PARAMS, "act_type": Param("str?", None), "pool_kernel": Param("shape")}

# The chain the op stands for: a convolution, an optional activation (any op with
# ``OpDef.activation`` in ACT_GRAD), then a pooling; ``cuda/fuse_conv_pool`` finds them.
CONVOLUTION, POOLING = "Convolution", "Pooling"
MAX_FIELD = 32
"""Largest input-channels x kernel-area the fused kernels hold per thread (a 3x3 kernel on up to
3 channels); wider convolutions are left to cuDNN."""


def fits_convolution(a: Attrs, data: Optional[Shape]) -> bool:
    """Whether a Convolution with attributes ``a`` over ``data`` can be the chain's first op:
    2-D, ungrouped, undilated NCHW whose receptive field lives in a thread's registers."""
    return (data is not None and len(a["kernel"]) == 2
            and a["num_group"] == 1 and not any(d != 1 for d in a["dilate"])
            and a["layout"] in (None, "NCHW")
            and data[1] * a["kernel"][0] * a["kernel"][1] <= MAX_FIELD)


def pool_window(a: Attrs, conv_out: Shape) -> Optional[tuple[int, int]]:
    """The window of a Pooling (attributes ``a``) the op can stand for, else None: max, 2-D,
    window equal to its stride, no padding, 'valid' rounding (or 'full' on sizes it divides)."""
    k = tuple(a["kernel"])
    if a["pool_type"] != "max" or a["global_pool"] or len(k) != 2 or tuple(a["stride"]) != k:
        return None
    if any(a["pad"]) or a["layout"] not in (None, "NCHW"):
        return None
    if a["pooling_convention"] == "full" and any(o % w for o, w in zip(conv_out[2:], k)):
        return None
    return k


def act_expr(act: Optional[str], z: E.Expr) -> E.Expr:
    """The activation's formula (shared with ``Activation``)."""
    return z if act is None else UNARY[act][0](z)


def pool_attrs(a: Attrs) -> Attrs:
    """The Pooling attributes the fused op stands for."""
    k = tuple(a["pool_kernel"])
    return parse_attrs(POOL_PARAMS, {"kernel": k, "stride": k, "pool_type": "max"}, "")


def _check(a: Attrs) -> None:
    if a["act_type"] not in ACT_GRAD:
        raise ShapeError(f"act_type {a['act_type']!r} is not one of {list(ACT_GRAD)}")
    if len(a["kernel"]) != 2 or len(a["pool_kernel"]) != 2 or min(a["pool_kernel"]) < 1:
        raise ShapeError(f"kernel {a['kernel']} and pool_kernel {a['pool_kernel']} must be 2-D")
    if a["num_group"] != 1:
        raise ShapeError(f"num_group {a['num_group']}: only 1 is supported")


@lru_cache(maxsize=1024)
def cap_window(a: Attrs, data: Shape) -> ConvPoolWindow:
    """The geometry of a ``_conv_act_pool`` node over data of shape ``data`` (its
    convolution's window, the pooling window, the activation and whether a bias is added),
    made once per (attrs, shape)."""
    g = conv_window(a, data)
    return ConvPoolWindow(g.n, g.c, g.spatial, g.kernel, g.stride, g.pad, g.dilate, g.out,
                          g.filters, g.groups, tuple(a["pool_kernel"]), a["act_type"],
                          not a["no_bias"])


def _shape(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    _check(a)
    ins, conv_out = conv_shape(a, ins, [None])
    if conv_out[0] is None or 0 in ins[0]:  # partial data: the pass only fuses known shapes
        return ins, outs
    g = cap_window(a, tuple(ins[0]))
    if g.oh < g.wh or g.ow < g.ww:
        raise ShapeError(f"pool_kernel {a['pool_kernel']} is larger than the convolution's "
                         f"output {(g.oh, g.ow)}")
    return ins, [(g.n, g.filters, g.qh, g.qw)]


def _maps(a: Attrs, xs: list) -> tuple[np.ndarray, np.ndarray]:
    """(convolution output z, activation output y) of the inputs."""
    x, w = xs[0], xs[1]
    z = conv_forward(x, w, cap_window(a, x.shape), None if a["no_bias"] else xs[2])
    return z, E.evaluate([act_expr(a["act_type"], E.inp(0))], [z], z.dtype)[0]


def _compute(a: Attrs, xs: list, ctx: RunCtx) -> list:
    return [pool_forward(_maps(a, xs)[1], pool_attrs(a))]


def _backward_compute(a: Attrs, xs: list, ctx: RunCtx) -> list:
    """Inputs (ograd, data, weight[, bias]) -> (weight gradient, bias gradient)."""
    dy, x = xs[0], xs[1]
    _, y = _maps(a, xs[1:])
    p = pool_attrs(a)
    dz = pool_backward(p, [dy, y, pool_forward(y, p)], RunCtx())[0]
    dz = dz * E.evaluate([ACT_GRAD[a["act_type"]](E.inp(0))], [y], y.dtype)[0]
    return [conv_weight_grad(dz, x, cap_window(a, x.shape)),
            dz.sum(axis=(0, 2, 3))]


def _gradient(c: Any) -> list:
    """Weight and bias gradients from the fused backward; the data gradient (rarely needed: the
    input of a first layer) from the unfused ops, recomputing the maps."""
    S, a = c.sym, c.attrs
    x, w, dy = c.inputs[0], c.inputs[1], c.ograds[0]
    params = c.sym.apply_op("_backward_conv_act_pool", [dy] + list(c.inputs), a)
    conv = {k: v for k, v in a.items() if k in CONV_PARAMS}
    pool = dict(pool_attrs(a))
    y = S.Convolution(*c.inputs, **conv)
    if a["act_type"] is not None:
        y = S.Activation(y, act_type=a["act_type"])
    dz = S._backward_Pooling(dy, y, S.Pooling(y, **pool), **pool)
    if a["act_type"] is not None:  # Activation's own gradient rule (it reads y only)
        dz = UNARY[a["act_type"]][1](c, None, y, dz)
    dx = S._backward_Convolution_data(dz, w, x, **conv)
    return [dx, params[0]] + ([] if a["no_bias"] else [params[1]])


def _backward_shape(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    fwd_ins, fwd_out = _shape(a, ins[1:], [ins[0]])
    ins = [fwd_out[0]] + list(fwd_ins)
    if fwd_ins[1] is None:
        return ins, outs
    return ins, [fwd_ins[1], (a["num_filter"],)]


register(OpDef(
    "_conv_act_pool", PARAMS, layer_inputs, _shape, _compute, _gradient, OPAQUE,
    lowering="conv_act_pool",
    doc="Convolution, Activation(act_type) and max Pooling(pool_kernel, stride = kernel) in "
        "one op; the convolution's output is never stored (made by the fuse_conv_pool pass)."))

register(OpDef(
    "_backward_conv_act_pool", PARAMS,
    lambda a: ("ograd",) + layer_inputs(a), _backward_shape, _backward_compute,
    NOT_DIFFERENTIABLE, OPAQUE, outputs=("weight_grad", "bias_grad"),
    lowering="conv_act_pool_backward",
    doc="Weight and bias gradients of _conv_act_pool: recomputes each window's products to "
        "find its maximum; one pass over ograd and data."))
