"""MXNet's image augmenters (``mx.image.*Aug``) and ``CreateAugmenter``.

An augmenter is a callable HWC image -> HWC image (NDArray in, NDArray out; the input is not
modified). ``dumps()`` gives MXNet's JSON description. Random draws come from ``sg.random``.
"""
from __future__ import annotations

import json
from typing import Any, Optional, Sequence

import numpy as np

from ...runtime import random as _random
from ...core.base import DataError
from ...runtime.ndarray import NDArray
from .image import (center_crop, color_normalize, host, imresize, random_crop,
                    random_size_crop, resize_short, to_nd, interp_flag)

__all__ = ["Augmenter", "SequentialAug", "ResizeAug", "ForceResizeAug", "RandomCropAug",
           "RandomSizedCropAug", "CenterCropAug", "RandomOrderAug", "BrightnessJitterAug",
           "ContrastJitterAug", "SaturationJitterAug", "HueJitterAug", "ColorJitterAug",
           "LightingAug", "ColorNormalizeAug", "RandomGrayAug", "HorizontalFlipAug", "CastAug",
           "CreateAugmenter"]

_GRAY = np.array([0.299, 0.587, 0.114])


class Augmenter:
    """Base class: keeps its keyword arguments for :meth:`dumps`."""

    def __init__(self, **kwargs: Any) -> None:
        self._kwargs = {k: (host(v).tolist() if isinstance(v, (NDArray, np.ndarray)) else v)
                        for k, v in kwargs.items()}

    def dumps(self) -> Any:
        """``["classname", {kwargs}]`` as JSON (MXNet's format)."""
        return json.dumps([type(self).__name__.lower(), self._kwargs])

    def __call__(self, src: Any) -> NDArray:
        raise NotImplementedError(f"{type(self).__name__} must define __call__")


class SequentialAug(Augmenter):
    """Apply ``ts`` in order."""

    def __init__(self, ts: Sequence[Augmenter]) -> None:
        super().__init__()
        self.ts = list(ts)

    def dumps(self) -> Any:
        return [type(self).__name__.lower(), [t.dumps() for t in self.ts]]

    def __call__(self, src: Any) -> NDArray:
        for t in self.ts:
            src = t(src)
        return src


class RandomOrderAug(SequentialAug):
    """Apply ``ts`` in a random order (reshuffled at each call)."""

    def __call__(self, src: Any) -> NDArray:
        order = _random.generator().permutation(len(self.ts))
        self.ts = [self.ts[i] for i in order]
        return super().__call__(src)


class ResizeAug(Augmenter):
    """Resize the shorter edge to ``size``."""

    def __init__(self, size: int, interp: int = 2) -> None:
        super().__init__(size=size, interp=interp)
        self.size, self.interp = size, interp

    def __call__(self, src: Any) -> NDArray:
        return resize_short(src, self.size, self.interp)


class ForceResizeAug(Augmenter):
    """Resize to ``size`` (w, h) regardless of the aspect ratio."""

    def __init__(self, size: Sequence[int], interp: int = 2) -> None:
        super().__init__(size=size, interp=interp)
        self.size, self.interp = tuple(size), interp

    def __call__(self, src: Any) -> NDArray:
        hw = host(src).shape[:2]
        interp = interp_flag(self.interp, hw, (self.size[1], self.size[0]))
        return imresize(src, self.size[0], self.size[1], interp)


class RandomCropAug(Augmenter):
    """Random crop of ``size`` (w, h)."""

    def __init__(self, size: Sequence[int], interp: int = 2) -> None:
        super().__init__(size=size, interp=interp)
        self.size, self.interp = size, interp

    def __call__(self, src: Any) -> NDArray:
        return random_crop(src, self.size, self.interp)[0]


class RandomSizedCropAug(Augmenter):
    """Random area / aspect-ratio crop resized to ``size`` (see ``random_size_crop``)."""

    def __init__(self, size: Sequence[int], area: Any, ratio: Sequence[float],
                 interp: int = 2, **kwargs: Any) -> None:
        super().__init__(size=size, area=area, ratio=ratio, interp=interp)
        self.area = kwargs.pop("min_area", area)
        if kwargs:
            raise DataError(f"RandomSizedCropAug: unexpected arguments {sorted(kwargs)}")
        self.size, self.ratio, self.interp = size, ratio, interp

    def __call__(self, src: Any) -> NDArray:
        return random_size_crop(src, self.size, self.area, self.ratio, self.interp)[0]


