"""``imrotate`` / ``random_rotate``: rotate CHW or NCHW float32 images about their centre.

As MXNet 1.9.1: the output keeps the input's size; a pixel samples the input bilinearly at
its rotated position (MXNet's ``BilinearSampler`` convention: corners of the normalised grid
at pixel centres, samples outside the image read zero); ``zoom_in`` scales so that no border
shows, ``zoom_out`` so that the whole input stays visible.
"""
from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from ...runtime import random as _random
from ...core.base import AttrError, DataError, DTypeError
from ...runtime.ndarray import NDArray
from .image import host, to_nd

__all__ = ["imrotate", "random_rotate"]


def _sample(img: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Bilinear samples of CHW ``img`` at pixel coordinates (x, y); outside reads zero."""
    c, h, w = img.shape
    x0, y0 = np.floor(x).astype(np.int64), np.floor(y).astype(np.int64)
    out = np.zeros((c,) + x.shape, np.float64)
    for dy in (0, 1):
        for dx in (0, 1):
            xi, yi = x0 + dx, y0 + dy
            weight = (1 - np.abs(x - xi)) * (1 - np.abs(y - yi))
            inside = (xi >= 0) & (xi < w) & (yi >= 0) & (yi < h)
            vals = img[:, np.clip(yi, 0, h - 1), np.clip(xi, 0, w - 1)]
            out += np.where(inside, weight, 0.0) * vals
    return out


def _zoom(h: int, w: int, rad: float, zoom_in: bool, zoom_out: bool) -> float:
    """The grid scale that keeps the rotated image inside (zoom_in) or around (zoom_out)."""
    if not (zoom_in or zoom_out):
        return 1.0
    rho, corner = np.hypot(h, w), np.arctan(h / w)
    xs = [abs(rho * np.cos(corner + s * abs(rad))) for s in (1, -1)]
    ys = [abs(rho * np.sin(corner + s * abs(rad))) for s in (1, -1)]
    if zoom_out:
        return max(max(xs) / w, max(ys) / h)
    return min(w / max(xs), h / max(ys))


def _rotate_one(img: np.ndarray, degrees: float, zoom_in: bool, zoom_out: bool) -> np.ndarray:
    _, h, w = img.shape
    rad = np.pi * degrees / 180.0
    hs, ws = (h - 1) / 2.0, (w - 1) / 2.0
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float64)
    yy, xx = yy - hs, xx - ws
    scale = _zoom(h, w, rad, zoom_in, zoom_out)
    # rotate the centred grid, normalise to [-1, 1] per axis, then back to pixels
    gx = (xx * np.cos(rad) - yy * np.sin(rad)) / ws * scale
    gy = (xx * np.sin(rad) + yy * np.cos(rad)) / hs * scale
    return _sample(img, (gx + 1) * (w - 1) / 2, (gy + 1) * (h - 1) / 2)


def imrotate(src: Any, rotation_degrees: Any, zoom_in: bool = False,
             zoom_out: bool = False) -> NDArray:
    """Rotate a CHW image (scalar angle) or an NCHW batch (a scalar or one angle per
    image), in degrees, counter-clockwise as MXNet.

    Example::

        >>> sg.image.imrotate(sg.nd.ones((3, 4, 6)), 90).shape
        (3, 4, 6)
    """
    if zoom_in and zoom_out:
        raise DataError("imrotate: zoom_in and zoom_out cannot both be True")
    img = host(src)
    if img.dtype != np.float32:
        raise DTypeError(f"imrotate: only float32 images are supported, got {img.dtype}")
    single = img.ndim == 3
    if single and not isinstance(rotation_degrees, numbers.Number):
        raise AttrError("imrotate: a single image needs a scalar rotation angle, got "
                        f"{type(rotation_degrees).__name__}")
    if img.ndim not in (3, 4):
        raise DataError(f"imrotate: images must be CHW or NCHW, got shape {img.shape}")
    batch = img[None] if single else img
    if isinstance(rotation_degrees, numbers.Number):
        angles = np.full(len(batch), float(rotation_degrees))
    else:
        angles = host(rotation_degrees).astype(np.float64).ravel()
    if len(angles) != len(batch):
        raise DataError(f"imrotate: {len(batch)} images but {len(angles)} rotation angles")
    out = np.stack([_rotate_one(im, a, zoom_in, zoom_out) for im, a in zip(batch, angles)])
    return to_nd(out[0].astype(np.float32) if single else out.astype(np.float32))


def random_rotate(src: Any, angle_limits: Any, zoom_in: bool = False,
                  zoom_out: bool = False) -> NDArray:
    """Rotate by angles drawn uniformly from ``angle_limits`` (degrees), one per image."""
    img = host(src)
    gen = _random.generator()
    if img.ndim == 3:
        return imrotate(src, float(gen.uniform(*angle_limits)), zoom_in, zoom_out)
    return imrotate(src, gen.uniform(*angle_limits, size=img.shape[0]), zoom_in, zoom_out)
