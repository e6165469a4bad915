"""UpSampling (MXNet's nearest-neighbour form): each input's pixels repeated ``scale`` times
along height and width, several inputs brought to the first one's upsampled size and joined
along the channels (``multi_input_mode='concat'``) or summed (``'sum'``).

The gradient of an input is a sum pooling of its part of the output gradient over
non-overlapping scale x scale windows: registered ops, so it differentiates again.
``sample_type='bilinear'`` is MXNet's: inputs ``data`` (N, C, H, W) and ``weight``
(C, 1, k, k), a depthwise Deconvolution with kernel ``k = 2 * scale - scale % 2``, stride
``scale`` and pad ``ceil((scale - 1) / 2)``; it is that composition (``_composite``: its
gradient, and on the GPU its kernels, are the Deconvolution's), the weight learned or set by
the ``Bilinear`` initializer.
"""
from __future__ import annotations

import numpy as np

import math
from typing import Any

from ...core.attrs import Attrs, Param, parse_attrs
from ...core.base import ShapeError
from ...core.registry import OPAQUE, OpDef, RunCtx, get_op, register
from ._composite import composite_gradient, composite_unroll
from ._util import check_attr, fmt
from .deconv import DECONV_PARAMS

Shape = tuple[int, ...]

UPSAMPLING_PARAMS = {
    "scale": Param("int", doc="upsampling factor of the first input (height and width)"),
    "num_filter": Param("int", 0, doc="bilinear only (input channels); unused by nearest"),
    "sample_type": Param("str", "nearest", ("nearest", "bilinear"),
                         doc="nearest, or bilinear (a depthwise Deconvolution by `weight`)"),
    "multi_input_mode": Param("str", "concat", ("concat", "sum"),
                              doc="how several inputs combine: along channels, or summed"),
    "num_args": Param("int", 1, doc="number of inputs"),
    "workspace": Param("int", 512, doc="ignored (MXNet's)"),
}


def _scales(a: Attrs, shapes: list) -> list[int]:
    """Per input, its factor: the first input's size times ``scale``, over its own size."""
    check_attr(a["scale"] >= 1, "scale", a["scale"], "must be >= 1")
    first = shapes[0]
    if len(first) != 4:
        raise ShapeError(f"UpSampling takes 4-D (N, C, H, W) data, got {fmt(first)}")
    out_hw = (first[2] * a["scale"], first[3] * a["scale"])
    scales = []
    for s in shapes:
        if len(s) != 4 or s[0] != first[0] or any(o % d for o, d in zip(out_hw, s[2:])) \
                or out_hw[0] // s[2] != out_hw[1] // s[3]:
            raise ShapeError(f"input {fmt(s)} cannot be upsampled to {out_hw} like the first "
                             f"input {fmt(first)} by scale {a['scale']}")
        scales.append(out_hw[0] // s[2])
    return scales


def _bilinear(a: Attrs) -> bool:
    return a["sample_type"] == "bilinear"


def _inputs(a: Attrs) -> tuple[str, ...]:
    return ("data", "weight") if _bilinear(a) else tuple(f"arg{i}" for i in range(a["num_args"]))


def deconv_attrs(a: Attrs, channels: int) -> Attrs:
    """The Deconvolution bilinear UpSampling is (MXNet's ``GetDeconvolutionParam``)."""
    s = a["scale"]
    k, pad = 2 * s - s % 2, math.ceil((s - 1) / 2)
    return parse_attrs(DECONV_PARAMS, {"kernel": (k, k), "stride": (s, s), "pad": (pad, pad),
                                       "num_filter": channels, "num_group": channels,
                                       "no_bias": True}, "")


def _bilinear_shape(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    check_attr(a["scale"] >= 1, "scale", a["scale"], "must be >= 1")
    data = ins[0]
    if data is None:
        return ins, outs
    if len(data) != 4:
        raise ShapeError(f"UpSampling takes 4-D (N, C, H, W) data, got {fmt(data)}")
    k = 2 * a["scale"] - a["scale"] % 2
    n, c, h, w = data
    return [data, (c, 1, k, k)], [(n, c, h * a["scale"], w * a["scale"])]


def _bilinear_expand(S: Any, a: Attrs, xs: list, shapes: list, dtypes: list) -> list:
    return [S.Deconvolution(xs[0], xs[1], **deconv_attrs(a, shapes[0][1]))]


def _upsampling_shape(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    if _bilinear(a):
        return _bilinear_shape(a, ins, outs)
    if any(s is None for s in ins):
        return ins, outs
    _scales(a, ins)
    first = ins[0]
    if a["multi_input_mode"] == "sum":
        if any(s[1] != first[1] for s in ins):
            raise ShapeError(f"multi_input_mode='sum' needs one channel count, got "
                             f"{[s[1] for s in ins]}")
        channels = first[1]
    else:
        channels = sum(s[1] for s in ins)
    return ins, [(first[0], channels, first[2] * a["scale"], first[3] * a["scale"])]


def _upsampling(a: Attrs, xs: list, ctx: RunCtx) -> list:
    if _bilinear(a):
        return get_op("Deconvolution").compute(deconv_attrs(a, xs[0].shape[1]), xs, ctx)
    parts = [x.repeat(s, axis=2).repeat(s, axis=3) for x, s in zip(xs, _scales(a, [
        x.shape for x in xs]))]
    if a["multi_input_mode"] == "sum":
        return [np.sum(parts, axis=0).astype(xs[0].dtype)]
    return [np.concatenate(parts, axis=1)]


def _upsampling_grad(c) -> list:
    """Each input's part of the gradient, summed over its scale x scale windows (bilinear:
    the Deconvolution's gradient)."""
    S, a = c.sym, c.attrs
    if _bilinear(a):
        return _BILINEAR_GRAD(c)
    shapes = [c.types.shape(x.outputs_[0]) for x in c.inputs] if c.types is not None else None
    if shapes is None or any(s is None for s in shapes):
        raise ShapeError(f"{c.node.name} (UpSampling): input shapes unknown to autodiff")
    grads, begin = [], 0
    for s, scale in zip(shapes, _scales(a, shapes)):
        part = c.ograds[0]
        if a["multi_input_mode"] == "concat":
            part = S.slice_axis(part, axis=1, begin=begin, end=begin + s[1])
            begin += s[1]
        grads.append(part if scale == 1 else S.Pooling(
            part, kernel=(scale, scale), stride=(scale, scale), pool_type="sum"))
    return grads


_BILINEAR_GRAD = composite_gradient(_bilinear_expand)

register(OpDef(
    "UpSampling", UPSAMPLING_PARAMS, _inputs,
    _upsampling_shape, _upsampling, _upsampling_grad, OPAQUE, variadic="num_args",
    lowering="upsampling_nearest",  # bilinear nodes are unrolled into their Deconvolution
    extra={"unroll": composite_unroll(_bilinear_expand), "unrolls": _bilinear},
    doc="Nearest-neighbour upsampling of (N, C, H, W) inputs by `scale`; several inputs "
        "joined along channels (concat) or summed. Bilinear: a depthwise Deconvolution of "
        "data by `weight` (C, 1, k, k)."))
