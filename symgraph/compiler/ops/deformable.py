"""``contrib.DeformableConvolution`` and ``contrib.ModulatedDeformableConvolution`` (MXNet
1.9.1; Dai et al. 2017, Zhu et al. 2018), 2-d NCHW.

A convolution whose kernel tap (i, j) at output (ho, wo) reads the data bilinearly at
``(ho * sh - ph + i * dh + dy, wo * sw - pw + j * dw + dx)``, zero outside, the offsets
(dy, dx) coming from ``offset`` (N, 2 * dg * kh * kw, Ho, Wo), laid out (dg, kh * kw, (dy,
dx)) as MXNet's: each of the ``num_deformable_group`` channel groups has its own offsets. The
modulated form multiplies each sample by ``mask`` (N, dg * kh * kw, Ho, Wo).

The borders follow MXNet's two kernels, which differ: the modulated op (v2) interpolates
with zero outside the image; the plain op (v1) samples nothing (zero) at a position outside
``[0, H) x [0, W)`` and, inside it, clamps a position past the last row or column to it, so a
sample in the last pixel's cell replicates the edge instead of fading to zero.

A composition (``ops/_composite.py``): the columns of every tap come from one bilinear
sampling of the data (``sampler.sample_pixels``: four gathers of channel rows, the deformable
groups folded into the batch), then one GEMM per group with the weights, as im2col + GEMM
convolutions do. Gradients reach data, offset, mask, weight and bias as in MXNet.

Example::

    off = sg.sym.Convolution(x, num_filter=18, kernel=(3, 3), pad=(1, 1))
    y = sg.sym.contrib.DeformableConvolution(x, off, num_filter=64, kernel=(3, 3), pad=(1, 1))
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ...core.attrs import Attrs, Param
from ...core.base import ShapeError
from ...core.registry import GEMM, OpDef, RunCtx, register
from ._composite import COMPOSED, composite_gradient, composite_unroll, constant
from ._util import fmt
from .conv import CONV_PARAMS, check_data
from .sampler import as_coords, coord_dtype, sample_pixels, sample_pixels_np

PARAMS = {k: v for k, v in CONV_PARAMS.items() if k not in ("cudnn_tune", "cudnn_off")}
PARAMS["num_deformable_group"] = Param("int", 1, doc="Channel groups with their own offsets.")
MODULATED = {**PARAMS, "im2col_step": Param("int", 64, doc="Images per im2col in MXNet "
                                                          "(unused: one sampling for all).")}


def _inputs(masked: bool) -> Callable[[Attrs], tuple[str, ...]]:
    def names(a: Attrs) -> tuple[str, ...]:
        base = ("data", "offset") + (("mask",) if masked else ()) + ("weight",)
        return base if a["no_bias"] else base + ("bias",)
    return names


def _geometry(a: Attrs, data: tuple) -> tuple[Any, tuple, int]:
    """(conv geometry, output (Ho, Wo), taps) after checking the data and the groups."""
    if len(a["kernel"]) != 2:
        raise ShapeError(f"kernel {a['kernel']}: deformable convolution is 2-d")
    g = check_data(a, data)
    dg = a["num_deformable_group"]
    if dg < 1 or data[1] % dg:
        raise ShapeError(f"data channels {data[1]} must be divisible by "
                         f"num_deformable_group {dg}")
    return g, g.out(data[2:]), g.kernel[0] * g.kernel[1]


def _shape_rule(masked: bool) -> Callable:
    def rule(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
        data = ins[0]
        if data is None:
            return ins, outs
        g, (ho, wo), taps = _geometry(a, tuple(data))
        dg, n = a["num_deformable_group"], data[0]
        if masked and a["num_filter"] % dg:  # MXNet 1.9.1's check, kept for parity
            raise ShapeError(f"num_filter {a['num_filter']} must be divisible by "
                             f"num_deformable_group {dg}")
        want = [tuple(data), (n, 2 * dg * taps, ho, wo)]
        if masked:
            want.append((n, dg * taps, ho, wo))
        want.append((a["num_filter"], data[1] // g.groups) + g.kernel)
        if not a["no_bias"]:
            want.append((a["num_filter"],))
        for name, got, exp in zip(_inputs(masked)(a), ins, want):
            if got is not None and tuple(got) != exp:
                raise ShapeError(f"{name} has shape {fmt(got)}, expected {fmt(exp)} from data "
                                 f"{fmt(data)}")
        return want, [(n, a["num_filter"], ho, wo)]
    return rule


def _taps(a: Attrs, g: Any, out: tuple) -> tuple[np.ndarray, np.ndarray]:
    """(taps, Ho * Wo) undeformed source rows and columns of every kernel tap."""
    (kh, kw), (sh, sw), (dh, dw), (ph, pw) = g.kernel, g.stride, g.dilate, g.pad
    ho, wo = np.meshgrid(np.arange(out[0]), np.arange(out[1]), indexing="ij")
    i, j = np.meshgrid(np.arange(kh), np.arange(kw), indexing="ij")
    rows = (ho.reshape(1, -1) * sh - ph) + (i.reshape(-1, 1) * dh)
    cols = (wo.reshape(1, -1) * sw - pw) + (j.reshape(-1, 1) * dw)
    return rows.astype(np.float64), cols.astype(np.float64)


def _compute(masked: bool) -> Callable:
    def compute(a: Attrs, xs: list, ctx: RunCtx) -> list:
        x = xs[0].astype(np.float64)
        n, c, h, w = x.shape
        g, out, taps = _geometry(a, x.shape)
        dg, p = a["num_deformable_group"], out[0] * out[1]
        rows, cols = _taps(a, g, out)
        off = xs[1].astype(np.float64).reshape(n * dg, taps, 2, p)
        ys, xs_ = rows + off[:, :, 0], cols + off[:, :, 1]
        if masked:
            scale = xs[2].astype(np.float64)
        else:  # v1's border (module docstring)
            scale = (ys >= 0) & (ys < h) & (xs_ >= 0) & (xs_ < w)
            ys, xs_ = np.minimum(ys, h - 1.0), np.minimum(xs_, w - 1.0)
        vals = sample_pixels_np(x.reshape(n * dg, c // dg, h, w), xs_, ys)
        vals = vals * scale.reshape(n * dg, 1, taps, p)  # (n * dg, c // dg, taps, p)
        cols_ = vals.reshape(n, g.groups, c // g.groups * taps, p)
        wt = xs[3 if masked else 2].astype(np.float64).reshape(g.groups, -1, c // g.groups * taps)
        res = np.einsum("gfk,ngkp->ngfp", wt, cols_).reshape(n, a["num_filter"], *out)
        if not a["no_bias"]:
            res = res + xs[-1].astype(np.float64).reshape(1, -1, 1, 1)
        return [res.astype(xs[0].dtype)]
    return compute


def _expand(masked: bool) -> Callable:
    def expand(S: Any, a: Attrs, xs: list, shapes: list, dtypes: list) -> list:
        n, c, h, w = shapes[0]
        g, out, taps = _geometry(a, tuple(shapes[0]))
        dg, p = a["num_deformable_group"], out[0] * out[1]
        rows, cols = _taps(a, g, out)
        off = S.Reshape(as_coords(S, xs[1], dtypes[1]), shape=(n * dg, taps, 2, p))
        cdt = coord_dtype(dtypes[1])
        part = lambda k: S.Reshape(S.slice_axis(off, axis=2, begin=k, end=k + 1),  # noqa: E731
                                   shape=(n * dg, taps, p))
        y = S.broadcast_add(part(0), S.expand_dims(constant(S, rows, cdt), axis=0))
        x = S.broadcast_add(part(1), S.expand_dims(constant(S, cols, cdt), axis=0))
        flat = (n * dg, taps * p)
        scale = xs[2] if masked else None
        if not masked:
            y, x, scale = _v1_border(S, y, x, (h, w), dtypes[0])
        vals = sample_pixels(S, S.Reshape(xs[0], shape=(n * dg, c // dg, h, w)),
                             S.Reshape(x, shape=flat), S.Reshape(y, shape=flat),
                             (n * dg, c // dg, h, w), taps * p, dtypes[0])
        vals = S.broadcast_mul(vals, S.Reshape(scale, shape=(n * dg, 1, taps * p)))
        return [_gemm(S, a, g, vals, xs[3 if masked else 2], None if a["no_bias"] else xs[-1],
                      (n, c) + out, taps)]
    return expand


def _v1_border(S: Any, y: Any, x: Any, hw: tuple, dtype: Any) -> tuple[Any, Any, Any]:
    """v1's positions clamped to the last row and column, and its 0/1 scale of each sample
    (1 inside ``[0, H) x [0, W)``), in ``dtype`` (module docstring)."""
    h, w = float(hw[0]), float(hw[1])
    inside = (S._greater_equal_scalar(y, scalar=0.0) * S._lesser_scalar(y, scalar=h)
              * S._greater_equal_scalar(x, scalar=0.0) * S._lesser_scalar(x, scalar=w))
    if coord_dtype(dtype) != np.dtype(dtype).name:
        inside = S.Cast(inside, dtype=np.dtype(dtype).name)
    return (S._minimum_scalar(y, scalar=h - 1.0), S._minimum_scalar(x, scalar=w - 1.0),
            S.BlockGrad(inside))


def _gemm(S: Any, a: Attrs, g: Any, vals: Any, weight: Any, bias: Any, shape: tuple,
          taps: int) -> Any:
    """Columns (N, C * taps, P) times the weights per group, plus bias: (N, F, Ho, Wo)."""
    n, c, ho, wo = shape
    k, f = c // g.groups * taps, a["num_filter"]
    cols = S.Reshape(S.transpose(S.Reshape(vals, shape=(n, c * taps, ho * wo)), axes=(1, 0, 2)),
                     shape=(c * taps, n * ho * wo))
    wts = S.Reshape(weight, shape=(f, k))
    parts = [S.dot(S.slice_axis(wts, axis=0, begin=i * f // g.groups, end=(i + 1) * f // g.groups),
                   S.slice_axis(cols, axis=0, begin=i * k, end=(i + 1) * k))
             for i in range(g.groups)]
    y = parts[0] if g.groups == 1 else S.Concat(*parts, dim=0)
    y = S.transpose(S.Reshape(y, shape=(f, n, ho, wo)), axes=(1, 0, 2, 3))
    return y if bias is None else S.broadcast_add(y, S.Reshape(bias, shape=(1, f, 1, 1)))


for _name, _masked, _params in (("DeformableConvolution", False, PARAMS),
                                ("ModulatedDeformableConvolution", True, MODULATED)):
    _x = _expand(_masked)
    register(OpDef(
        f"_contrib_{_name}", _params, _inputs(_masked), _shape_rule(_masked), _compute(_masked),
        composite_gradient(_x), GEMM, lowering=COMPOSED, extra={"unroll": composite_unroll(_x)},
        doc="2-d convolution sampling each kernel tap at learned offsets (bilinear, zero "
            "outside)" + (", each sample scaled by mask." if _masked else ".")))