class CenterCropAug(Augmenter):
    """Centre crop of ``size`` (w, h)."""

    def __init__(self, size: Sequence[int], interp: int = 2) -> None:
        super().__init__(size=size, interp=interp)
        self.size, self.interp = size, interp

    def __call__(self, src: Any) -> NDArray:
        return center_crop(src, self.size, self.interp)[0]


def _jitter(amount: float) -> float:
    return 1.0 + float(_random.generator().uniform(-amount, amount))


class BrightnessJitterAug(Augmenter):
    """Scale by ``1 + U(-brightness, brightness)``."""

    def __init__(self, brightness: float) -> None:
        super().__init__(brightness=brightness)
        self.brightness = brightness

    def __call__(self, src: Any) -> NDArray:
        img = host(src)
        return to_nd((img * _jitter(self.brightness)).astype(img.dtype))


class ContrastJitterAug(Augmenter):
    """Blend with the image's mean grey level: ``alpha * x + (1 - alpha) * mean_grey``."""

    def __init__(self, contrast: float) -> None:
        super().__init__(contrast=contrast)
        self.contrast = contrast

    def __call__(self, src: Any) -> NDArray:
        img = host(src)
        alpha = _jitter(self.contrast)
        # MXNet's formula: 3 * (1 - alpha) * mean over all elements of x * coef
        gray = 3.0 * (1.0 - alpha) * float(np.mean(img * _GRAY))
        return to_nd((img * alpha + gray).astype(img.dtype))


class SaturationJitterAug(Augmenter):
    """Blend each pixel with its grey level: ``alpha * x + (1 - alpha) * grey``."""

    def __init__(self, saturation: float) -> None:
        super().__init__(saturation=saturation)
        self.saturation = saturation

    def __call__(self, src: Any) -> NDArray:
        img = host(src)
        alpha = _jitter(self.saturation)
        gray = np.sum(img * _GRAY, axis=2, keepdims=True) * (1.0 - alpha)
        return to_nd((img * alpha + gray).astype(img.dtype))


class HueJitterAug(Augmenter):
    """Rotate the hue by ``U(-hue, hue) * 180`` degrees (a linear map in YIQ space)."""

    TYIQ = np.array([[0.299, 0.587, 0.114], [0.596, -0.274, -0.321], [0.211, -0.523, 0.311]])
    ITYIQ = np.array([[1.0, 0.956, 0.621], [1.0, -0.272, -0.647], [1.0, -1.107, 1.705]])

    def __init__(self, hue: float) -> None:
        super().__init__(hue=hue)
        self.hue = hue

    def __call__(self, src: Any) -> NDArray:
        img = host(src)
        alpha = float(_random.generator().uniform(-self.hue, self.hue))
        u, w = np.cos(alpha * np.pi), np.sin(alpha * np.pi)
        bt = np.array([[1.0, 0.0, 0.0], [0.0, u, -w], [0.0, w, u]])
        t = (self.ITYIQ @ bt @ self.TYIQ).T
        return to_nd((img @ t).astype(img.dtype))


class ColorJitterAug(RandomOrderAug):
    """Brightness, contrast and saturation jitter (those > 0) in a random order."""

    def __init__(self, brightness: float, contrast: float, saturation: float) -> None:
        ts: list[Augmenter] = []
        if brightness > 0:
            ts.append(BrightnessJitterAug(brightness))
        if contrast > 0:
            ts.append(ContrastJitterAug(contrast))
        if saturation > 0:
            ts.append(SaturationJitterAug(saturation))
        super().__init__(ts)


class LightingAug(Augmenter):
    """AlexNet-style PCA noise: add ``eigvec @ (alpha * eigval)``, ``alpha ~ N(0, alphastd)``."""

    def __init__(self, alphastd: float, eigval: Any, eigvec: Any) -> None:
        super().__init__(alphastd=alphastd, eigval=eigval, eigvec=eigvec)
        self.alphastd = alphastd
        self.eigval, self.eigvec = np.asarray(eigval), np.asarray(eigvec)

    def __call__(self, src: Any) -> NDArray:
        img = host(src)
        alpha = _random.generator().normal(0, self.alphastd, size=(3,))
        rgb = np.dot(self.eigvec * alpha, self.eigval)
        return to_nd((img + rgb).astype(img.dtype))


