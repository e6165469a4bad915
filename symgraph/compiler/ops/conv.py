"""Convolution (1-D, 2-D, 3-D; NCW/NCHW/NCDHW data, OIHW weights, or channels last: NWC/NHWC/
NDHWC data, OHWI weights) and its two gradient ops.

``_backward_Convolution_data`` and ``_backward_Convolution_weight`` are registered ops with
gradients of their own, so a convolution can be differentiated twice. The numpy kernels (im2col
+ one GEMM per group) are in ``_window.py``. A channels-last layer is its channels-first layer
with every tensor's channel axis moved (``channels_first``): one shape rule and one numpy
kernel serve both, and its window (``conv_window``) says ``channel_last`` so that cuDNN reads
the data in place. ``passes/channel_last.py`` rewrites 2-D convolutions to NHWC for the CUDA
backend (the layout cuDNN's tensor-core kernels want) and the compiled CPU backend (oneDNN's
kernels read it in place).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any, Callable

import numpy as np

from ...core.attrs import Attrs, Param
from ...core.base import ShapeError
from ...core.registry import CONVOLUTION, GEMM, OpDef, RunCtx, register
from ._util import fmt
from ._window import conv_data_grad, conv_forward, conv_weight_grad, dilated
from .geometry import ConvWindow

Shape = tuple[int, ...]

CONV_PARAMS = {
    "kernel": Param("shape"), "stride": Param("shape", ()), "dilate": Param("shape", ()),
    "pad": Param("shape", ()), "num_filter": Param("int"), "num_group": Param("int", 1),
    "workspace": Param("int", 1024), "no_bias": Param("bool", False),
    "cudnn_tune": Param("str?", None), "cudnn_off": Param("bool", False),
    "layout": Param("str?", None, doc="Data layout: None (the default), NCW, NCHW or NCDHW put "
                    "the channels on axis 1; NWC, NHWC or NDHWC put them last (weights then "
                    "O,k...,C/num_group). Its rank must be the kernel's."),
}
FIRST_ONLY_LAYOUT = Param("str?", None, doc="Data layout: None (the default), NCW, NCHW or "
                          "NCDHW, channels on axis 1, the rank of the kernel; channels-last "
                          "layouts are refused (a Convolution takes them).")
"""``layout`` of the ops that compute channels first only (Deconvolution)."""
LAYOUTS = {1: "NCW", 2: "NCHW", 3: "NCDHW"}
CHANNEL_LAST = {1: "NWC", 2: "NHWC", 3: "NDHWC"}


def channel_last(a: Attrs) -> bool:
    """Whether a Convolution's data, weight and output put the channels last (NHWC, ...)."""
    return a["layout"] is not None and a["layout"] == CHANNEL_LAST.get(len(a["kernel"]))


@lru_cache(maxsize=1024)
def first_attrs(a: Attrs) -> Attrs:
    """The attrs of the channels-first layer a channels-last one is computed as."""
    return Attrs({**a, "layout": None})


def to_first(shape: Shape) -> Shape:
    """(N, *spatial, C) -> (N, C, *spatial); also (O, *kernel, I) -> (O, I, *kernel)."""
    return (shape[0], shape[-1]) + tuple(shape[1:-1])


def to_last(shape: Shape) -> Shape:
    """The inverse of :func:`to_first`."""
    return (shape[0],) + tuple(shape[2:]) + (shape[1],)


def channels_first(rule: Callable, is_last: Callable[[Attrs], bool] = channel_last
                   ) -> Callable:
    """A shape rule (``kind='shape'``) or numpy compute (``kind='compute'``) of a
    channels-first layer, made to take channels-last attrs too (``is_last``: whether attrs
    put the channels last): every tensor of the layout's rank (data, weight, output, their
    gradients; not the bias) has its channel axis moved first, the rule runs on the
    channels-first attrs, and its results move back."""
    def run(a: Attrs, ins: list, third: Any) -> Any:
        if not is_last(a):
            return rule(a, ins, third)
        rank = len(a["layout"])
        if isinstance(third, RunCtx):  # a compute: arrays in, arrays out
            xs = [np.moveaxis(x, -1, 1) if x.ndim == rank else x for x in ins]
            return [np.ascontiguousarray(np.moveaxis(y, 1, -1)) if y.ndim == rank else y
                    for y in rule(first_attrs(a), xs, third)]

        def move(shapes: list, fn: Callable) -> list:
            return [fn(s) if s is not None and len(s) == rank else s for s in shapes]
        ins, outs = rule(first_attrs(a), move(ins, to_first), move(third, to_first))
        return move(ins, to_last), move(outs, to_last)
    run.__doc__ = rule.__doc__
    return run


