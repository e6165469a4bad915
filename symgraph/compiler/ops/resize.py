"""``contrib.BilinearResize2D`` and ``contrib.AdaptiveAvgPooling2D`` (MXNet 1.9.1), NCHW.

Both are separable: each output row is a fixed weighting of input rows, each output column of
input columns. Bilinear resizing weighs the two nearest source pixels (MXNet's source index:
``scale * o`` with ``align_corners``, else ``scale * (o + 0.5) - 0.5`` clamped at 0, the scale
computed in float32 as MXNet does); adaptive average pooling averages the bins
``[floor(o * in / out), ceil((o + 1) * in / out))``.

Each is a composition (``ops/_composite.py``): the weights are two constant matrices and the op
is two GEMMs, ``A_h @ x @ A_w^T`` per image, so the gradient is the transposed GEMMs. The numpy
references compute the weights pixel by pixel instead.

Example::

    y = sg.sym.contrib.BilinearResize2D(x, height=64, width=64)
    z = sg.sym.contrib.AdaptiveAvgPooling2D(x, output_size=(7, 7))
"""
from __future__ import annotations

from math import ceil, floor
from typing import Any

import numpy as np

from ...core.attrs import Attrs, Param
from ...core.base import ShapeError
from ...core.registry import GEMM, OpDef, RunCtx, register
from ._composite import COMPOSED, composite_gradient, composite_unroll, constant
from ._util import check_attr, fmt

RESIZE_MODES = ("size", "odd_scale", "like", "to_even_down", "to_even_up", "to_odd_down",
                "to_odd_up")
RESIZE_PARAMS = {
    "height": Param("int", 1, doc="Output height (mode 'size' without scale_height)."),
    "width": Param("int", 1, doc="Output width (mode 'size' without scale_width)."),
    "scale_height": Param("float?", None, doc="Height scale (modes 'size', 'odd_scale')."),
    "scale_width": Param("float?", None, doc="Width scale (modes 'size', 'odd_scale')."),
    "mode": Param("str", "size", RESIZE_MODES, doc="How the output size is chosen: 'size', "
                  "'odd_scale', 'like' (the second input's), or the nearest even/odd size "
                  "below/above."),
    "align_corners": Param("bool", True, doc="Corner pixels' centres map onto each other."),
}


def _scaled(a: Attrs, key: str, size: int) -> int:
    check_attr(a[key] is not None, key, a[key], f"mode={a['mode']!r} needs it")
    s = a[key]
    return int(s * size) if a["mode"] == "size" or size % 2 == 0 else int((size - 1) * s) + 1


def _to_parity(size: int, even: bool, up: bool) -> int:
    if (size % 2 == 0) == even:
        return size
    return size + 1 if up else size - 1


def resized(a: Attrs, data: tuple, like: Any) -> tuple[int, int]:
    """MXNet's output (height, width) of BilinearResize2D."""
    mode, (h, w) = a["mode"], data[2:]
    if mode == "size":
        if a["scale_height"] is None:
            return a["height"], a["width"]
        return _scaled(a, "scale_height", h), _scaled(a, "scale_width", w)
    if mode == "odd_scale":
        return _scaled(a, "scale_height", h), _scaled(a, "scale_width", w)
    if mode == "like":
        return tuple(like[2:4])
    even, up = mode.startswith("to_even"), mode.endswith("up")
    return _to_parity(h, even, up), _to_parity(w, even, up)


def _nchw(shape: Any, what: str) -> None:
    if len(shape) != 4:
        raise ShapeError(f"{what} {fmt(shape)}: expected 4-d NCHW")


