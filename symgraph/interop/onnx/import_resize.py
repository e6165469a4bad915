"""ONNX's Resize (opset 11 on), composed from ``take`` with constant indices.

The spec's interpolation is separable: along each resized axis, output ``i`` is a weighted
sum of a few input positions whose indices and weights depend on the static shapes and the
attributes only. Import works them out in float64 as the spec defines them (coordinate
transform, the n nearest taps in the edge-padded input, nearest / linear / cubic weights,
antialias, exclude_outside, tf_crop_and_resize's extrapolation) and builds, per axis, one
``take`` per tap times its weights. Nearest resizing is one ``take`` per axis, exact for any
dtype; linear and cubic weights need float data.
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from ...core.base import DataError
from .context import ImportCtx, first_const, node_label, op_name
from .import_ops import converter, refuse

TRANSFORMS = ("half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners",
              "asymmetric", "tf_crop_and_resize")


def _text(a: dict, key: str, default: str) -> str:
    v = a.get(key, default)
    return v.decode() if isinstance(v, bytes) else v


def _geometry(c: ImportCtx, node: Any, a: dict, shape: tuple) -> tuple[list, list, list]:
    """Per resized axis: ``(axis, output size, scale)`` lists, from scales or sizes."""
    rank = len(shape)
    axes = [int(v) % rank for v in a.get("axes", range(rank))]
    scales, sizes = first_const(c, node, 2), first_const(c, node, 3)
    if scales is not None and scales.size:
        s = [float(v) for v in np.asarray(scales, np.float32).reshape(-1)]
        outs = [int(np.float64(v) * shape[ax]) for v, ax in zip(s, axes)]
    elif sizes is not None and sizes.size:
        outs = [int(v) for v in np.asarray(sizes).reshape(-1)]
        s = [o / shape[ax] for o, ax in zip(outs, axes)]
        policy = _text(a, "keep_aspect_ratio_policy", "stretch")
        if policy != "stretch":
            one = min(s) if policy == "not_larger" else max(s)
            s = [one] * len(axes)
            outs = [int(one * shape[ax] + 0.5) for ax in axes]
    else:
        raise DataError(f"{node_label(node)}: neither scales nor sizes is given")
    if len(outs) != len(axes) or min(outs, default=1) < 1:
        raise DataError(f"{node_label(node)}: output sizes {outs} for axes {axes} of input "
                        f"{shape}")
    return axes, outs, s


def _source(mode: str, out: int, n: int, s: float, roi: tuple) -> np.ndarray:
    """x_original of every output index along one axis (the spec's coordinate transform;
    its ``output_width`` is ``scale * n``, not the rounded size)."""
    i = np.arange(out, dtype=np.float64)
    width = s * n
    if mode == "align_corners":
        return np.zeros(out) if width == 1 else i * (n - 1) / (width - 1)
    if mode == "asymmetric":
        return i / s
    if mode == "tf_crop_and_resize":
        lo, hi = roi
        x = (np.full(out, (hi - lo) * (n - 1) / 2) if width == 1
             else i * (hi - lo) * (n - 1) / (width - 1))
        return x + lo * (n - 1)
    if mode == "pytorch_half_pixel" and width == 1:
        return np.full(out, -0.5)
    x = (i + 0.5) / s - 0.5
    if mode == "half_pixel_symmetric":
        x += n / 2 * (1 - out / width)
    return x


def _coeffs(kind: str, a: dict, ratio: float, s: float) -> np.ndarray:
    """The spec's weights of the taps around x for ``ratio`` = x - (its left tap) in (0, 1]."""
    if kind == "nearest":
        if ratio == 1:
            return np.array([0.0, 1.0])
        rule = _text(a, "nearest_mode", "round_prefer_floor")
        up = {"round_prefer_floor": ratio > 0.5, "round_prefer_ceil": ratio >= 0.5,
              "floor": False, "ceil": True}[rule]
        return np.array([float(not up), float(up)])
    anti, scale = bool(a.get("antialias", 0)), min(s, 1.0)
    if kind == "linear":
        if not anti:
            return np.array([1 - ratio, ratio])
        start = int(np.floor(-1 / scale) + 1)
        w = np.clip(1 - np.abs((np.arange(start, 2 - start) - ratio) * scale), 0, 1)
        return w / w.sum()
    cubic_a = float(a.get("cubic_coeff_a", -0.75))
    start = int(np.floor(-2 / scale) + 1) if anti else -1
    d = np.abs((np.arange(start, 2 - start) - ratio) * (scale if anti else 1.0))
    w = np.where(d <= 1, (cubic_a + 2) * d ** 3 - (cubic_a + 3) * d ** 2 + 1,
                 np.where(d < 2, cubic_a * (d ** 3 - 5 * d ** 2 + 8 * d - 4), 0.0))
    return w / w.sum() if anti else w


