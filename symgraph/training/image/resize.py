"""Resizing HWC images with OpenCV's ``cv::resize`` semantics, as MXNet's ``imresize``.

``interp``: 0 nearest, 1 bilinear, 2 bicubic, 3 area, 4 Lanczos (OpenCV's codes). Nearest
is OpenCV's rule exactly (source index ``floor(dst * src_size / dst_size)``); bilinear is
OpenCV's half-pixel mapping with clamped borders and no antialiasing, computed in float (for
uint8 it can differ from OpenCV's fixed-point rounding by one grey level). Bicubic, area and
Lanczos go through Pillow, whose kernels differ from OpenCV's (docs/mxnet_parity.md).
"""
from __future__ import annotations

import numpy as np

from ...core.base import DataError
from .codec import pillow

__all__ = ["resize", "INTERP_NAMES"]

INTERP_NAMES = {0: "nearest", 1: "bilinear", 2: "bicubic", 3: "area", 4: "lanczos"}


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


def _bilinear(img: np.ndarray, w: int, h: int) -> np.ndarray:
    x0, x1, fx = _linear_taps(img.shape[1], w)
    y0, y1, fy = _linear_taps(img.shape[0], h)
    src = img.astype(np.float64)
    rows = src[y0] * (1.0 - fy)[:, None, None] + src[y1] * fy[:, None, None]
    return rows[:, x0] * (1.0 - fx)[None, :, None] + rows[:, x1] * fx[None, :, None]


def _pillow(img: np.ndarray, w: int, h: int, interp: int) -> np.ndarray:
    Image = pillow()
    method = {2: Image.Resampling.BICUBIC, 3: Image.Resampling.BOX,
              4: Image.Resampling.LANCZOS}[interp]
    mode = "L" if img.dtype == np.uint8 else "F"
    plane_type = np.uint8 if mode == "L" else np.float32
    planes = [np.asarray(Image.fromarray(np.ascontiguousarray(img[:, :, c], plane_type), mode)
                         .resize((w, h), method)) for c in range(img.shape[2])]
    return np.stack(planes, axis=2)


def resize(img: np.ndarray, w: int, h: int, interp: int = 1) -> np.ndarray:
    """``img`` (HxW or HxWxC) resized to width ``w`` and height ``h``, same dtype.

    Example::

        >>> resize(np.zeros((4, 6, 3), np.uint8), 3, 2).shape
        (2, 3, 3)
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
    if interp == 0:
        out = arr[_nearest(arr.shape[0], h)][:, _nearest(arr.shape[1], w)]
    elif interp == 1:
        out = _bilinear(arr, w, h)
    else:
        work = arr if arr.dtype in (np.uint8, np.float32) else arr.astype(np.float32)
        out = _pillow(work, w, h, interp)
    if out.dtype != arr.dtype:
        if np.issubdtype(arr.dtype, np.integer):
            info = np.iinfo(arr.dtype)
            out = np.clip(np.floor(out + 0.5), info.min, info.max)
        out = out.astype(arr.dtype)
    return out[:, :, 0] if flat else out
