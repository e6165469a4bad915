"""Deconvolution (transposed convolution) with ``adj``/``target_shape``, and its gradient ops.

Weights are (C_in, num_filter/num_group, *kernel) as in MXNet. With ``target_shape`` the
padding is derived from the shapes (MXNet's rule: total = stride*(in-1) + dilated kernel -
target, pad = ceil(total/2), adj = total % 2), so the gradient ops read the data shape at run
time instead of a fixed pad.
"""
from __future__ import annotations

from ..attrs import Attrs, Param
from ..base import ShapeError
from ..registry import GEMM, OpDef, RunCtx, register
from ._window import conv_data_grad, conv_forward, conv_weight_grad, dilated
from .conv import CONV_PARAMS, Geometry, bias_grad, check_data, geometry

Shape = tuple[int, ...]

DECONV_PARAMS = {**CONV_PARAMS, "adj": Param("shape", ()), "target_shape": Param("shape", ())}


def resolve(a: Attrs, spatial: Shape) -> tuple[Geometry, Shape]:
    """(geometry with the effective pad, output spatial shape) for input ``spatial``."""
    g = geometry(a)
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
    return Geometry(g.kernel, g.stride, g.dilate, pad, g.groups), out


def _deconv_shape(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    ins = list(ins)
    nf = a["num_filter"]
    geometry(a)
    if len(ins) == 3:
        ins[2] = (nf,)
    data = ins[0]
    if data is None:
        return ins, outs
    g = check_data(a, data)
    ins[1] = (data[1], nf // g.groups) + g.kernel
    return ins, [(data[0], nf) + resolve(a, data[2:])[1]]


def _deconv_compute(a: Attrs, xs: list, ctx: RunCtx) -> list:
    x, w = xs[0], xs[1]
    g, out = resolve(a, x.shape[2:])
    y = conv_data_grad(x, w, (x.shape[0], a["num_filter"]) + out, g.stride, g.dilate, g.pad,
                       g.groups)
    if not a["no_bias"]:
        y += xs[2].reshape((-1,) + (1,) * len(out))
    return [y]


def _deconv_grad(c) -> list:
    S, a = c.sym, c.attrs
    x, w, dy = c.inputs[0], c.inputs[1], c.ograds[0]
    grads = [S._backward_Deconvolution_data(dy, w, x, **a),
             S._backward_Deconvolution_weight(dy, x, **a)]
    if not a["no_bias"]:
        grads.append(bias_grad(c, dy, len(a["kernel"])))
    return grads


register(OpDef(
    "Deconvolution", DECONV_PARAMS,
    lambda a: ("data", "weight") if a["no_bias"] else ("data", "weight", "bias"),
    _deconv_shape, _deconv_compute, _deconv_grad, GEMM,
    doc="Transposed convolution (the data gradient of Convolution as a layer); weight "
        "(C_in, num_filter/num_group, *kernel); adj or target_shape fix the output size."))


def _like(index: int):
    def rule(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
        return ins, [ins[index]] if ins[index] is not None else outs
    return rule


def _data_grad_compute(a: Attrs, xs: list, ctx: RunCtx) -> list:
    dy, w, x = xs
    g, _ = resolve(a, x.shape[2:])
    return [conv_forward(dy, w, g.stride, g.dilate, g.pad, g.groups, x.shape[2:])]


register(OpDef(
    "_backward_Deconvolution_data", DECONV_PARAMS, ("ograd", "weight", "data"), _like(2),
    _data_grad_compute,
    lambda c: [c.sym.Deconvolution(c.ograds[0], c.inputs[1], **{**c.attrs, "no_bias": True}),
               c.sym._backward_Deconvolution_weight(c.inputs[0], c.ograds[0], **c.attrs), None],
    GEMM, doc="Gradient of Deconvolution w.r.t. its data: a convolution of ograd; `data` "
              "gives the shape."))


def _weight_grad_shape(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    data = ins[1]
    if data is None:
        return ins, outs
    g = check_data(a, data)
    return ins, [(data[1], a["num_filter"] // g.groups) + g.kernel]


def _weight_grad_compute(a: Attrs, xs: list, ctx: RunCtx) -> list:
    dy, x = xs
    g, _ = resolve(a, x.shape[2:])
    return [conv_weight_grad(x, dy, g.kernel, g.stride, g.dilate, g.pad, g.groups)]


register(OpDef(
    "_backward_Deconvolution_weight", DECONV_PARAMS, ("ograd", "data"), _weight_grad_shape,
    _weight_grad_compute,
    lambda c: [c.sym.Deconvolution(c.inputs[1], c.ograds[0], **{**c.attrs, "no_bias": True}),
               c.sym._backward_Deconvolution_data(c.inputs[0], c.ograds[0], c.inputs[1],
                                                  **c.attrs)],
    GEMM, doc="Gradient of Deconvolution w.r.t. its weight."))
