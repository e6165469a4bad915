"""MXNet's ``image.resize`` (``_image_resize``): an ``(H, W, C)`` image or ``(N, H, W, C)``
batch resized as OpenCV's ``cv2.resize`` does, nearest (``interp=0``) or bilinear
(``interp=1``, the default; source pixel ``(o + 0.5) * in / out - 0.5``, clamped to the image).

Resizing is separable: each output row is a fixed weighting of input rows, each output column
of input columns, so the composition (``ops/_composite.py``) is two GEMMs with constant
matrices and its gradient the transposed GEMMs (MXNet passes the head gradient through, of the
wrong shape: docs/mxnet_parity.md). Integer images are computed in float32 and rounded.

Example::

    y = sg.nd.image.resize(img, size=(224, 224))          # (width, height)
    z = sg.nd.image.resize(img, size=256, keep_ratio=True)  # the short side to 256
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ...core.attrs import Attrs, Param
from ...core.base import AttrError, ShapeError
from ...core.registry import OPAQUE, OpDef, RunCtx, register
from ._composite import COMPOSED, composite_gradient, composite_unroll, constant
from .image_color import compute_dtype

INTERP = {0: "nearest", 1: "bilinear"}
PARAMS = {
    "size": Param("shape", (), doc="(width, height), or one size for both (or for the short "
                                   "side with keep_ratio)."),
    "keep_ratio": Param("bool", False, doc="With one size: resize the short side to it, "
                                           "keeping the aspect ratio."),
    "interp": Param("int", 1, doc="0 nearest, 1 bilinear (OpenCV's codes; 2-4, area, cubic "
                                  "and Lanczos, are not implemented)."),
}


def out_size(a: Attrs, h: int, w: int) -> tuple[int, int]:
    """MXNet's (height, width) of the resized image."""
    size = tuple(a["size"])
    if len(size) not in (1, 2) or min(size) <= 0:
        raise AttrError(f"_image_resize: size={size}: give (width, height) or one size, "
                        f"each > 0")
    if a["interp"] not in INTERP:
        raise AttrError(f"_image_resize: interp={a['interp']} is not implemented; "
                        f"0 (nearest) and 1 (bilinear) are")
    if len(size) == 2:
        return size[1], size[0]
    if not a["keep_ratio"]:
        return size[0], size[0]
    return (h * size[0] // w, size[0]) if h > w else (size[0], w * size[0] // h)


def _shape(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    data = ins[0]
    if data is None:
        return ins, outs
    if len(data) not in (3, 4):
        raise ShapeError(f"_image_resize: expected an (H, W, C) image or an (N, H, W, C) "
                         f"batch, got shape {tuple(data)}")
    oh, ow = out_size(a, data[-3], data[-2])
    return [tuple(data)], [tuple(data[:-3]) + (oh, ow, data[-1])]


def weights(n_in: int, n_out: int, interp: int) -> np.ndarray:
    """(n_out, n_in) interpolation weights along one axis, OpenCV's rule."""
    scale = n_in / n_out
    o = np.arange(n_out)
    m = np.zeros((n_out, n_in))
    if interp == 0:
        m[o, np.minimum(np.floor(o * scale).astype(np.int64), n_in - 1)] = 1.0
        return m
    src = (o + 0.5) * scale - 0.5
    i0 = np.floor(src).astype(np.int64)
    frac = src - i0
    frac = np.where(i0 < 0, 0.0, np.where(i0 >= n_in - 1, 0.0, frac))
    i0 = np.clip(i0, 0, n_in - 1)
    i1 = np.minimum(i0 + 1, n_in - 1)
    np.add.at(m, (o, i0), 1.0 - frac)
    np.add.at(m, (o, i1), frac)
    return m


def _store(v: np.ndarray, dtype: np.dtype) -> np.ndarray:
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return np.clip(np.rint(v), info.min, info.max).astype(dtype)
    return v.astype(dtype)


def _compute(a: Attrs, xs: list, ctx: RunCtx) -> list:
    x = xs[0]
    h, w = x.shape[-3:-1]
    oh, ow = out_size(a, h, w)
    mh, mw = weights(h, oh, a["interp"]), weights(w, ow, a["interp"])
    y = np.einsum("ph,...hwc,qw->...pqc", mh, x.astype(np.float64), mw)
    return [_store(y, x.dtype)]


def _expand(S: Any, a: Attrs, xs: list, shapes: list, dtypes: list) -> list:
    shape, dtype = tuple(shapes[0]), np.dtype(dtypes[0])
    n, (h, w, c) = (shape[0] if len(shape) == 4 else 1), shape[-3:]
    oh, ow = out_size(a, h, w)
    work = compute_dtype(dtype)
    x = S.Reshape(xs[0], shape=(n, h, w, c))
    x = S.Cast(x, dtype=work) if dtype.kind in "iu" else x
    # rows: (H, N*W*C) -> Mh @ -> (oh, N, W, C)
    y = S.dot(constant(S, weights(h, oh, a["interp"]), work),
              S.Reshape(S.transpose(x, axes=(1, 0, 2, 3)), shape=(h, n * w * c)))
    # columns: (W, N*oh*C) -> Mw @ -> (ow, N, oh, C)
    y = S.Reshape(S.transpose(S.Reshape(y, shape=(oh, n, w, c)), axes=(2, 1, 0, 3)),
                  shape=(w, n * oh * c))
    y = S.dot(constant(S, weights(w, ow, a["interp"]), work), y)
    y = S.transpose(S.Reshape(y, shape=(ow, n, oh, c)), axes=(1, 2, 0, 3))
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        y = S.Cast(S.clip(S.round(y), a_min=float(info.min), a_max=float(info.max)),
                   dtype=dtype.name)
    return [S.Reshape(y, shape=shape[:-3] + (oh, ow, c))]


register(OpDef(
    "_image_resize", PARAMS, ("data",), _shape, _compute, composite_gradient(_expand), OPAQUE,
    lowering=COMPOSED, extra={"unroll": composite_unroll(_expand)},
    doc="Resize an (H, W, C) image or (N, H, W, C) batch to `size` (width, height), as "
        "OpenCV's resize: nearest (interp=0) or bilinear (interp=1)."))
