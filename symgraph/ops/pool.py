"""Pooling (max/avg/sum; 1-D, 2-D, 3-D; valid/full/same conventions) and its backward ops.

``_backward_Pooling`` scatters the output gradient back (max: to the first maximum of each
window, as MXNet), ``_pooling_gather`` is its adjoint, so pooling differentiates twice. Loops
run over kernel offsets only, each one a vectorised pass over every window.
"""
from __future__ import annotations

from math import ceil
from typing import Iterator

import numpy as np

from ..attrs import Attrs, Param
from ..base import ShapeError
from ..registry import OPAQUE, OpDef, RunCtx, register
from ._util import check_attr, fmt, like_input
from ._window import inner, offsets, pad_spatial

Shape = tuple[int, ...]

POOL_PARAMS = {
    "kernel": Param("shape", ()), "pool_type": Param("str", "max", ("max", "avg", "sum")),
    "global_pool": Param("bool", False), "cudnn_off": Param("bool", False),
    "pooling_convention": Param("str", "valid", ("valid", "full", "same")),
    "stride": Param("shape", ()), "pad": Param("shape", ()),
    "count_include_pad": Param("bool", True), "layout": Param("str?", None),
}


def _geometry(a: Attrs, data: Shape) -> tuple[Shape, Shape, Shape, Shape]:
    """(kernel, stride, pad, out) for ``data``; ShapeError when they do not fit."""
    nsp = len(data) - 2
    if nsp not in (1, 2, 3):
        raise ShapeError(f"data {fmt(data)} must be 3-D, 4-D or 5-D")
    if a["global_pool"]:
        return tuple(data[2:]), (1,) * nsp, (0,) * nsp, (1,) * nsp
    kernel = tuple(a["kernel"])
    stride = tuple(a["stride"]) or (1,) * nsp
    pad = tuple(a["pad"]) or (0,) * nsp
    if a["pooling_convention"] == "same":
        return _same(data, kernel, stride, pad)
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
    return kernel, stride, pad, out


