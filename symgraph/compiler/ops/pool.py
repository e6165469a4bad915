"""Pooling (max/avg/sum; 1-D, 2-D, 3-D; valid/full/same conventions; channels first or last)
and its backward ops.

``_backward_Pooling`` scatters the output gradient back (max: to the first maximum of each
window, as MXNet), ``_pooling_gather`` is its adjoint, so pooling differentiates twice. Loops
run over kernel offsets only, each one a vectorised pass over every window. Channels-last data
(``layout='NHWC'``, ...) is pooled as its channels-first transpose by the numpy reference
(``conv.channels_first``); the compiled CPU backend pools it in place, and the CPU backend's
layout pass (``passes/channel_last``) keeps a convolution's NHWC output NHWC through them.
"""
from __future__ import annotations

from dataclasses import replace
from functools import lru_cache
from math import ceil
from typing import Iterator

import numpy as np

from ...core.attrs import Attrs, Param
from ...core.base import ShapeError
from ...core.registry import OPAQUE, WINDOW, OpDef, RunCtx, register
from ._util import check_attr, fmt, like_input
from ._window import inner, offsets, pad_spatial
from .conv import CHANNEL_LAST, LAYOUTS, channels_first, first_attrs, to_first
from .geometry import PoolWindow

Shape = tuple[int, ...]

POOL_PARAMS = {
    "kernel": Param("shape", ()), "pool_type": Param("str", "max", ("max", "avg", "sum")),
    "global_pool": Param("bool", False), "cudnn_off": Param("bool", False),
    "pooling_convention": Param("str", "valid", ("valid", "full", "same")),
    "stride": Param("shape", ()), "pad": Param("shape", ()),
    "count_include_pad": Param("bool", True),
    "layout": Param("str?", None, doc="Data layout: None (the default), NCW, NCHW or NCDHW put "
                    "the channels on axis 1; NWC, NHWC or NDHWC put them last. Its rank must be "
                    "the data's."),
}


def pool_last(a: Attrs) -> bool:
    """Whether a Pooling-like node's data and output put the channels last (NHWC, ...)."""
    return a["layout"] is not None and a["layout"] in CHANNEL_LAST.values()


