"""MXNet's ``mx.image`` functions: decode, resize and crop HWC images held in NDArrays.

Images are height x width x channels; decoded images are uint8 RGB (MXNet's default). Each
function accepts an NDArray or a numpy array and returns a new NDArray: the input is never
modified (MXNet's ``color_normalize`` works in place; the values returned are the same).
Random choices draw from ``sg.random`` so that ``sg.random.seed`` repeats them.
"""
from __future__ import annotations

import numbers
import os
from typing import Any, Optional, Sequence, Union

import numpy as np

from ...runtime import random as _random
from ...core.base import DataError
from ...runtime.ndarray import NDArray, array
from . import codec
from .resize import resize

__all__ = ["imread", "imdecode", "imresize", "scale_down", "copyMakeBorder", "resize_short",
           "fixed_crop", "random_crop", "center_crop", "color_normalize", "random_size_crop"]

Image = Union[NDArray, np.ndarray]
Box = tuple[int, int, int, int]


def host(src: Any) -> np.ndarray:
    """The numpy value of an NDArray or array-like (not copied when already numpy)."""
    return src.asnumpy() if isinstance(src, NDArray) else np.asarray(src)


def to_nd(values: np.ndarray) -> NDArray:
    """An NDArray of ``values`` keeping their dtype (float64 included)."""
    return array(values, dtype=values.dtype)


def _write(values: np.ndarray, out: Optional[NDArray]) -> NDArray:
    if out is None:
        return to_nd(values)
    if tuple(out.shape) != values.shape:
        raise DataError(f"out has shape {tuple(out.shape)}, the result {values.shape}")
    out[:] = values
    return out


def imdecode(buf: Any, flag: int = 1, to_rgb: bool = True,
             out: Optional[NDArray] = None) -> NDArray:
    """Decode an encoded image (bytes, bytearray, uint8 numpy array or NDArray) to an HWC
    uint8 NDArray: ``flag`` 1 colour, 0 grey (one channel); ``to_rgb`` False gives BGR.

    Example::

        >>> sg.image.imdecode(open('cat.jpg', 'rb').read()).shape   # doctest: +SKIP
        (224, 224, 3)
    """
    if isinstance(buf, NDArray):
        buf = buf.asnumpy().astype(np.uint8)
    elif isinstance(buf, str):
        raise DataError("imdecode: buf must be bytes, bytearray or a numpy array; encode a "
                        "str to bytes first")
    elif not isinstance(buf, (bytes, bytearray, memoryview, np.ndarray)):
        raise DataError(f"imdecode: buf must be bytes, bytearray or a numpy array, got "
                        f"{type(buf).__name__}")
    return _write(codec.decode(buf, flag, bool(to_rgb), "imdecode"), out)


def imread(filename: str, flag: int = 1, to_rgb: bool = True,
           out: Optional[NDArray] = None) -> NDArray:
    """Read and decode an image file (see :func:`imdecode`).

    Example::

        >>> sg.image.imread('cat.jpg', flag=0).shape              # doctest: +SKIP
        (224, 224, 1)
    """
    data = read_file(filename, "imread")
    return _write(codec.decode(data, flag, bool(to_rgb), f"imread {filename}"), out)


def imresize(src: Image, w: int, h: int, interp: int = 1,
             out: Optional[NDArray] = None) -> NDArray:
    """``src`` resized to ``w`` x ``h`` (OpenCV's interpolation codes, default bilinear).

    Example::

        >>> sg.image.imresize(sg.nd.zeros((4, 6, 3)), 3, 2).shape
        (2, 3, 3)
    """
    return _write(resize(host(src), w, h, interp_flag(interp, host(src).shape[:2], (h, w))), out)


def interp_flag(interp: int, old_hw: Sequence[int], new_hw: Sequence[int]) -> int:
    """MXNet's codes 9 (cubic to enlarge, area to shrink, else bilinear) and 10 (random)."""
    if interp == 9:
        (oh, ow), (nh, nw) = old_hw, new_hw
        return 2 if nh > oh and nw > ow else 3 if nh < oh and nw < ow else 1
    if interp == 10:
        return int(_random.generator().integers(0, 5))
    if interp not in (0, 1, 2, 3, 4):
        raise DataError(f"unknown interp method {interp!r} (0-4, 9 or 10)")
    return int(interp)


def scale_down(src_size: Sequence[int], size: Sequence[int]) -> tuple[int, int]:
    """Shrink a crop ``size`` (w, h) to fit ``src_size`` (w, h), keeping its aspect ratio.

    Example::

        >>> sg.image.scale_down((640, 480), (720, 120))
        (640, 106)
    """
    w, h = size
    sw, sh = src_size
    if sh < h:
        w, h = float(w * sh) / h, sh
    if sw < w:
        w, h = sw, float(h * sw) / w
    return int(w), int(h)


_BORDER = {0: "constant", 1: "symmetric", 2: "reflect", 3: "edge", 4: "wrap"}


def copyMakeBorder(src: Image, top: int, bot: int, left: int, right: int, type: int = 0,
                   value: float = 0.0, values: Sequence[float] = ()) -> NDArray:
    """Pad an HWC image (OpenCV's border types: 0 constant, 1 reflect, 2 reflect-101,
    3 replicate, 4 wrap; ``values`` per channel or ``value`` for the constant border).

    Example::

        >>> sg.image.copyMakeBorder(sg.nd.ones((2, 2, 3)), 1, 1, 2, 2).shape
        (4, 6, 3)
    """
    if type not in _BORDER:
        raise DataError(f"copyMakeBorder: unknown border type {type!r} (0-4)")
    img = host(src)
    widths = ((top, bot), (left, right)) + ((0, 0),) * (img.ndim - 2)
    if _BORDER[type] != "constant":
        return to_nd(np.pad(img, widths, mode=_BORDER[type]))
    fill = np.zeros(img.shape[2:] or (1,), np.float64) + value
    fill[:len(values)] = list(values)[:fill.size]
    padded = np.empty((img.shape[0] + top + bot, img.shape[1] + left + right) + img.shape[2:],
                      img.dtype)
    padded[...] = fill.astype(img.dtype).reshape(img.shape[2:])
    padded[top:top + img.shape[0], left:left + img.shape[1]] = img
    return to_nd(padded)


