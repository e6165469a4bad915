"""GridGenerator, BilinearSampler and SpatialTransformer (MXNet 1.9.1), NCHW.

A sampling grid holds, per output pixel, the source position normalised to [-1, 1] (x then y
on axis 1). ``GridGenerator`` makes one from an affine matrix (``affine``: (N, 6) times the
target's normalised pixel coordinates) or from a flow field (``warp``: (N, 2, H, W) pixel
offsets). ``BilinearSampler`` reads data at a grid's positions, bilinearly, zero outside;
``SpatialTransformer`` is the two chained (affine, bilinear).

All are compositions (``ops/_composite.py``): the affine grid is one GEMM with the constant
target coordinates; the sampler gathers the four neighbours of each position (``gather_nd``
over (N, H*W, C) rows, so C values move per index) weighted by their bilinear weights times an
in-bounds mask. Coordinates are computed in float32 (exact pixel indices for float16 data),
float64 for float64 data.
Gradients reach data (the gathers' scatter-add) and the grid (the weights'), as in MXNet.

Example::

    grid = sg.sym.GridGenerator(loc, transform_type="affine", target_shape=(32, 32))
    out = sg.sym.BilinearSampler(data, grid)   # == SpatialTransformer(data, loc, (32, 32))
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ...core.attrs import Attrs, Param
from ...core.base import ShapeError
from ...core.registry import GEMM, OPAQUE, OpDef, RunCtx, register
from ._composite import COMPOSED, composite_gradient, composite_unroll, constant
from ._util import check_attr, fmt

TARGET = Param("shape", (0, 0), doc="Output (height, width).")
CUDNN_OFF = Param("str?", None, doc="MXNet's cuDNN switch (no effect: one implementation).")


def _target(a: Attrs) -> tuple[int, int]:
    t = tuple(a["target_shape"])
    check_attr(len(t) == 2 and min(t) > 0, "target_shape", a["target_shape"],
               "give the output (height, width), both > 0")
    return t


def _affine_coords(h: int, w: int) -> np.ndarray:
    """(3, h*w): normalised x, y of each target pixel, and ones (MXNet's grid_dst)."""
    xs = -1.0 + np.arange(w) * (2.0 / (w - 1) if w > 1 else 0.0)
    ys = -1.0 + np.arange(h) * (2.0 / (h - 1) if h > 1 else 0.0)
    return np.stack([np.tile(xs, h), np.repeat(ys, w), np.ones(h * w)])


def _grid_shape(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    if ins[0] is None:
        return ins, outs
    data = tuple(ins[0])
    if a["transform_type"] == "affine":
        if len(data) != 2 or data[1] != 6:
            raise ShapeError(f"data {fmt(data)}: affine expects (batch, 6)")
        return ins, [(data[0], 2) + _target(a)]
    if len(data) != 4 or data[1] != 2:
        raise ShapeError(f"data {fmt(data)}: warp expects a flow field (batch, 2, H, W)")
    return ins, [data]


def _warp_base(h: int, w: int) -> tuple[np.ndarray, np.ndarray]:
    """(2, h, w) pixel coordinates and (2, 1, 1) scales to [-1, 1]."""
    base = np.stack([np.tile(np.arange(w), (h, 1)), np.repeat(np.arange(h)[:, None], w, 1)])
    scale = np.array([2.0 / max(w - 1, 1), 2.0 / max(h - 1, 1)]).reshape(2, 1, 1)
    return base.astype(np.float64), scale


def _grid_np(a: Attrs, xs: list, ctx: RunCtx) -> list:
    x = xs[0].astype(np.float64)
    if a["transform_type"] == "affine":
        h, w = _target(a)
        out = x.reshape(-1, 2, 3) @ _affine_coords(h, w)
        return [out.reshape(x.shape[0], 2, h, w).astype(xs[0].dtype)]
    base, scale = _warp_base(*x.shape[2:])
    return [((x + base) * scale - 1.0).astype(xs[0].dtype)]


def _grid_expand(S: Any, a: Attrs, xs: list, shapes: list, dtypes: list) -> list:
    n, dt = shapes[0][0], dtypes[0]
    if a["transform_type"] == "affine":
        h, w = _target(a)
        y = S.dot(S.Reshape(xs[0], shape=(n * 2, 3)), constant(S, _affine_coords(h, w), dt))
        return [S.Reshape(y, shape=(n, 2, h, w))]
    base, scale = _warp_base(*shapes[0][2:])
    moved = S.broadcast_add(xs[0], S.expand_dims(constant(S, base, dt), axis=0))
    scaled = S.broadcast_mul(moved, S.expand_dims(constant(S, scale, dt), axis=0))
    return [S._minus_scalar(scaled, scalar=1.0)]


register(OpDef(
    "GridGenerator",
    {"transform_type": Param("str", "affine", ("affine", "warp"),
                             doc="affine: (N, 6) matrices; warp: (N, 2, H, W) flow."),
     "target_shape": TARGET},
    ("data",), _grid_shape, _grid_np, composite_gradient(_grid_expand), GEMM,
    lowering=COMPOSED, extra={"unroll": composite_unroll(_grid_expand)},
    doc="A sampling grid (N, 2, H, W) of normalised source positions, from affine matrices "
        "or a flow field."))


def _sampler_shape(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    data, grid = ins
    if data is None or grid is None:
        return ins, outs
    if len(data) != 4:
        raise ShapeError(f"data {fmt(data)}: expected NCHW")
    if len(grid) != 4 or grid[1] != 2 or grid[0] != data[0]:
        raise ShapeError(f"grid {fmt(grid)}: expected ({data[0]}, 2, H, W) for data "
                         f"{fmt(data)}")
    return ins, [tuple(data[:2]) + tuple(grid[2:])]


def _sample_np(data: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """Bilinear samples (float64) at a normalised grid, as MXNet's CPU kernel."""
    h, w = data.shape[2:]
    x = (grid[:, 0].astype(np.float64) + 1.0) * (w - 1) / 2.0
    y = (grid[:, 1].astype(np.float64) + 1.0) * (h - 1) / 2.0
    return sample_pixels_np(data, x, y)


def sample_pixels_np(data: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """(N, C, *x.shape[1:]) bilinear samples (float64) of NCHW ``data`` at pixel positions
    ``x``, ``y`` (N, ...), zero outside, neighbour by neighbour."""
    n, c, h, w = data.shape
    x0, y0 = np.floor(x).astype(np.int64), np.floor(y).astype(np.int64)
    out = np.zeros((n, c) + x.shape[1:])
    batch = np.arange(n).reshape((n,) + (1,) * (x.ndim - 1))
    for dy in (0, 1):
        for dx in (0, 1):
            xi, yi = x0 + dx, y0 + dy
            weight = (1.0 - np.abs(x - xi)) * (1.0 - np.abs(y - yi))
            inside = (xi >= 0) & (xi < w) & (yi >= 0) & (yi < h)
            v = data[batch, :, np.clip(yi, 0, h - 1), np.clip(xi, 0, w - 1)]  # (n, ..., c)
            out += np.moveaxis(v.astype(np.float64) * (weight * inside)[..., None], -1, 1)
    return out


def _corner(S: Any, x0: Any, y0: Any, dx: int, dy: int, h: int, w: int) -> tuple[Any, Any]:
    """Flat position (clipped) and in-bounds mask of one neighbour."""
    xi, yi = S._plus_scalar(x0, scalar=float(dx)), S._plus_scalar(y0, scalar=float(dy))
    inside = (S._greater_equal_scalar(xi, scalar=0.0) * S._lesser_equal_scalar(xi, scalar=w - 1.0)
              * S._greater_equal_scalar(yi, scalar=0.0)
              * S._lesser_equal_scalar(yi, scalar=h - 1.0))
    pos = (S.clip(yi, a_min=0.0, a_max=h - 1.0) * float(w) + S.clip(xi, a_min=0.0,
                                                                     a_max=w - 1.0))
    return pos, inside


def sample(S: Any, data: Any, grid: Any, dshape: tuple, gshape: tuple, dtype: Any) -> Any:
    """BilinearSampler's expansion: the grid in pixels, then :func:`sample_pixels`."""
    n, c, h, w = dshape
    p = gshape[2] * gshape[3]
    g = S.Reshape(as_coords(S, grid, dtype), shape=(n, 2, p))
    x = S._mul_scalar(S._plus_scalar(S.Reshape(S.slice_axis(g, axis=1, begin=0, end=1),
                                               shape=(n, p)), scalar=1.0), scalar=(w - 1) / 2.0)
    y = S._mul_scalar(S._plus_scalar(S.Reshape(S.slice_axis(g, axis=1, begin=1, end=2),
                                               shape=(n, p)), scalar=1.0), scalar=(h - 1) / 2.0)
    out = sample_pixels(S, data, x, y, dshape, p, dtype)
    return S.Reshape(out, shape=(n, c) + tuple(gshape[2:]))


def coord_dtype(dtype: Any) -> str:
    """Pixel positions are float64 for float64 data, else float32 (exact for float16's)."""
    return "float64" if np.dtype(dtype) == np.float64 else "float32"


def as_coords(S: Any, x: Any, dtype: Any) -> Any:
    """``x`` (of ``dtype``) in the coordinates' dtype."""
    return x if coord_dtype(dtype) == np.dtype(dtype).name else S.Cast(x, dtype=coord_dtype(dtype))


def sample_pixels(S: Any, data: Any, x: Any, y: Any, dshape: tuple, p: int, dtype: Any) -> Any:
    """(N, C, P) bilinear samples of NCHW ``data`` at pixel positions ``x``, ``y`` (N, P, in
    :func:`coord_dtype`), zero outside: four gathers of (N, P, C) rows, weighted."""
    n, c, h, w = dshape
    x0, y0 = S.floor(x), S.floor(y)
    fx, fy = x - x0, y - y0
    rows = S.transpose(S.Reshape(data, shape=(n, c, h * w)), axes=(0, 2, 1))
    batch = S.expand_dims(constant(S, np.repeat(np.arange(n)[:, None], p, 1),
                                   coord_dtype(dtype)), axis=0)
    out = None
    for dy, wy in ((0, S._rminus_scalar(fy, scalar=1.0)), (1, fy)):
        for dx, wx in ((0, S._rminus_scalar(fx, scalar=1.0)), (1, fx)):
            pos, inside = _corner(S, x0, y0, dx, dy, h, w)
            idx = S.Concat(batch, S.expand_dims(pos, axis=0), dim=0)
            weight = wx * wy * inside
            if coord_dtype(dtype) != np.dtype(dtype).name:
                weight = S.Cast(weight, dtype=np.dtype(dtype).name)
            term = S.broadcast_mul(S.gather_nd(rows, idx), S.expand_dims(weight, axis=2))
            out = term if out is None else out + term
    return S.transpose(out, axes=(0, 2, 1))


def _sampler_expand(S: Any, a: Attrs, xs: list, shapes: list, dtypes: list) -> list:
    return [sample(S, xs[0], xs[1], tuple(shapes[0]), tuple(shapes[1]), dtypes[0])]


register(OpDef(
    "BilinearSampler", {"cudnn_off": CUDNN_OFF},
    ("data", "grid"), _sampler_shape,
    lambda a, xs, ctx: [_sample_np(xs[0], xs[1]).astype(xs[0].dtype)],
    composite_gradient(_sampler_expand), OPAQUE, lowering=COMPOSED,
    extra={"unroll": composite_unroll(_sampler_expand)},
    doc="Bilinear samples of NCHW data at a grid (N, 2, H', W') of positions in [-1, 1] "
        "(x, y), zero outside."))


def _st_shape(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    data, loc = ins
    h, w = _target(a)
    if loc is not None and (len(loc) != 2 or loc[1] != 6):
        raise ShapeError(f"loc {fmt(loc)}: expected (batch, 6) affine matrices")
    if data is None:
        return ins, outs
    if len(data) != 4:
        raise ShapeError(f"data {fmt(data)}: expected NCHW")
    return [tuple(data), (data[0], 6)], [tuple(data[:2]) + (h, w)]


def _st_np(a: Attrs, xs: list, ctx: RunCtx) -> list:
    grid = _grid_np(Attrs({"transform_type": "affine", "target_shape": a["target_shape"]}),
                    [xs[1].astype(np.float64)], ctx)[0]
    return [_sample_np(xs[0], grid).astype(xs[0].dtype)]


def _st_expand(S: Any, a: Attrs, xs: list, shapes: list, dtypes: list) -> list:
    n, (h, w) = shapes[0][0], _target(a)
    grid = S.Reshape(S.dot(S.Reshape(xs[1], shape=(n * 2, 3)),
                           constant(S, _affine_coords(h, w), dtypes[1])), shape=(n, 2, h, w))
    return [sample(S, xs[0], grid, tuple(shapes[0]), (n, 2, h, w), dtypes[0])]


register(OpDef(
    "SpatialTransformer",
    {"target_shape": TARGET,
     "transform_type": Param("str", "affine", ("affine",), doc="Only affine (as MXNet)."),
     "sampler_type": Param("str", "bilinear", ("bilinear",), doc="Only bilinear (as MXNet)."),
     "cudnn_off": CUDNN_OFF},
    ("data", "loc"), _st_shape, _st_np, composite_gradient(_st_expand), OPAQUE,
    lowering=COMPOSED, extra={"unroll": composite_unroll(_st_expand)},
    doc="BilinearSampler(data, GridGenerator(loc, 'affine', target_shape)): an affine warp "
        "of NCHW data to target_shape."))