class ColorNormalizeAug(Augmenter):
    """Subtract ``mean`` and divide by ``std`` (per channel)."""

    def __init__(self, mean: Any, std: Any) -> None:
        super().__init__(mean=mean, std=std)
        self.mean = None if mean is None else host(mean)
        self.std = None if std is None else host(std)

    def __call__(self, src: Any) -> NDArray:
        return color_normalize(src, self.mean, self.std)


class RandomGrayAug(Augmenter):
    """With probability ``p``, replace each channel by the grey level (3 channels kept)."""

    MAT = np.array([[0.21, 0.21, 0.21], [0.72, 0.72, 0.72], [0.07, 0.07, 0.07]])

    def __init__(self, p: float) -> None:
        super().__init__(p=p)
        self.p = p

    def __call__(self, src: Any) -> NDArray:
        img = host(src)
        if _random.generator().random() < self.p:
            return to_nd((img @ self.MAT).astype(img.dtype))
        return to_nd(img.copy())


class HorizontalFlipAug(Augmenter):
    """With probability ``p``, mirror left-right."""

    def __init__(self, p: float) -> None:
        super().__init__(p=p)
        self.p = p

    def __call__(self, src: Any) -> NDArray:
        img = host(src)
        flip = _random.generator().random() < self.p
        return to_nd(np.ascontiguousarray(img[:, ::-1]) if flip else img.copy())


class CastAug(Augmenter):
    """Cast to ``typ`` (float32 by default)."""

    def __init__(self, typ: str = "float32") -> None:
        super().__init__(type=typ)
        self.typ = typ

    def __call__(self, src: Any) -> NDArray:
        return to_nd(host(src).astype(self.typ))


_PCA_EIGVAL = np.array([55.46, 4.794, 1.148])
_PCA_EIGVEC = np.array([[-0.5675, 0.7192, 0.4009], [-0.5808, -0.0045, -0.8140],
                        [-0.5836, -0.6948, 0.4203]])
_IMAGENET_MEAN = np.array([123.68, 116.28, 103.53])
_IMAGENET_STD = np.array([58.395, 57.12, 57.375])


def _stat(value: Any, default: np.ndarray, name: str) -> Optional[np.ndarray]:
    if value is True:
        return default
    if value is None or value is False:
        return None
    arr = host(value)
    if arr.ndim != 1 or arr.shape[0] not in (1, 3):
        raise DataError(f"CreateAugmenter: {name} must have 1 or 3 values, got shape "
                        f"{arr.shape}")
    return arr


def CreateAugmenter(data_shape: Sequence[int], resize: int = 0, rand_crop: bool = False,
                    rand_resize: bool = False, rand_mirror: bool = False, mean: Any = None,
                    std: Any = None, brightness: float = 0, contrast: float = 0,
                    saturation: float = 0, hue: float = 0, pca_noise: float = 0,
                    rand_gray: float = 0, inter_method: int = 2) -> list[Augmenter]:
    """MXNet's standard augmenter list for ``data_shape`` (C, H, W).

    Example::

        >>> [type(a).__name__ for a in sg.image.CreateAugmenter((3, 224, 224), resize=256)]
        ['ResizeAug', 'CenterCropAug', 'CastAug']
    """
    augs: list[Augmenter] = []
    if resize > 0:
        augs.append(ResizeAug(resize, inter_method))
    crop = (data_shape[2], data_shape[1])
    if rand_resize:
        if not rand_crop:
            raise DataError("CreateAugmenter: rand_resize needs rand_crop=True")
        augs.append(RandomSizedCropAug(crop, 0.08, (3.0 / 4.0, 4.0 / 3.0), inter_method))
    elif rand_crop:
        augs.append(RandomCropAug(crop, inter_method))
    else:
        augs.append(CenterCropAug(crop, inter_method))
    if rand_mirror:
        augs.append(HorizontalFlipAug(0.5))
    augs.append(CastAug())
    if brightness or contrast or saturation:
        augs.append(ColorJitterAug(brightness, contrast, saturation))
    if hue:
        augs.append(HueJitterAug(hue))
    if pca_noise > 0:
        augs.append(LightingAug(pca_noise, _PCA_EIGVAL, _PCA_EIGVEC))
    if rand_gray > 0:
        augs.append(RandomGrayAug(rand_gray))
    mean, std = _stat(mean, _IMAGENET_MEAN, "mean"), _stat(std, _IMAGENET_STD, "std")
    if mean is not None or std is not None:
        augs.append(ColorNormalizeAug(mean, std))
    return augs