@dataclass(frozen=True)
class Geometry:
    """Kernel, stride, dilation and padding, each one entry per spatial axis: what the attrs
    alone decide (a partial data shape gets no further; :func:`conv_window` does)."""

    kernel: Shape
    stride: Shape
    dilate: Shape
    pad: Shape
    groups: int

    def out(self, spatial: Shape) -> Shape:
        """Output spatial shape; ShapeError when the dilated kernel exceeds the padded input."""
        ext = dilated(self.kernel, self.dilate)
        padded = tuple(s + 2 * p for s, p in zip(spatial, self.pad))
        if any(e > p for e, p in zip(ext, padded)):
            raise ShapeError(f"kernel {self.kernel} (dilated {ext}) is larger than the padded "
                             f"input {padded} (input {tuple(spatial)}, pad {self.pad})")
        return tuple((p - e) // s + 1 for p, e, s in zip(padded, ext, self.stride))


def conv_per_axis(a: Attrs, key: str, n: int, default: int) -> Shape:
    v = a[key]
    if not v:
        return (default,) * n
    if len(v) != n:
        raise ShapeError(f"{key}={v} has {len(v)} entries, kernel {a['kernel']} has {n}")
    if key != "pad" and min(v) < 1 or key == "pad" and min(v) < 0:
        raise ShapeError(f"{key}={v} out of range")
    return tuple(v)


def geometry(a: Attrs) -> Geometry:
    """The checked geometry of a Convolution-like op's attrs."""
    n = len(a["kernel"])
    if n not in LAYOUTS:
        raise ShapeError(f"kernel {a['kernel']}: only 1-D, 2-D and 3-D are supported")
    if min(a["kernel"]) < 1:
        raise ShapeError(f"kernel {a['kernel']} must be positive")
    if a["layout"] not in (None, LAYOUTS[n]):
        raise ShapeError(f"layout {a['layout']} is not supported; use {LAYOUTS[n]} (a "
                         f"Convolution also takes {CHANNEL_LAST[n]})")
    if a["num_group"] < 1 or a["num_filter"] < 1:
        raise ShapeError(f"num_filter={a['num_filter']} and num_group={a['num_group']} must "
                         f"be positive")
    return Geometry(tuple(a["kernel"]), conv_per_axis(a, "stride", n, 1),
                    conv_per_axis(a, "dilate", n, 1), conv_per_axis(a, "pad", n, 0), a["num_group"])


def check_data(a: Attrs, data: Shape, channels_per: str = "data") -> Geometry:
    """Geometry of ``a`` after checking ``data``'s rank and channel count against it."""
    g = geometry(a)
    if len(data) != 2 + len(g.kernel):
        raise ShapeError(f"{channels_per} {fmt(data)} must be {2 + len(g.kernel)}-D "
                         f"({LAYOUTS[len(g.kernel)]}) for kernel {g.kernel}")
    if data[1] % g.groups or a["num_filter"] % g.groups:
        raise ShapeError(f"{channels_per} channels {data[1]} and num_filter {a['num_filter']} "
                         f"must be divisible by num_group {g.groups}")
    return g


@lru_cache(maxsize=4096)
def conv_window(a: Attrs, data: Shape) -> ConvWindow:
    """The geometry of a Convolution-like node of attrs ``a`` over data of shape ``data``:
    made once per (attrs, shape), so the shape rule, the numpy reference and the lowering of a
    node share one object. Channels-last data (NHWC, ...) gives the window of the same
    convolution with ``channel_last`` set."""
    if channel_last(a):
        return replace(conv_window(first_attrs(a), to_first(data)), channel_last=True)
    g = check_data(a, data)
    return ConvWindow(data[0], data[1], tuple(data[2:]), g.kernel, g.stride, g.pad, g.dilate,
                      g.out(data[2:]), a["num_filter"], g.groups)


def layer_shape(weight_of: Callable, spatial_of: Callable) -> Callable:
    """Shape rule of a convolution-like layer: bias (num_filter,), weight ``weight_of(a, data,
    geometry)``, output (N, num_filter, *spatial_of(a, data)): ``spatial_of`` reads the node's
    window (``conv_window`` / ``deconv_window``), which the lowering later gets from the cache."""
    def rule(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
        ins = list(ins)
        nf = a["num_filter"]
        geometry(a)
        if len(ins) == 3:
            ins[2] = (nf,)
        data = ins[0]
        if data is None:
            return ins, outs
        g = check_data(a, data)
        if 0 in data:  # partial shapes (0 = unknown): only MXNet's convolution rule reads them
            return _partial_layer(a, ins, outs, g, weight_of)
        ins[1] = weight_of(a, data, g)
        return ins, [(data[0], nf) + spatial_of(a, tuple(data))]
    return rule


def _partial_layer(a: Attrs, ins: list, outs: list, g: Geometry, weight_of: Callable
                   ) -> tuple[list, list]:
    """A convolution rule on data with unknown (0) dimensions: the batch and, for stride 1,
    the spatial sizes come back from a known output; the rest stays unknown."""
    data, out = list(ins[0]), outs[0]
    if out is not None and len(out) == len(data):
        data[0] = data[0] or out[0]
        for k, (o, s, e, p) in enumerate(zip(out[2:], g.stride, dilated(g.kernel, g.dilate),
                                              g.pad)):
            if not data[2 + k] and o and s == 1:
                data[2 + k] = o - 1 + e - 2 * p
    ins[0] = tuple(data)
    if data[1]:
        ins[1] = weight_of(a, tuple(data), g)
    spatial = tuple(_out_size(d, s, e, p) for d, s, e, p in
                    zip(data[2:], g.stride, dilated(g.kernel, g.dilate), g.pad))
    return ins, [(data[0], a["num_filter"]) + spatial]


def _out_size(d: int, s: int, e: int, p: int) -> int:
    return 0 if not d else (d + 2 * p - e) // s + 1


conv_shape = layer_shape(lambda a, d, g: (a["num_filter"], d[1] // g.groups) + g.kernel,
                          lambda a, data: conv_window(a, data).out)


def _conv_compute(a: Attrs, xs: list, ctx: RunCtx) -> list:
    bias = None if a["no_bias"] else xs[2]
    return [conv_forward(xs[0], xs[1], conv_window(a, xs[0].shape), bias)]


def bias_grad(c: Any, dy: Any, nsp: int) -> Any:
    """Sum of ``dy`` over every axis but the channel axis (a bias gradient)."""
    if channel_last(c.attrs):
        return c.sym.sum(dy, axis=tuple(range(1 + nsp)))
    return c.sym.sum(dy, axis=(0,) + tuple(range(2, 2 + nsp)))


def layer_inputs(a: Attrs) -> tuple[str, ...]:
    """Convolution-like layers take a bias unless no_bias."""
    return ("data", "weight") if a["no_bias"] else ("data", "weight", "bias")


def layer_grad(data_op: str, weight_op: str) -> Callable:
    """Gradient rule of a convolution-like layer: its data and weight gradient ops
    (``data_op(dy, weight, data)``, ``weight_op(dy, data)``) and the bias gradient."""
    def rule(c: Any) -> list:
        x, w, dy = c.inputs[0], c.inputs[1], c.ograds[0]
        grads = [c.sym.apply_op(data_op, [dy, w, x], c.attrs),
                 c.sym.apply_op(weight_op, [dy, x], c.attrs)]
        if not c.attrs["no_bias"]:
            grads.append(bias_grad(c, dy, len(c.attrs["kernel"])))
        return grads
    return rule


register(OpDef(
    "Convolution", CONV_PARAMS, layer_inputs, channels_first(conv_shape),
    channels_first(_conv_compute),
    layer_grad("_backward_Convolution_data", "_backward_Convolution_weight"), GEMM,
    partial_shapes=True, layout=CONVOLUTION,
    lowering=("convolution", {"call": "forward", "data": 0, "args": (0, 1), "bias": True}),
    doc="N-d convolution (cross-correlation), NC(D)(H)W data, O,C/num_group,k... weights "
        "(layout NWC/NHWC/NDHWC: channels-last data and O,k...,C/num_group weights); im2col + "
        "one GEMM per group on the CPU."))


def _data_grad_shape(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    shape = ins[2] if ins[2] is not None else outs[0]
    if shape is None:
        return ins, outs
    return ins[:2] + [shape], [shape]


def _data_grad_compute(a: Attrs, xs: list, ctx: RunCtx) -> list:
    dy, w, x = xs
    return [conv_data_grad(dy, w, conv_window(a, x.shape))]


def _data_grad_grad(c) -> list:
    S, a = c.sym, c.attrs
    dy, w, gx = c.inputs[0], c.inputs[1], c.ograds[0]
    return [S.Convolution(gx, w, **{**a, "no_bias": True}),
            S._backward_Convolution_weight(dy, gx, **a), None]


register(OpDef(
    "_backward_Convolution_data", CONV_PARAMS, ("ograd", "weight", "data"),
    channels_first(_data_grad_shape), channels_first(_data_grad_compute), _data_grad_grad, GEMM,
    lowering=("convolution", {"call": "data", "data": 2, "args": (1, 0)}),
    doc="Gradient of Convolution w.r.t. its data (a transposed convolution of ograd); "
        "`data` only gives the shape."))


def _weight_grad_shape(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    data = ins[1]
    if data is None:
        return ins, outs
    g = check_data(a, data)
    return ins, [(a["num_filter"], data[1] // g.groups) + g.kernel]


def _weight_grad_compute(a: Attrs, xs: list, ctx: RunCtx) -> list:
    dy, x = xs
    return [conv_weight_grad(dy, x, conv_window(a, x.shape))]


def _weight_grad_grad(c) -> list:
    S, a = c.sym, c.attrs
    dy, x, gw = c.inputs[0], c.inputs[1], c.ograds[0]
    return [S.Convolution(x, gw, **{**a, "no_bias": True}),
            S._backward_Convolution_data(dy, gw, x, **a)]


register(OpDef(
    "_backward_Convolution_weight", CONV_PARAMS, ("ograd", "data"),
    channels_first(_weight_grad_shape), channels_first(_weight_grad_compute), _weight_grad_grad,
    GEMM,
    lowering=("convolution", {"call": "filter", "data": 1, "args": (1, 0)}),
    doc="Gradient of Convolution w.r.t. its weight: ograd x im2col(data)^T."))