def _taps(kind: str, a: dict, x: np.ndarray, n: int, s: float) -> tuple[np.ndarray, np.ndarray]:
    """``(indices, weights)``, each (out, taps): the spec's n nearest positions of the input
    padded by its edge values (so indices are clamped into [0, n)), with their weights."""
    idx, wts = [], []
    for xo in x:
        base = int(np.ceil(xo)) - 1
        w = _coeffs(kind, a, xo - base, s)
        k, pad = len(w), -(-len(w) // 2)
        first = min(max(base - (k // 2 - 1), -pad), n - 1 + pad - (k - 1))
        pos = np.arange(first, first + k)
        if a.get("exclude_outside", 0) and kind == "cubic":
            w = np.where((pos < 0) | (pos >= n), 0.0, w)
            w = w / w.sum()
        idx.append(np.clip(pos, 0, n - 1))
        wts.append(w)
    return np.array(idx), np.array(wts)


def _along(c: ImportCtx, node: Any, x: Any, axis: int, rank: int, idx: np.ndarray,
           w: np.ndarray, dtype: np.dtype, name: str) -> Any:
    """sum over taps t of take(x, idx[:, t], axis) * w[:, t] (one take when every row picks a
    single position with weight 1, as nearest does)."""
    if np.all(np.isin(w, (0.0, 1.0))) and np.all(w.sum(axis=1) == 1):
        pick = idx[np.arange(len(idx)), np.argmax(w, axis=1)]
        return c.sym.take(x, c.param(f"{name}_index", pick.astype(np.int64)), axis=axis)
    if not np.issubdtype(dtype, np.floating):
        raise refuse(node, f"interpolating {dtype} data (the weights need floats)")
    terms = []
    shape = [1] * rank
    shape[axis] = len(idx)
    for t in range(idx.shape[1]):
        if not np.any(w[:, t]):
            continue
        tap = c.sym.take(x, c.param(f"{name}_index{t}", idx[:, t].astype(np.int64)), axis=axis)
        weight = c.param(f"{name}_weight{t}", w[:, t].reshape(shape).astype(dtype))
        terms.append(c.sym.broadcast_mul(tap, weight))
    return terms[0] if len(terms) == 1 else c.sym.add_n(*terms, num_args=len(terms))


@converter("Resize")
def _resize(c: ImportCtx, node: Any, a: dict) -> Optional[list]:
    """Nearest, linear or cubic resizing along the axes whose size or scale changes."""
    kind, mode = _text(a, "mode", "nearest"), _text(a, "coordinate_transformation_mode",
                                                     "half_pixel")
    if kind not in ("nearest", "linear", "cubic") or mode not in TRANSFORMS:
        raise refuse(node, f"mode={kind} with coordinate_transformation_mode={mode}")
    shape = c.static_shape(node.input[0], node)
    axes, outs, scales = _geometry(c, node, a, shape)
    roi = first_const(c, node, 1)
    roi = np.asarray(roi, np.float64).reshape(-1) if roi is not None and roi.size else None
    x, name = c.get(node.input[0]), op_name(node)
    dtype = c.dtypes.get(node.input[0], np.dtype(np.float32))
    for k, (ax, out, s) in enumerate(zip(axes, outs, scales)):
        pair = (0.0, 1.0) if roi is None else (roi[k], roi[k + len(axes)])
        if out == shape[ax] and s == 1.0 and pair == (0.0, 1.0):
            continue
        src = _source(mode, out, shape[ax], s, pair)
        idx, w = _taps(kind, a, src, shape[ax], s)
        y = _along(c, node, x, ax, len(shape), idx, w, dtype, f"{name}_axis{ax}")
        if mode == "tf_crop_and_resize":
            y = _extrapolate(c, y, src, shape, ax, float(a.get("extrapolation_value", 0.0)),
                             dtype, f"{name}_axis{ax}")
        x = y
    return [c.sym.identity(x, name=name)]


def _extrapolate(c: ImportCtx, y: Any, src: np.ndarray, data: tuple, axis: int,
                 value: float, dtype: np.dtype, name: str) -> Any:
    """tf_crop_and_resize: outputs whose source lies outside the input hold ``value``."""
    outside = (src < 0) | (src > data[axis] - 1)
    if not outside.any():
        return y
    shape = [1] * len(data)
    shape[axis] = len(src)
    keep = c.param(f"{name}_inside", (~outside).reshape(shape).astype(dtype))
    fill = c.param(f"{name}_fill", np.where(outside, value, 0.0).reshape(shape).astype(dtype))
    return c.sym.broadcast_add(c.sym.broadcast_mul(y, keep), fill)
