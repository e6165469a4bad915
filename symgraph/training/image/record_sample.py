"""One sample of ``ImageRecordIter``: decode, resize, pad, crop, mirror, normalise.

The steps and their order are MXNet 1.9.1's default image augmenter followed by its record
parser's normalisation: ``out = (pixel - mean) * (scale / std)`` in float32, RGB order.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple, Optional

import numpy as np

from ...core.base import AttrError, DataError
from .. import recordio
from .codec import decode
from .image import interp_flag
from .resize import resize

__all__ = ["SampleParams", "Sample", "augment", "prepare", "finish", "process"]

OUT_DTYPES = ("float32", "uint8", "int8")


@dataclass(frozen=True)
class SampleParams:
    """The per-sample options of ``ImageRecordIter`` (MXNet's names and defaults)."""

    data_shape: tuple
    label_width: int = 1
    out_dtype: str = "float32"
    resize: int = -1
    rand_crop: bool = False
    rand_mirror: bool = False
    mirror: bool = False
    pad: int = 0
    fill_value: int = 255
    inter_method: int = 1
    mean: tuple = (0.0, 0.0, 0.0, 0.0)
    std: tuple = (1.0, 1.0, 1.0, 1.0)
    scale: float = 1.0

    @classmethod
    def create(cls, data_shape: tuple, label_width: int, dtype: str,
               kwargs: dict) -> "SampleParams":
        """Take this class's options out of ``kwargs`` (``mean_r``... ``std_a`` included)."""
        if len(data_shape) != 3 or data_shape[0] not in (1, 3, 4) or min(data_shape) < 1:
            raise DataError(f"ImageRecordIter: data_shape must be (C, H, W) with C in 1, 3, 4, "
                            f"got {data_shape}")
        if dtype not in OUT_DTYPES:
            raise AttrError(f"ImageRecordIter: dtype={dtype!r}, expected one of {OUT_DTYPES}")
        if int(label_width) < 1:
            raise DataError(f"ImageRecordIter: label_width={label_width} must be >= 1")
        mean = tuple(float(kwargs.pop(f"mean_{c}", 0.0)) for c in "rgba")
        std = tuple(float(kwargs.pop(f"std_{c}", 1.0)) for c in "rgba")
        if min(abs(s) for s in std) == 0:
            raise DataError(f"ImageRecordIter: std_r/g/b/a must be non-zero, got {std}")
        own = {k: kwargs.pop(k) for k in list(kwargs) if k in cls.__dataclass_fields__
               and k not in ("data_shape", "label_width", "out_dtype", "mean", "std")}
        params = cls(tuple(int(d) for d in data_shape), int(label_width), dtype, mean=mean,
                     std=std, **own)
        if params.inter_method not in (0, 1, 2, 3, 4, 9, 10):
            raise DataError(f"ImageRecordIter: inter_method={params.inter_method}, valid "
                            f"values 0-4, 9, 10")
        return params


class Sample(NamedTuple):
    data: np.ndarray   # C x H x W, out_dtype (H x W x C uint8 between prepare and finish)
    label: np.ndarray  # label_width float32
    index: int         # the record's id


def _label(header: Any, params: SampleParams, label_map: Optional[dict],
           where: str) -> np.ndarray:
    if label_map is not None:
        if header.id not in label_map:
            raise DataError(f"{where}: record id {header.id} is not in the image list")
        label = np.asarray(label_map[header.id], np.float32).ravel()
    else:
        label = np.asarray(header.label, np.float32).ravel()
    if label.size != params.label_width:
        raise DataError(f"{where}: record id {header.id} has {label.size} labels but "
                        f"label_width is {params.label_width}")
    return label


def _method(code: int, old_hw: tuple, new_hw: tuple, rng: np.random.Generator) -> int:
    """An OpenCV interpolation code; 10 draws one from the sample's own generator."""
    return int(rng.integers(0, 5)) if code == 10 else interp_flag(code, old_hw, new_hw)


def _crop(img: np.ndarray, params: SampleParams, rng: np.random.Generator,
          pending: Optional[tuple] = None) -> np.ndarray:
    """Scale up an image smaller than the crop, then crop centred or at random. ``pending``
    (width, height, interp): a resize not done yet, whose crop window alone is computed."""
    _, th, tw = params.data_shape
    h, w = img.shape[:2] if pending is None else pending[1::-1]
    interp = _method(params.inter_method, (h, w), (th, tw), rng)
    if h < th:
        w = int(np.float32(th) / np.float32(h) * np.float32(w))
        img, h = resize(img, w, th, interp), th
    if w < tw:
        h = int(np.float32(tw) / np.float32(w) * np.float32(h))
        img, w = resize(img, tw, h, interp), tw
    y, x = h - th, w - tw
    if params.rand_crop:
        y, x = int(rng.integers(0, y + 1)), int(rng.integers(0, x + 1))
    else:
        y, x = y // 2, x // 2
    if pending is not None:
        return resize(img, pending[0], pending[1], pending[2], window=(y, x, th, tw))
    return img[y:y + th, x:x + tw]


def augment(img: np.ndarray, params: SampleParams, rng: np.random.Generator) -> np.ndarray:
    """``img`` (HWC uint8) resized, padded and cropped to ``params.data_shape`` (the mirror
    and the normalisation come after).

    Example::

        >>> augment(np.zeros((40, 60, 3), np.uint8), params, rng).shape  # doctest: +SKIP
        (28, 28, 3)
    """
    pending = None
    if params.resize > 0:
        h, w = img.shape[:2]
        size = params.resize
        nh, nw = (size * h // w, size) if h > w else (size, size * w // h)
        interp = _method(params.inter_method, (h, w), (nh, nw), rng)
        _, th, tw = params.data_shape
        if params.pad <= 0 and nh >= th and nw >= tw:
            # the crop that follows keeps a window of the resized image: compute only that
            pending = (nw, nh, interp)
        else:
            img = resize(img, nw, nh, interp)
    if params.pad > 0:
        p = params.pad
        padded = np.full((img.shape[0] + 2 * p, img.shape[1] + 2 * p, img.shape[2]),
                         params.fill_value, np.uint8)
        padded[p:p + img.shape[0], p:p + img.shape[1]] = img
        img = padded
    return _crop(img, params, rng, pending)


def _normalise(img: np.ndarray, params: SampleParams, out: np.ndarray) -> None:
    """Write ``img`` (HWC uint8) into ``out`` (CHW, ``out_dtype``), normalised."""
    chw = img.transpose(2, 0, 1)
    c = chw.shape[0]
    if params.out_dtype == "uint8":
        out[...] = chw
        return
    mean = np.asarray(params.mean[:c], np.float32)[:, None, None]
    if params.out_dtype == "int8":
        out[...] = np.clip(chw.astype(np.int16) - np.round(mean).astype(np.int16), -128, 127)
        return
    mult = (np.float32(params.scale) / np.asarray(params.std[:c], np.float32))[:, None, None]
    np.subtract(chw, mean, out=out)
    out *= mult


def prepare(raw: Optional[bytes], params: SampleParams, label_map: Optional[dict],
            rng: np.random.Generator, where: str) -> Sample:
    """One record's bytes -> its ``Sample`` with the augmented HWC uint8 pixels, before
    normalisation (thread- and process-safe: all state is in the arguments)."""
    if raw is None:
        raise DataError(f"{where}: record vanished while reading (file changed?)")
    header, payload = recordio.unpack(raw)
    label = _label(header, params, label_map, where)
    channels = params.data_shape[0]
    flag = {1: 0, 3: 1, 4: -1}[channels]
    img = decode(payload, flag, to_rgb=True, where=f"{where}: record id {header.id}")
    if img.shape[2] != channels:
        raise DataError(f"{where}: record id {header.id} decodes to {img.shape[2]} channels, "
                        f"data_shape asks for {channels}")
    img = augment(img, params, rng)
    mirror = params.mirror or (params.rand_mirror and bool(rng.random() < 0.5))
    if mirror:
        img = img[:, ::-1]
    return Sample(img, label, int(header.id))


def finish(sample: Sample, params: SampleParams, out: Optional[np.ndarray] = None) -> Sample:
    """``sample`` from ``prepare`` with its pixels normalised into ``out`` (C x H x W,
    ``out_dtype``; a new array when not given)."""
    if out is None:
        out = np.empty(params.data_shape, params.out_dtype)
    _normalise(sample.data, params, out)
    return sample._replace(data=out)


def process(raw: Optional[bytes], params: SampleParams, label_map: Optional[dict],
            rng: np.random.Generator, where: str, out: Optional[np.ndarray] = None) -> Sample:
    """``prepare`` then ``finish``: one record's bytes -> its normalised ``Sample``."""
    return finish(prepare(raw, params, label_map, rng, where), params, out)
