"""Image decoding and encoding through Pillow, with OpenCV's (MXNet's) conventions.

Arrays are ``uint8`` height x width x channels. ``decode`` gives RGB (``to_rgb=True``) or
BGR, as MXNet's ``imdecode``; ``decode_bgr``/``encode_bgr`` are the numpy-in-BGR side that
MXNet's ``recordio.unpack_img``/``pack_img`` (OpenCV's ``imdecode``/``imencode``) use.
Anything Pillow cannot decode, and images over Pillow's decompression-bomb limit, are a
:class:`~symgraph.core.base.DataError` naming the caller; no partial image is returned.
"""
from __future__ import annotations

import io
import warnings
from typing import Any

import numpy as np

from ...core.base import DataError

__all__ = ["decode", "decode_bgr", "encode_bgr", "pillow"]


def pillow() -> Any:
    """The ``PIL.Image`` module, or a DataError saying how to install it."""
    try:
        from PIL import Image
    except ImportError:
        raise DataError("image decoding needs Pillow: pip install 'symgraph[image]' "
                        "(or pip install pillow)") from None
    return Image


def _open(buf: Any, where: str, flag: int = 1) -> Any:
    """A loaded Pillow image of the encoded bytes ``buf`` (a JPEG asked for in grey is
    decoded to its luma plane, as libjpeg does for OpenCV)."""
    Image = pillow()
    data = buf.tobytes() if isinstance(buf, np.ndarray) else bytes(buf)
    if not data:
        raise DataError(f"{where}: empty image buffer")
    try:
        with warnings.catch_warnings():
            # a bomb warning becomes the error: a hostile header must not make us allocate
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            img = Image.open(io.BytesIO(data))
            if flag == 0 and img.format == "JPEG":
                img.draft("L", img.size)
            img.load()
    except (OSError, ValueError, SyntaxError, Image.DecompressionBombWarning,
            Image.DecompressionBombError) as exc:
        raise DataError(f"{where}: cannot decode image ({len(data)} bytes, starting "
                        f"{data[:8]!r}): {exc}") from None
    return img


def _pixels(img: Any, flag: int) -> np.ndarray:
    """HWC uint8 RGB(A) or grey pixels: ``flag`` 1 = 3 channels, 0 = 1 channel, -1 = as
    stored (grey, RGB or RGBA)."""
    if flag == 0:
        mode = "L"
    elif flag > 0:
        mode = "RGB"
    else:
        mode = img.mode if img.mode in ("L", "RGB", "RGBA") else (
            "RGBA" if "A" in img.getbands() or "transparency" in img.info else "RGB")
    if img.mode in ("I;16", "I;16B", "I") and mode == "L":
        # 16-bit grey: OpenCV keeps the high byte when asked for 8 bits
        arr = (np.asarray(img, dtype=np.uint32) >> 8).astype(np.uint8)
    elif mode == "L" and img.mode != "L":
        # libpng's rgb-to-grey as OpenCV calls it: 15-bit weights, truncated
        rgb = np.asarray(img.convert("RGB"), dtype=np.uint32)
        arr = ((rgb @ np.array([9797, 19234, 3737], np.uint32)) >> 15).astype(np.uint8)
    else:
        # convert() copies even to the same mode: skip it when the decoder gave that mode
        arr = np.asarray(img if img.mode == mode else img.convert(mode), dtype=np.uint8)
    return arr if arr.ndim == 3 else arr[:, :, None]


def decode(buf: Any, flag: int = 1, to_rgb: bool = True, where: str = "imdecode") -> np.ndarray:
    """Decode ``buf`` (bytes, bytearray or a uint8 array) to an HWC uint8 array (MXNet's
    ``imdecode`` layout: grey images keep a channel axis of 1).

    Example::

        >>> decode(open('cat.jpg', 'rb').read()).shape        # doctest: +SKIP
        (224, 224, 3)
    """
    arr = _pixels(_open(buf, where, flag), flag)
    if not to_rgb and arr.shape[2] >= 3:
        arr = arr[:, :, [2, 1, 0] + list(range(3, arr.shape[2]))]
    return np.ascontiguousarray(arr)


def decode_bgr(buf: Any, iscolor: int = -1, where: str = "unpack_img") -> np.ndarray:
    """Decode as OpenCV's ``imdecode``: BGR(A), grey images as 2-d arrays."""
    arr = decode(buf, iscolor, to_rgb=False, where=where)
    return arr[:, :, 0] if arr.shape[2] == 1 else arr


def encode_bgr(img: np.ndarray, quality: int = 95, img_fmt: str = ".jpg") -> bytes:
    """Encode a BGR(A) or grey uint8 array as OpenCV's ``imencode`` would (JPEG ``quality``
    1-100, PNG compression level 0-9; values outside are clamped)."""
    Image = pillow()
    arr = np.asarray(img)
    if arr.dtype != np.uint8 or arr.ndim not in (2, 3) or (arr.ndim == 3 and
                                                          arr.shape[2] not in (1, 3, 4)):
        raise DataError(f"pack_img: image must be uint8 HxW, HxWx1, HxWx3 or HxWx4, got "
                        f"{arr.dtype} {arr.shape}")
    if arr.ndim == 3 and arr.shape[2] == 1:
        arr = arr[:, :, 0]
    if arr.ndim == 3:
        arr = arr[:, :, [2, 1, 0] + ([3] if arr.shape[2] == 4 else [])]
    fmt = img_fmt.lower().lstrip(".")
    out = io.BytesIO()
    pic = Image.fromarray(np.ascontiguousarray(arr))
    # out-of-range settings are clamped, as OpenCV does (im2rec passes 95 to PNG too)
    if fmt in ("jpg", "jpeg"):
        pic.convert("RGB" if pic.mode == "RGBA" else pic.mode).save(
            out, "JPEG", quality=min(max(int(quality), 1), 100))
    elif fmt == "png":
        pic.save(out, "PNG", compress_level=min(max(int(quality), 0), 9))
    else:
        raise DataError(f"pack_img: unknown image format {img_fmt!r} (use '.jpg' or '.png')")
    return out.getvalue()
