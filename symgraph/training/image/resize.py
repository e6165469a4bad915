"""Resizing HWC images with OpenCV's ``cv::resize`` semantics, as MXNet's ``imresize``.

``interp``: 0 nearest, 1 bilinear, 2 bicubic, 3 area, 4 Lanczos (OpenCV's codes). Nearest
is OpenCV's rule exactly (source index ``floor(dst * src_size / dst_size)``); bilinear is
OpenCV's half-pixel mapping with clamped borders and no antialiasing, computed in float (for
uint8 it can differ from OpenCV's fixed-point rounding by one grey level). Bicubic, area and
Lanczos go through Pillow, whose kernels differ from OpenCV's (docs/mxnet_parity.md).
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from ...core.base import DataError
from .codec import pillow

__all__ = ["resize", "INTERP_NAMES"]

INTERP_NAMES = {0: "nearest", 1: "bilinear", 2: "bicubic", 3: "area", 4: "lanczos"}
STRIP_ELEMENTS = 1 << 15  # per strip of bilinear work: 256 KiB of float64 temporaries


def _nearest(src: int, dst: int) -> np.ndarray:
    return np.minimum(np.floor(np.arange(dst) * (src / dst)).astype(np.int64), src - 1)


def _linear_taps(src: int, dst: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Left index, right index and right weight of each output position."""
    pos = (np.arange(dst) + 0.5) * (src / dst) - 0.5
    left = np.floor(pos).astype(np.int64)
    frac = pos - left
    frac[left < 0] = 0.0
    left = np.maximum(left, 0)
    past = left >= src - 1
    frac[past] = 0.0
    left[past] = src - 1
    return left, np.minimum(left + 1, src - 1), frac


def _flat_columns(cols: np.ndarray, channels: int) -> np.ndarray:
    """Indices into a row of HxWxC pixels flattened to H x (W*C) of the columns ``cols``."""
    return (cols[:, None] * channels + np.arange(channels)).ravel()


def _take_columns(img: np.ndarray, flat: np.ndarray) -> np.ndarray:
    """``img[:, cols]`` of an HxWxC array, ``flat`` = ``_flat_columns(cols, C)``: one flat
    ``take`` per row, several times faster than numpy's fancy indexing on the middle axis."""
    h, _, c = img.shape
    return np.ascontiguousarray(img).reshape(h, -1).take(flat, axis=1).reshape(h, -1, c)