def _resize_shape(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    if ins[0] is None or (a["mode"] == "like" and ins[1] is None):
        return ins, outs
    _nchw(ins[0], "data")
    if a["mode"] == "like":
        _nchw(ins[1], "like")
    oh, ow = resized(a, tuple(ins[0]), ins[1] if len(ins) > 1 else None)
    if oh < 1 or ow < 1:
        raise ShapeError(f"data {fmt(ins[0])}: output size ({oh}, {ow}) from {a['mode']!r} "
                         f"is empty")
    return ins, [tuple(ins[0][:2]) + (oh, ow)]


def _source(n_in: int, n_out: int, align: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per output index: the two source indices and the weight of the second (float32 math)."""
    f = np.float32
    if n_out > 1:
        scale = f(n_in - 1) / f(n_out - 1) if align else f(n_in) / f(n_out)
    else:
        scale = f(0)
    o = np.arange(n_out, dtype=f)
    src = scale * o if align else np.maximum(scale * (o + f(0.5)) - f(0.5), f(0))
    i0 = src.astype(np.int64)
    i1 = np.where(i0 < n_in - 1, i0 + 1, i0)
    return i0, i1, (src - i0).astype(np.float64)


def _resize_matrix(n_in: int, n_out: int, align: bool) -> np.ndarray:
    """(n_out, n_in) bilinear weights along one axis."""
    i0, i1, lam = _source(n_in, n_out, align)
    m = np.zeros((n_out, n_in))
    np.add.at(m, (np.arange(n_out), i0), 1.0 - lam)
    np.add.at(m, (np.arange(n_out), i1), lam)
    return m


def _resize_np(a: Attrs, xs: list, ctx: RunCtx) -> list:
    x = xs[0].astype(np.float64)
    oh, ow = _resize_shape(a, [x.shape] + [v.shape for v in xs[1:]], [None])[1][0][2:]
    h0, h1, lh = _source(x.shape[2], oh, a["align_corners"])
    w0, w1, lw = _source(x.shape[3], ow, a["align_corners"])
    lh, lw = lh[:, None], lw[None, :]
    top = x[:, :, h0][..., w0] * (1 - lw) + x[:, :, h0][..., w1] * lw
    bottom = x[:, :, h1][..., w0] * (1 - lw) + x[:, :, h1][..., w1] * lw
    return [(top * (1 - lh) + bottom * lh).astype(xs[0].dtype)]


def separable(S: Any, x: Any, shape: tuple, mh: np.ndarray, mw: np.ndarray, dtype: Any) -> Any:
    """``mh @ image @ mw^T`` for every (n, c) image of NCHW ``x``: two GEMMs."""
    n, c, h, w = shape
    oh, ow = mh.shape[0], mw.shape[0]
    y = S.dot(S.Reshape(x, shape=(n * c * h, w)), constant(S, mw.T, dtype))
    y = S.Reshape(S.transpose(S.Reshape(y, shape=(n * c, h, ow)), axes=(1, 0, 2)),
                  shape=(h, n * c * ow))
    y = S.dot(constant(S, mh, dtype), y)
    return S.transpose(S.Reshape(y, shape=(oh, n, c, ow)), axes=(1, 2, 0, 3))


def _resize_expand(S: Any, a: Attrs, xs: list, shapes: list, dtypes: list) -> list:
    shape = tuple(shapes[0])
    oh, ow = resized(a, shape, shapes[1] if len(shapes) > 1 else None)
    mh = _resize_matrix(shape[2], oh, a["align_corners"])
    mw = _resize_matrix(shape[3], ow, a["align_corners"])
    return [separable(S, xs[0], shape, mh, mw, dtypes[0])]


register(OpDef(
    "_contrib_BilinearResize2D", RESIZE_PARAMS,
    lambda a: ("data", "like") if a["mode"] == "like" else ("data",), _resize_shape,
    _resize_np, composite_gradient(_resize_expand, wrt=(0,)), GEMM, lowering=COMPOSED,
    extra={"unroll": composite_unroll(_resize_expand)},
    doc="Bilinear resizing of NCHW images to the size `mode` chooses (MXNet's source "
        "indices, align_corners by default)."))


def _pool_size(a: Attrs) -> tuple[int, int]:
    size = tuple(a["output_size"] or ())
    check_attr(len(size) <= 2 and all(d >= 1 for d in size), "output_size", a["output_size"],
               "give one size or (height, width), each >= 1")
    return (1, 1) if not size else (size[0], size[-1])


def _pool_shape(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    if ins[0] is None:
        return ins, outs
    _nchw(ins[0], "data")
    return ins, [tuple(ins[0][:2]) + _pool_size(a)]


def _bins(n_in: int, n_out: int) -> list[tuple[int, int]]:
    return [(int(floor(o * n_in / n_out)), int(ceil((o + 1) * n_in / n_out)))
            for o in range(n_out)]


def _pool_matrix(n_in: int, n_out: int) -> np.ndarray:
    m = np.zeros((n_out, n_in))
    for o, (lo, hi) in enumerate(_bins(n_in, n_out)):
        m[o, lo:hi] = 1.0 / (hi - lo)
    return m


def _pool_np(a: Attrs, xs: list, ctx: RunCtx) -> list:
    x = xs[0].astype(np.float64)
    oh, ow = _pool_size(a)
    out = np.empty(x.shape[:2] + (oh, ow))
    for i, (h0, h1) in enumerate(_bins(x.shape[2], oh)):
        for j, (w0, w1) in enumerate(_bins(x.shape[3], ow)):
            out[:, :, i, j] = x[:, :, h0:h1, w0:w1].mean(axis=(2, 3))
    return [out.astype(xs[0].dtype)]


def _pool_expand(S: Any, a: Attrs, xs: list, shapes: list, dtypes: list) -> list:
    shape = tuple(shapes[0])
    oh, ow = _pool_size(a)
    return [separable(S, xs[0], shape, _pool_matrix(shape[2], oh), _pool_matrix(shape[3], ow),
                      dtypes[0])]


register(OpDef(
    "_contrib_AdaptiveAvgPooling2D",
    {"output_size": Param("shape?", None, doc="Output size, or (height, width); empty: 1.")},
    ("data",), _pool_shape, _pool_np, composite_gradient(_pool_expand), GEMM,
    lowering=COMPOSED, extra={"unroll": composite_unroll(_pool_expand)},
    doc="Average pooling of NCHW images into output_size bins (MXNet's floor/ceil bins)."))