def _same(data: Shape, kernel: Shape, stride: Shape, pad: Shape) -> tuple:
    """MXNet's ``same`` convention, for 1-D data only as in MXNet 1.9.1: ceil(size / stride)
    windows starting at i * stride, the last ones running into padding after the input (an
    average divides by the cells inside it). ``pad`` must be zeros (MXNet: "Same pooling
    convention disables the use of pad parameter"; it reads only the first entry)."""
    if len(data) != 3:
        raise ShapeError(f"pooling_convention='same' takes 3-D data (batch, channel, x), as "
                         f"MXNet 1.9.1; got {fmt(data)}")
    check_attr(not any(pad), "pad", pad, "must be 0 with pooling_convention='same'")
    if len(kernel) != 1 or len(stride) != 1 or min(kernel + stride) < 1:
        raise ShapeError(f"kernel {kernel} and stride {stride} need one positive entry each "
                         f"for data {fmt(data)}")
    return kernel, stride, (0,), (-(-data[2] // stride[0]),)


def _pool_shape(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    if ins[0] is None:
        return ins, outs
    if not a["global_pool"] and not a["kernel"]:
        raise ShapeError("kernel is required unless global_pool=True")
    data = ins[0]
    return ins, [tuple(data[:2]) + _geometry(a, data)[3]]


def _padded(x: np.ndarray, a: Attrs, value: float) -> tuple[np.ndarray, tuple]:
    """``x`` padded so every window of the output lies inside; and the geometry."""
    kernel, stride, pad, out = _geometry(a, x.shape)
    after = tuple(max(p, (o - 1) * s + k - sz - p)
                  for p, o, s, k, sz in zip(pad, out, stride, kernel, x.shape[2:]))
    return pad_spatial(x, pad, after, value), (kernel, stride, pad, out, after)


def _counts(x_shape: Shape, a: Attrs, geo: tuple, dtype: np.dtype) -> np.ndarray:
    """Divisor of each avg window: cells inside the padded input (count_include_pad) or
    inside the input itself, as MXNet counts them."""
    kernel, stride, pad, out, after = geo
    spatial = x_shape[2:]
    region = tuple(s + 2 * p for s, p in zip(spatial, pad)) if a["count_include_pad"] \
        else spatial
    lead = pad if not a["count_include_pad"] else (0,) * len(pad)
    ones = pad_spatial(np.ones((1, 1) + tuple(region), dtype), lead,
                       tuple(s + p + q - r - b for s, p, q, r, b
                             in zip(spatial, pad, after, region, lead)))
    total = np.zeros((1, 1) + tuple(out), dtype)
    for _, index in offsets(kernel, stride, (1,) * len(kernel), out):
        total += ones[index]
    return np.maximum(total, 1)


def pool_forward(x: np.ndarray, a: Attrs) -> np.ndarray:
    """The numpy reference of Pooling."""
    is_max = a["pool_type"] == "max"
    xp, geo = _padded(x, a, -np.inf if is_max else 0.0)
    kernel, stride, _, out, _ = geo
    result = None
    for _, index in offsets(kernel, stride, (1,) * len(kernel), out):
        if result is None:
            result = xp[index].copy()
        elif is_max:
            np.maximum(result, xp[index], out=result)
        else:
            result += xp[index]
    if a["pool_type"] == "avg":
        result /= _counts(x.shape, a, geo, x.dtype)
    return result


def _first_max(xp: np.ndarray, y: np.ndarray, geo: tuple) -> Iterator[tuple]:
    """For each kernel offset: (index into xp, mask of windows whose first max is there)."""
    kernel, stride, _, out, _ = geo
    taken = np.zeros(y.shape, dtype=bool)
    for _, index in offsets(kernel, stride, (1,) * len(kernel), out):
        hit = xp[index] == y
        hit &= ~taken
        taken |= hit
        yield index, hit


def _pool_backward(a: Attrs, xs: list, ctx: RunCtx) -> list:
    dy, x, y = xs
    is_max = a["pool_type"] == "max"
    xp, geo = _padded(x, a, -np.inf if is_max else 0.0)
    kernel, stride, pad, out, _ = geo
    dxp = np.zeros(xp.shape, dtype=dy.dtype)
    # Disjoint windows (stride >= kernel) write each input cell at most once: plain stores
    # into strided views, no temporaries; overlapping windows accumulate.
    disjoint = all(s >= k for s, k in zip(stride, kernel))
    if is_max:
        for index, hit in _first_max(xp, y, geo):
            if disjoint:
                np.multiply(dy, hit, out=dxp[index])
            else:
                dxp[index] += dy * hit
    else:
        g = dy / _counts(x.shape, a, geo, dy.dtype) if a["pool_type"] == "avg" else dy
        for _, index in offsets(kernel, stride, (1,) * len(kernel), out):
            dxp[index] += g
    return [dxp[inner(x.shape[2:], pad)]]


def _pool_gather(a: Attrs, xs: list, ctx: RunCtx) -> list:
    g, x, y = xs
    if a["pool_type"] != "max":
        return [pool_forward(g, a)]
    xp, geo = _padded(x, a, -np.inf)
    gp = pad_spatial(g, geo[2], geo[4])
    result = np.zeros(y.shape, dtype=g.dtype)
    for index, hit in _first_max(xp, y, geo):
        np.copyto(result, gp[index], where=hit)
    return [result]


register(OpDef(
    "Pooling", POOL_PARAMS, ("data",), _pool_shape,
    lambda a, xs, ctx: [pool_forward(xs[0], a)],
    lambda c: [c.sym._backward_Pooling(c.ograds[0], c.inputs[0], c.outputs[0], **c.attrs)],
    OPAQUE, lowering='pooling', epilogue=True,
    doc="Max/avg/sum pooling over 1-3 spatial axes (valid, full or same convention)."))


register(OpDef(
    "_backward_Pooling", POOL_PARAMS, ("ograd", "data", "output"), like_input(1),
    _pool_backward,
    lambda c: [c.sym._pooling_gather(c.ograds[0], c.inputs[1], c.inputs[2], **c.attrs),
               None, None],
    OPAQUE, lowering='pooling_backward', epilogue=True,
    doc="Gradient of Pooling w.r.t. its data (max: to each window's first maximum)."))

register(OpDef(
    "_pooling_gather", POOL_PARAMS, ("grad", "data", "output"), like_input(2),
    _pool_gather,
    lambda c: [c.sym._backward_Pooling(c.ograds[0], c.inputs[1], c.inputs[2], **c.attrs),
               None, None],
    OPAQUE, lowering='pooling_gather',
    doc="Adjoint of _backward_Pooling: each window's value of `grad` at the position "
                "its output came from (avg/sum: pooling of `grad`)."))