def _rounded(values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Float results in ``dtype``: integers rounded half up and clipped to their range."""
    if values.dtype == dtype:
        return values
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        values += 0.5  # in place: the float result is ours alone
        np.floor(values, out=values)
        np.clip(values, info.min, info.max, out=values)
    return values.astype(dtype)


def _bilinear(img: np.ndarray, w: int, h: int, window: tuple) -> np.ndarray:
    """The ``window`` (top, left, height, width) of ``img`` resized to ``w`` x ``h``.

    Float64 throughout, as the plain two-pass formula ``a * (1 - f) + b * f`` (so results are
    bit-identical to it), but only the source columns the window reads are touched, and the
    work goes by strips of output rows into buffers made once: temporaries of a few hundred
    KiB reused, where whole-image ones were fresh pages from the kernel at every call (page
    faults cost more than the arithmetic). Rows are widened by the multiply itself (one pass
    instead of a cast and a multiply), and uint8 is rounded by adding 0.5 and truncating
    (the sum is never negative, so truncation is the floor, and never above 255.5).
    """
    top, left, oh, ow = window
    x0, x1, fx = (t[left:left + ow] for t in _linear_taps(img.shape[1], w))
    y0, y1, fy = (t[top:top + oh] for t in _linear_taps(img.shape[0], h))
    c = img.shape[2]
    lo = int(x0.min())
    src = np.ascontiguousarray(img[:, lo:int(x1.max()) + 1])
    src = src.reshape(src.shape[0], -1)
    x0, x1 = _flat_columns(x0 - lo, c), _flat_columns(x1 - lo, c)
    wx0, wx1 = np.repeat(1.0 - fx, c), np.repeat(fx, c)
    out = np.empty((oh, ow, c), img.dtype)
    flat = out.reshape(oh, ow * c)
    strip = max(1, min(oh, STRIP_ELEMENTS // src.shape[1]))
    upper, lower = np.empty((strip, src.shape[1])), np.empty((strip, src.shape[1]))
    left_part, right_part = np.empty((strip, ow * c)), np.empty((strip, ow * c))
    for r in range(0, oh, strip):
        n = min(strip, oh - r)
        a, b, p, q = upper[:n], lower[:n], left_part[:n], right_part[:n]
        np.multiply(src[y0[r:r + n]], (1.0 - fy[r:r + n])[:, None], out=a)
        np.multiply(src[y1[r:r + n]], fy[r:r + n, None], out=b)
        a += b
        # the indices are in range: "clip" only skips "raise"'s slower path (35% here)
        np.take(a, x0, axis=1, out=p, mode="clip")
        p *= wx0
        np.take(a, x1, axis=1, out=q, mode="clip")
        q *= wx1
        p += q
        if img.dtype == np.uint8:
            p += 0.5
            np.copyto(flat[r:r + n], p, casting="unsafe")
        else:
            flat[r:r + n] = _rounded(p, img.dtype)
    return out


def _pillow(img: np.ndarray, w: int, h: int, interp: int) -> np.ndarray:
    Image = pillow()
    method = {2: Image.Resampling.BICUBIC, 3: Image.Resampling.BOX,
              4: Image.Resampling.LANCZOS}[interp]
    mode = "L" if img.dtype == np.uint8 else "F"
    plane_type = np.uint8 if mode == "L" else np.float32
    planes = [np.asarray(Image.fromarray(np.ascontiguousarray(img[:, :, c], plane_type), mode)
                         .resize((w, h), method)) for c in range(img.shape[2])]
    return np.stack(planes, axis=2)


def _check_window(window: Optional[tuple], w: int, h: int) -> tuple:
    if window is None:
        return (0, 0, h, w)
    top, left, oh, ow = (int(v) for v in window)
    if min(top, left) < 0 or min(oh, ow) <= 0 or top + oh > h or left + ow > w:
        raise DataError(f"imresize: window (top, left, height, width) = {tuple(window)} is "
                        f"not inside the {h}x{w} output")
    return top, left, oh, ow


def resize(img: np.ndarray, w: int, h: int, interp: int = 1,
           window: Optional[tuple] = None) -> np.ndarray:
    """``img`` (HxW or HxWxC) resized to width ``w`` and height ``h``, same dtype; with
    ``window`` = (top, left, height, width), only that part of the result (what a crop
    after the resize keeps, computed without the rest for nearest and bilinear).

    Example::

        >>> resize(np.zeros((4, 6, 3), np.uint8), 3, 2).shape
        (2, 3, 3)
        >>> resize(np.zeros((4, 6, 3), np.uint8), 3, 2, window=(1, 0, 1, 2)).shape
        (1, 2, 3)
    """
    if interp not in INTERP_NAMES:
        raise DataError(f"imresize: unknown interp {interp!r} (0-4, or 9/10 through "
                        f"the image functions)")
    if int(w) <= 0 or int(h) <= 0:
        raise DataError(f"imresize: target size must be positive, got w={w} h={h}")
    arr = np.asarray(img)
    flat = arr.ndim == 2
    if flat:
        arr = arr[:, :, None]
    if arr.ndim != 3 or arr.shape[0] == 0 or arr.shape[1] == 0:
        raise DataError(f"imresize: image must be a non-empty HxW or HxWxC array, got "
                        f"shape {np.asarray(img).shape}")
    w, h = int(w), int(h)
    top, left, oh, ow = _check_window(window, w, h)
    if interp == 0:
        cols = _flat_columns(_nearest(arr.shape[1], w)[left:left + ow], arr.shape[2])
        out = _take_columns(arr[_nearest(arr.shape[0], h)[top:top + oh]], cols)
    elif interp == 1:
        out = _bilinear(arr, w, h, (top, left, oh, ow))
    else:
        work = arr if arr.dtype in (np.uint8, np.float32) else arr.astype(np.float32)
        out = _pillow(work, w, h, interp)[top:top + oh, left:left + ow]
    out = _rounded(out, arr.dtype)
    return out[:, :, 0] if flat else out
