"""L2Normalization and moments (MXNet 1.9.1): row statistics without gamma and beta.

``L2Normalization`` divides each row by ``norm = sqrt(sum x^2 + eps)`` (a hidden output), a row
being all of a sample (``instance``), one position's channels (``channel``) or one channel's
positions (``spatial``). ``moments`` gives the mean and the biased variance over ``axes``.
Both run as one ``row_norm`` GPU kernel (``ops/rowstats.py`` describes the rows); their
gradients are built from registered ops, in float32 for narrow data.

Example::

    mean, var = sg.sym.moments(sg.sym.var("x"), axes=(0, 2, 3))
"""
from __future__ import annotations

from math import prod

import numpy as np

from ...core.attrs import Attrs, Param
from ...core.base import ShapeError
from ...core.dtypes import compute_dtype
from ...core.registry import OPAQUE, OpDef, RunCtx, register
from ._util import check_attr, fmt, norm_axes
from .rowstats import GradFloat, RowView, data_shape

L2_MODES = ("instance", "channel", "spatial")


def l2_view(a: Attrs, shape: tuple) -> RowView:
    """instance: (N, rest) reducing rest; channel: (N, C, rest) reducing C; spatial: (N, C,
    rest) reducing rest."""
    if a["mode"] == "instance":
        if not shape:
            raise ShapeError("data of 0 axes: L2Normalization needs a batch axis")
        return RowView((shape[0], prod(shape[1:])), (False, True))
    if len(shape) < 3:
        raise ShapeError(f"data {fmt(shape)}: mode={a['mode']!r} needs (N, C, spatial...), "
                         f"at least 3 axes")
    dims = (shape[0], shape[1], prod(shape[2:]))
    return RowView(dims, (False, True, False) if a["mode"] == "channel" else (False, False, True))


def _l2_shape(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    check_attr(a["eps"] >= 0, "eps", a["eps"], "must be >= 0 (it is added to the sum)")
    data = ins[0] if ins[0] is not None else outs[0]
    if data is None:
        return ins, outs
    data = tuple(data)
    return [data], [data, _norm_shape(a, data)]


def _norm_shape(a: Attrs, data: tuple) -> tuple:
    """MXNet's: (N,) for instance, the data's with C as 1 for channel, (N, C) for spatial."""
    l2_view(a, data)
    return {"instance": data[:1], "channel": data[:1] + (1,) + data[2:],
            "spatial": data[:2]}[a["mode"]]


def _l2_compute(a: Attrs, xs: list, ctx: RunCtx) -> list:
    x = xs[0]
    view = l2_view(a, x.shape)
    xv = x.astype(compute_dtype(x.dtype)).reshape(view.dims)
    norm = np.sqrt(np.square(xv).sum(axis=view.axes, keepdims=True) + a["eps"])
    return [(xv / norm).reshape(x.shape).astype(x.dtype), norm.reshape(_norm_shape(a, x.shape)).astype(x.dtype)]


def _l2_grad(c) -> list:
    """dx = (dy - y * sum(dy * y)) / norm over each row."""
    S, f = c.sym, GradFloat(c)
    shape = data_shape(c)
    view = l2_view(c.attrs, shape)
    yv = f.up(S.Reshape(c.outputs[0], shape=view.dims))
    dyv = f.up(S.Reshape(c.ograds[0], shape=view.dims))
    norm = f.up(S.Reshape(c.outputs[1], shape=view.kept_shape))
    dxv = (dyv - yv * S.sum(dyv * yv, axis=view.axes, keepdims=True)) / norm
    return [f.down(S.Reshape(dxv, shape=shape))]


register(OpDef(
    "L2Normalization",
    {"eps": Param("float", 1e-10, doc="Added to the sum of squares before its square root."),
     "mode": Param("str", "instance", L2_MODES, doc="Rows normalised: 'instance': each "
                   "sample; 'channel': each position's channels (axis 1); 'spatial': each "
                   "channel's positions (axes 2...).")},
    ("data",), _l2_shape, _l2_compute, _l2_grad, OPAQUE,
    outputs=("output", "norm"), num_visible=1, lowering=("row_norm", {"kind": "l2",
                                                                      "view": l2_view}),
    doc="x / sqrt(sum of x^2 + eps) over each row given by `mode`; hidden output norm."))


def moments_view(a: Attrs, shape: tuple) -> RowView:
    """``shape`` with runs of neighbouring axes of one kind (reduced or kept) merged."""
    axes = _axes(a, len(shape))
    dims: list[int] = []
    flags: list[bool] = []
    for i, d in enumerate(shape):
        r = i in axes
        if flags and flags[-1] == r:
            dims[-1] *= d
        else:
            dims.append(d)
            flags.append(r)
    return RowView(tuple(dims), tuple(flags))


def _axes(a: Attrs, ndim: int) -> tuple[int, ...]:
    check_attr(a["axes"] is not None and len(a["axes"]) > 0, "axes", a["axes"],
               "give the axes to reduce (MXNet 1.9.1 refuses empty axes; pass every axis "
               "for global moments)")
    return norm_axes(a["axes"], ndim, "axes")


def _moments_shape(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    if ins[0] is None:
        return ins, outs
    data = tuple(ins[0])
    axes = _axes(a, len(data))
    if a["keepdims"]:
        out = tuple(1 if i in axes else d for i, d in enumerate(data))
    else:
        out = tuple(d for i, d in enumerate(data) if i not in axes) or (1,)
    return [data], [out, out]


def _moments_compute(a: Attrs, xs: list, ctx: RunCtx) -> list:
    x = xs[0]
    axes, out = _axes(a, x.ndim), _moments_shape(a, [x.shape], [None, None])[1][0]
    xc = x.astype(compute_dtype(x.dtype))
    mean = xc.mean(axis=axes, keepdims=True)
    var = np.square(xc - mean).mean(axis=axes, keepdims=True)
    return [mean.reshape(out).astype(x.dtype), var.reshape(out).astype(x.dtype)]


def _moments_grad(c) -> list:
    """dx = (dmean + 2 * dvar * (x - mean)) / count."""
    S, f = c.sym, GradFloat(c)
    shape = data_shape(c)
    view = moments_view(c.attrs, shape)
    kept = view.kept_shape
    xv = f.up(S.Reshape(c.inputs[0], shape=view.dims))
    mean = f.up(S.Reshape(c.outputs[0], shape=kept))
    dm = f.up(S.Reshape(c.ograds[0], shape=kept))
    dv = f.up(S.Reshape(c.ograds[1], shape=kept))
    dxv = (dm + dv * (xv - mean) * 2.0) * (1.0 / view.count)
    return [f.down(S.Reshape(dxv, shape=shape))]


register(OpDef(
    "moments",
    {"axes": Param("shape?", None, doc="The axes the moments are computed over (required)."),
     "keepdims": Param("bool", False, doc="Keep the reduced axes with length 1.")},
    ("data",), _moments_shape, _moments_compute, _moments_grad, OPAQUE,
    outputs=("output0", "output1"), lowering=("row_norm", {"kind": "moments",
                                                           "view": moments_view}),
    doc="Mean and (biased) variance of data over `axes`."))