def resize_short(src: Image, size: int, interp: int = 2) -> NDArray:
    """Resize so that the shorter edge is ``size`` (the longer edge keeps the ratio,
    rounded down).

    Example::

        >>> sg.image.resize_short(sg.nd.zeros((40, 60, 3)), 20).shape
        (20, 30, 3)
    """
    h, w = host(src).shape[:2]
    new_h, new_w = (size * h // w, size) if h > w else (size, size * w // h)
    return imresize(src, new_w, new_h, interp_flag(interp, (h, w), (new_h, new_w)))


def fixed_crop(src: Image, x0: int, y0: int, w: int, h: int,
               size: Optional[Sequence[int]] = None, interp: int = 2) -> NDArray:
    """Crop ``(x0, y0, w, h)`` and, if ``size`` (w, h) differs, resize to it.

    Example::

        >>> sg.image.fixed_crop(sg.nd.zeros((40, 60, 3)), 5, 5, 20, 10).shape
        (10, 20, 3)
    """
    img = host(src)
    if x0 < 0 or y0 < 0 or w <= 0 or h <= 0 or x0 + w > img.shape[1] or y0 + h > img.shape[0]:
        raise DataError(f"fixed_crop: box (x0={x0}, y0={y0}, w={w}, h={h}) is not inside the "
                        f"{img.shape[1]}x{img.shape[0]} image")
    out = img[y0:y0 + h, x0:x0 + w]
    if size is not None and (w, h) != tuple(size):
        interp = interp_flag(interp, (h, w), (size[1], size[0]))
        return to_nd(resize(out, size[0], size[1], interp))
    return to_nd(np.ascontiguousarray(out))


def random_crop(src: Image, size: Sequence[int], interp: int = 2) -> tuple[NDArray, Box]:
    """A random crop of ``size`` (w, h), scaled down to fit and resized back to ``size``;
    returns the image and ``(x0, y0, w, h)`` of the crop in ``src``."""
    h, w = host(src).shape[:2]
    new_w, new_h = scale_down((w, h), size)
    gen = _random.generator()
    x0, y0 = int(gen.integers(0, w - new_w + 1)), int(gen.integers(0, h - new_h + 1))
    return fixed_crop(src, x0, y0, new_w, new_h, size, interp), (x0, y0, new_w, new_h)


def center_crop(src: Image, size: Sequence[int], interp: int = 2) -> tuple[NDArray, Box]:
    """The centred crop of ``size`` (w, h) (scaled down to fit, resized back to ``size``).

    Example::

        >>> sg.image.center_crop(sg.nd.zeros((40, 60, 3)), (20, 10))[1]
        (20, 15, 20, 10)
    """
    h, w = host(src).shape[:2]
    new_w, new_h = scale_down((w, h), size)
    x0, y0 = int((w - new_w) / 2), int((h - new_h) / 2)
    return fixed_crop(src, x0, y0, new_w, new_h, size, interp), (x0, y0, new_w, new_h)


def color_normalize(src: Image, mean: Any, std: Any = None) -> NDArray:
    """``(src - mean) / std`` over the channel axis (a new array).

    Example::

        >>> sg.image.color_normalize(sg.nd.ones((1, 1, 3)), sg.nd.array([1, 0, 0])).asnumpy()
        array([[[0., 1., 1.]]], dtype=float32)
    """
    img = host(src)
    out = img - host(mean).astype(img.dtype) if mean is not None else img.copy()
    if std is not None:
        out = out / host(std).astype(img.dtype)
    return to_nd(out.astype(img.dtype, copy=False))


def random_size_crop(src: Image, size: Sequence[int], area: Any, ratio: Sequence[float],
                     interp: int = 2, **kwargs: Any) -> tuple[NDArray, Box]:
    """A crop of random area (fraction ``area`` or range) and aspect ratio (``ratio``
    range, drawn log-uniformly) resized to ``size``; falls back to :func:`center_crop`
    after 10 tries that do not fit."""
    if "min_area" in kwargs:
        area = kwargs.pop("min_area")
    if kwargs:
        raise DataError(f"random_size_crop: unexpected arguments {sorted(kwargs)}")
    h, w = host(src).shape[:2]
    if isinstance(area, numbers.Number):
        area = (area, 1.0)
    gen = _random.generator()
    for _ in range(10):
        target = gen.uniform(area[0], area[1]) * h * w
        aspect = np.exp(gen.uniform(np.log(ratio[0]), np.log(ratio[1])))
        new_w = int(round(np.sqrt(target * aspect)))
        new_h = int(round(np.sqrt(target / aspect)))
        if 0 < new_w <= w and 0 < new_h <= h:
            x0, y0 = int(gen.integers(0, w - new_w + 1)), int(gen.integers(0, h - new_h + 1))
            return fixed_crop(src, x0, y0, new_w, new_h, size, interp), (x0, y0, new_w, new_h)
    return center_crop(src, size, interp)


def read_file(path: str, where: str) -> bytes:
    """The bytes of ``path``; a DataError naming ``where`` when it cannot be read."""
    try:
        with open(os.fspath(path), "rb") as f:
            return f.read()
    except OSError as exc:
        raise DataError(f"{where}: cannot read {path}: {exc.strerror}") from None