@lru_cache(maxsize=4096)
def pool_window(a: Attrs, data: Shape) -> PoolWindow:
    """The geometry of a Pooling-like node of attrs ``a`` over data of shape ``data``
    (channels-last data: the window of its channels-first transpose, ``channel_last`` set);
    ShapeError when they do not fit. Made once per (attrs, shape), so the shape rule, the
    numpy reference and the lowering of a node share one object."""
    nsp = len(data) - 2
    if nsp not in (1, 2, 3):
        raise ShapeError(f"data {fmt(data)} must be 3-D, 4-D or 5-D")
    if a["layout"] not in (None, LAYOUTS[nsp], CHANNEL_LAST[nsp]):  # never reinterpret
        raise ShapeError(f"layout {a['layout']} is not supported for {nsp}-D pooling of data "
                         f"{fmt(data)}; use {LAYOUTS[nsp]} or {CHANNEL_LAST[nsp]}")
    if pool_last(a):
        return replace(pool_window(first_attrs(a), to_first(data)), channel_last=True)
    kind = (a["pool_type"], a["count_include_pad"])
    if a["global_pool"]:
        return PoolWindow(data[0], data[1], tuple(data[2:]), tuple(data[2:]), (1,) * nsp,
                          (0,) * nsp, (1,) * nsp, (1,) * nsp, *kind)
    kernel = tuple(a["kernel"])
    stride = tuple(a["stride"]) or (1,) * nsp
    pad = tuple(a["pad"]) or (0,) * nsp
    if a["pooling_convention"] == "same":
        return PoolWindow(data[0], data[1], tuple(data[2:]), *_same(data, kernel, stride, pad),
                          *kind)
    if not len(kernel) == len(stride) == len(pad) == nsp:
        raise ShapeError(f"kernel {kernel}, stride {stride} and pad {pad} need {nsp} entries "
                         f"each for data {fmt(data)}")
    if min(kernel) < 1 or min(stride) < 1 or min(pad) < 0:
        raise ShapeError(f"kernel {kernel}, stride {stride}, pad {pad} out of range")
    # A window lying wholly in the padding has no input cell (max pooling would give -inf).
    check_attr(all(p < k for p, k in zip(pad, kernel)), "pad", pad,
               f"must be smaller than kernel {kernel} in every axis (as MXNet requires)")
    padded = tuple(s + 2 * p for s, p in zip(data[2:], pad))
    if any(k > p for k, p in zip(kernel, padded)):
        raise ShapeError(f"kernel {kernel} is larger than the padded input {padded} "
                         f"(input {tuple(data[2:])}, pad {pad})")
    rnd = (lambda v: v // 1) if a["pooling_convention"] == "valid" else ceil
    out = tuple(int(rnd((p - k) / s)) + 1 for p, k, s in zip(padded, kernel, stride))
    return PoolWindow(data[0], data[1], tuple(data[2:]), kernel, stride, pad, (1,) * nsp, out,
                      *kind)


def _same(data: Shape, kernel: Shape, stride: Shape, pad: Shape) -> tuple:
    """(kernel, stride, pad, dilate, out) of MXNet's ``same`` convention (the padding after
    the input follows from them: ``PoolWindow.after``)."""
    # MXNet's ``same`` convention, for 1-D data only as in MXNet 1.9.1: ceil(size / stride)
    # windows starting at i * stride, the last ones running into padding after the input (an
    # average divides by the cells inside it). ``pad`` must be zeros (MXNet: "Same pooling
    # convention disables the use of pad parameter"; it reads only the first entry).
    if len(data) != 3:
        raise ShapeError(f"pooling_convention='same' takes 3-D data (batch, channel, x), as "
                         f"MXNet 1.9.1; got {fmt(data)}")
    check_attr(not any(pad), "pad", pad, "must be 0 with pooling_convention='same'")
    if len(kernel) != 1 or len(stride) != 1 or min(kernel + stride) < 1:
        raise ShapeError(f"kernel {kernel} and stride {stride} need one positive entry each "
                         f"for data {fmt(data)}")
    return kernel, stride, (0,), (1,), (-(-data[2] // stride[0]),)


def _pool_shape(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    if ins[0] is None:
        return ins, outs
    if not a["global_pool"] and not a["kernel"]:
        raise ShapeError("kernel is required unless global_pool=True")
    data = tuple(ins[0])
    g = pool_window(a, data)
    return ins, [(data[0],) + g.out + data[-1:] if g.channel_last else data[:2] + g.out]


def _padded(x: np.ndarray, a: Attrs, value: float) -> tuple[np.ndarray, PoolWindow]:
    """``x`` padded so every window of the output lies inside; and the node's geometry."""
    g = pool_window(a, x.shape)
    return pad_spatial(x, g.pad, g.after, value), g


def _counts(g: PoolWindow, dtype: np.dtype) -> np.ndarray:
    """Divisor of each avg window: cells inside the padded input (count_include_pad) or
    inside the input itself, as MXNet counts them."""
    spatial, pad, after = g.spatial, g.pad, g.after
    region = tuple(s + 2 * p for s, p in zip(spatial, pad)) if g.include_pad else spatial
    lead = pad if not g.include_pad else (0,) * len(pad)
    ones = pad_spatial(np.ones((1, 1) + tuple(region), dtype), lead,
                       tuple(s + p + q - r - b for s, p, q, r, b
                             in zip(spatial, pad, after, region, lead)))
    total = np.zeros((1, 1) + tuple(g.out), dtype)
    for _, index in offsets(g.kernel, g.stride, g.dilate, g.out):
        total += ones[index]
    return np.maximum(total, 1)


def pool_forward(x: np.ndarray, a: Attrs) -> np.ndarray:
    """The numpy reference of Pooling."""
    is_max = a["pool_type"] == "max"
    xp, g = _padded(x, a, -np.inf if is_max else 0.0)
    result = None
    for _, index in offsets(g.kernel, g.stride, g.dilate, g.out):
        if result is None:
            result = xp[index].copy()
        elif is_max:
            np.maximum(result, xp[index], out=result)
        else:
            result += xp[index]
    if a["pool_type"] == "avg":
        result /= _counts(g, x.dtype)
    return result


def _first_max(xp: np.ndarray, y: np.ndarray, g: PoolWindow) -> Iterator[tuple]:
    """For each kernel offset: (index into xp, mask of windows whose first max is there)."""
    taken = np.zeros(y.shape, dtype=bool)
    for _, index in offsets(g.kernel, g.stride, g.dilate, g.out):
        hit = xp[index] == y
        hit &= ~taken
        taken |= hit
        yield index, hit


def pool_backward(a: Attrs, xs: list, ctx: RunCtx) -> list:
    dy, x, y = xs
    is_max = a["pool_type"] == "max"
    xp, g = _padded(x, a, -np.inf if is_max else 0.0)
    dxp = np.zeros(xp.shape, dtype=dy.dtype)
    # Disjoint windows (stride >= kernel) write each input cell at most once: plain stores
    # into strided views, no temporaries; overlapping windows accumulate.
    if is_max:
        for index, hit in _first_max(xp, y, g):
            if g.disjoint:
                np.multiply(dy, hit, out=dxp[index])
            else:
                dxp[index] += dy * hit
    else:
        share = dy / _counts(g, dy.dtype) if a["pool_type"] == "avg" else dy
        for _, index in offsets(g.kernel, g.stride, g.dilate, g.out):
            dxp[index] += share
    return [dxp[inner(g.spatial, g.pad)]]


def _pool_gather(a: Attrs, xs: list, ctx: RunCtx) -> list:
    grad, x, y = xs
    if a["pool_type"] != "max":
        return [pool_forward(grad, a)]
    xp, g = _padded(x, a, -np.inf)
    gp = pad_spatial(grad, g.pad, g.after)
    result = np.zeros(y.shape, dtype=grad.dtype)
    for index, hit in _first_max(xp, y, g):
        np.copyto(result, gp[index], where=hit)
    return [result]


register(OpDef(
    "Pooling", POOL_PARAMS, ("data",), _pool_shape,
    channels_first(lambda a, xs, ctx: [pool_forward(xs[0], a)], pool_last),
    lambda c: [c.sym._backward_Pooling(c.ograds[0], c.inputs[0], c.outputs[0], **c.attrs)],
    OPAQUE, lowering='pooling', epilogue=True, layout=WINDOW,
    doc="Max/avg/sum pooling over 1-3 spatial axes (valid, full or same convention)."))


register(OpDef(
    "_backward_Pooling", POOL_PARAMS, ("ograd", "data", "output"), like_input(1),
    channels_first(pool_backward, pool_last),
    lambda c: [c.sym._pooling_gather(c.ograds[0], c.inputs[1], c.inputs[2], **c.attrs),
               None, None],
    OPAQUE, lowering='pooling_backward', epilogue=True,
    doc="Gradient of Pooling w.r.t. its data (max: to each window's first maximum)."))

register(OpDef(
    "_pooling_gather", POOL_PARAMS, ("grad", "data", "output"), like_input(2),
    channels_first(_pool_gather, pool_last),
    lambda c: [c.sym._backward_Pooling(c.ograds[0], c.inputs[1], c.inputs[2], **c.attrs),
               None, None],
    OPAQUE, lowering='pooling_gather',
    doc="Adjoint of _backward_Pooling: each window's value of `grad` at the position "
                "its output came from (avg/sum: pooling of `grad`)."))

