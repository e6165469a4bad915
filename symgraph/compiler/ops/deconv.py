"""Deconvolution (transposed convolution) with ``adj``/``target_shape``, and its gradient ops.

Weights are (C_in, num_filter/num_group, *kernel) as in MXNet. With ``target_shape`` the
padding is derived from the shapes (MXNet's rule: total = stride*(in-1) + dilated kernel -
target, pad = ceil(total/2), adj = total % 2), so the gradient ops read the data shape at run
time instead of a fixed pad.
"""
from __future__ import annotations

from functools import lru_cache

from ...core.attrs import Attrs, Param
from ...core.base import ShapeError
from ...core.registry import GEMM, OpDef, RunCtx, register
from ._window import conv_data_grad, conv_forward, conv_weight_grad, dilated
from ._util import like_input
from .conv import CONV_PARAMS, FIRST_ONLY_LAYOUT, check_data, layer_grad, layer_inputs, layer_shape
from .geometry import ConvWindow

Shape = tuple[int, ...]

# MXNet's Deconvolution has no bias unless asked (no_bias defaults to True, unlike Convolution).
DECONV_PARAMS = {**CONV_PARAMS, "no_bias": Param("bool", True), "adj": Param("shape", ()),
                 "target_shape": Param("shape", ()), "layout": FIRST_ONLY_LAYOUT}


@lru_cache(maxsize=4096)
def deconv_window(a: Attrs, data: Shape) -> tuple[ConvWindow, Shape]:
    """(geometry, adj) of a Deconvolution-like node over data of shape ``data``: the geometry
    is that of the convolution whose data gradient the deconvolution is (its input has the
    deconvolution's output shape, its output is ``data``, its filters are ``data``'s channels)
    with the effective padding; ``adj`` the extra cells after each axis. Made once per (attrs,
    shape), like ``conv.conv_window``."""
    g = check_data(a, data)
    spatial = data[2:]
    n = len(g.kernel)
    ext = dilated(g.kernel, g.dilate)
    natural = tuple(s * (i - 1) + e for s, i, e in zip(g.stride, spatial, ext))
    if a["target_shape"]:
        if len(a["target_shape"]) != n:
            raise ShapeError(f"target_shape {a['target_shape']} needs {n} entries")
        total = tuple(m - t for m, t in zip(natural, a["target_shape"]))
        if min(total) < 0:
            raise ShapeError(f"target_shape {a['target_shape']} is larger than the largest "
                             f"output {natural} of input {tuple(spatial)}")
        pad, adj = tuple((t + 1) // 2 for t in total), tuple(t % 2 for t in total)
    else:
        pad, adj = g.pad, tuple(a["adj"]) or (0,) * n
        if len(adj) != n:
            raise ShapeError(f"adj {adj} needs {n} entries")
    if any(j >= s for j, s in zip(adj, g.stride)):
        raise ShapeError(f"adj {adj} must be smaller than stride {g.stride}")
    out = tuple(m - 2 * p + j for m, p, j in zip(natural, pad, adj))
    if min(out) < 1:
        raise ShapeError(f"output {out} of input {tuple(spatial)} is empty (pad {pad})")
    return ConvWindow(data[0], a["num_filter"], out, g.kernel, g.stride, pad, g.dilate,
                      tuple(spatial), data[1], g.groups), adj


_deconv_shape = layer_shape(lambda a, d, g: (d[1], a["num_filter"] // g.groups) + g.kernel,
                            lambda a, data: deconv_window(a, data)[0].spatial)


def _deconv_compute(a: Attrs, xs: list, ctx: RunCtx) -> list:
    x, w = xs[0], xs[1]
    g = deconv_window(a, x.shape)[0]
    y = conv_data_grad(x, w, g)
    if not a["no_bias"]:
        y += xs[2].reshape((-1,) + (1,) * g.rank)
    return [y]


register(OpDef(
    "Deconvolution", DECONV_PARAMS, layer_inputs, _deconv_shape, _deconv_compute,
    layer_grad("_backward_Deconvolution_data", "_backward_Deconvolution_weight"), GEMM,
    lowering=("convolution", {"call": "data", "data": 0, "args": (1, 0), "bias": True,
                              "transposed": True}),
    doc="Transposed convolution (the data gradient of Convolution as a layer); weight "
        "(C_in, num_filter/num_group, *kernel); adj or target_shape fix the output size."))


def _data_grad_compute(a: Attrs, xs: list, ctx: RunCtx) -> list:
    dy, w, x = xs
    return [conv_forward(dy, w, deconv_window(a, x.shape)[0])]


register(OpDef(
    "_backward_Deconvolution_data", DECONV_PARAMS, ("ograd", "weight", "data"), like_input(2),
    _data_grad_compute,
    lambda c: [c.sym.Deconvolution(c.ograds[0], c.inputs[1], **{**c.attrs, "no_bias": True}),
               c.sym._backward_Deconvolution_weight(c.inputs[0], c.ograds[0], **c.attrs), None],
    GEMM, lowering=("convolution", {"call": "forward", "data": 2, "args": (0, 1),
                                    "transposed": True}),
    doc="Gradient of Deconvolution w.r.t. its data: a convolution of ograd; `data` "
              "gives the shape."))


def _weight_grad_shape(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    data = ins[1]
    if data is None:
        return ins, outs
    g = check_data(a, data)
    return ins, [(data[1], a["num_filter"] // g.groups) + g.kernel]


def _weight_grad_compute(a: Attrs, xs: list, ctx: RunCtx) -> list:
    dy, x = xs
    return [conv_weight_grad(x, dy, deconv_window(a, x.shape)[0])]


register(OpDef(
    "_backward_Deconvolution_weight", DECONV_PARAMS, ("ograd", "data"), _weight_grad_shape,
    _weight_grad_compute,
    lambda c: [c.sym.Deconvolution(c.inputs[1], c.ograds[0], **{**c.attrs, "no_bias": True}),
               c.sym._backward_Deconvolution_data(c.inputs[0], c.ograds[0], c.inputs[1],
                                                  **c.attrs)],
    GEMM, lowering=("convolution", {"call": "filter", "data": 1, "args": (0, 1),
                                    "transposed": True}),
    doc="Gradient of Deconvolution w.r.t. its weight."))
