"""The random colour transforms of ``gluon.data.vision.transforms`` (on ``(H, W, C)``
images, through ``sg.image``'s augmenters) and the rotations (on float ``(C, H, W)``
tensors or ``(N, C, H, W)`` batches, through ``sg.image.imrotate``)."""
from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np

from .....runtime import random as _random
from .....core.base import DataError, DTypeError
from ....block import Block
from .host import check_proba, image_module, like, per_image, to_host

# ImageNet's RGB eigenvalues and eigenvectors, as MXNet's RandomLighting uses them
_EIGVAL = np.array([55.46, 4.794, 1.148])
_EIGVEC = np.array([[-0.5675, 0.7192, 0.4009],
                    [-0.5808, -0.0045, -0.8140],
                    [-0.5836, -0.6948, 0.4203]])


class _Augment(Block):
    """An ``sg.image`` augmenter applied to each (H, W, C) image, in float, cast back."""

    def __init__(self, aug: Any, who: str) -> None:
        super().__init__()
        self._aug, self._who = aug, who

    def forward(self, x: Any, *args: Any) -> Any:
        return per_image(x, lambda img: to_host(self._aug(img.astype(np.float32))), self._who)


class RandomBrightness(_Augment):
    """Scale brightness by a factor drawn from ``[max(0, 1 - brightness), 1 + brightness]``.

    Examples
    --------
    >>> T = sg.gluon.data.vision.transforms
    >>> out = T.RandomBrightness(0.5)(sg.nd.ones((4, 4, 3)))
    >>> 0.5 <= float(out.min()) <= float(out.max()) <= 1.5  # scaled by a factor in [0.5, 1.5]
    True
    """

    def __init__(self, brightness: float) -> None:
        super().__init__(image_module().BrightnessJitterAug(brightness), "RandomBrightness")


class RandomContrast(_Augment):
    """Blend with the mean grey level by a factor drawn around 1 (``contrast`` wide).

    Examples
    --------
    >>> T = sg.gluon.data.vision.transforms
    >>> gray = sg.nd.full((4, 4, 3), 0.5)  # (H, W, C), equal channels
    >>> out = T.RandomContrast(0.5)(gray)
    >>> out.shape, bool(np.allclose(out.asnumpy(), 0.5))  # a gray image stays gray
    ((4, 4, 3), True)
    """

    def __init__(self, contrast: float) -> None:
        super().__init__(image_module().ContrastJitterAug(contrast), "RandomContrast")


class RandomSaturation(_Augment):
    """Blend with the grey image by a factor drawn around 1 (``saturation`` wide).

    Examples
    --------
    >>> T = sg.gluon.data.vision.transforms
    >>> gray = sg.nd.full((4, 4, 3), 0.5)  # (H, W, C), equal channels
    >>> out = T.RandomSaturation(0.5)(gray)
    >>> out.shape, bool(np.allclose(out.asnumpy(), 0.5))  # a gray image stays gray
    ((4, 4, 3), True)
    """

    def __init__(self, saturation: float) -> None:
        super().__init__(image_module().SaturationJitterAug(saturation), "RandomSaturation")


class RandomHue(_Augment):
    """Rotate the hue by an angle drawn from ``[-hue, hue]`` (fraction of a turn).

    Examples
    --------
    >>> T = sg.gluon.data.vision.transforms
    >>> gray = sg.nd.full((4, 4, 3), 0.5)  # (H, W, C), equal channels
    >>> out = T.RandomHue(0.5)(gray)
    >>> # gray stays gray up to mxnet.image's rounded YIQ coefficients (about 1e-3)
    >>> out.shape, bool(np.allclose(out.asnumpy(), 0.5, atol=0.01))
    ((4, 4, 3), True)
    """

    def __init__(self, hue: float) -> None:
        super().__init__(image_module().HueJitterAug(hue), "RandomHue")


class RandomColorJitter(Block):
    """Brightness, contrast and saturation jitter in random order, then hue jitter.

    Examples
    --------
    >>> T = sg.gluon.data.vision.transforms
    >>> gray = sg.nd.full((4, 4, 3), 0.5)  # (H, W, C), equal channels
    >>> out = T.RandomColorJitter(contrast=0.5, saturation=0.5)(gray)
    >>> out.shape, bool(np.allclose(out.asnumpy(), 0.5))  # a gray image stays gray
    ((4, 4, 3), True)
    """

    def __init__(self, brightness: float = 0, contrast: float = 0, saturation: float = 0,
                 hue: float = 0) -> None:
        super().__init__()
        augs = [image_module().ColorJitterAug(brightness, contrast, saturation)]
        if hue:
            augs.append(image_module().HueJitterAug(hue))
        self._augs = augs

    def forward(self, x: Any, *args: Any) -> Any:
        def one(img: np.ndarray) -> np.ndarray:
            out = img.astype(np.float32)
            for aug in self._augs:
                out = to_host(aug(out))
            return out
        return per_image(x, one, "RandomColorJitter")


class RandomLighting(_Augment):
    """AlexNet-style PCA lighting noise of standard deviation ``alpha``.

    Examples
    --------
    >>> T = sg.gluon.data.vision.transforms
    >>> T.RandomLighting(0.1)(sg.nd.ones((4, 4, 3))).shape  # (H, W, C)
    (4, 4, 3)
    """

    def __init__(self, alpha: float) -> None:
        super().__init__(image_module().LightingAug(alpha, _EIGVAL, _EIGVEC), "RandomLighting")


class RandomGray(_Augment):
    """Convert to grey (3 equal channels) with probability ``p``.

    Examples
    --------
    >>> T = sg.gluon.data.vision.transforms
    >>> gray = sg.nd.full((4, 4, 3), 0.5)  # (H, W, C), equal channels
    >>> out = T.RandomGray(p=1.0)(gray)
    >>> out.shape, bool(np.allclose(out.asnumpy(), 0.5))  # a gray image stays gray
    ((4, 4, 3), True)
    """

    def __init__(self, p: float = 0.5) -> None:
        super().__init__(image_module().RandomGrayAug(check_proba(p, "RandomGray")), "RandomGray")


def _float_tensor(x: Any, who: str) -> np.ndarray:
    host = to_host(x)
    if host.dtype.kind != "f":
        raise DTypeError(f"{who}: expected a float (C, H, W) tensor or (N, C, H, W) batch "
                         f"(use ToTensor first), got dtype {host.dtype}")
    return host


class Rotate(Block):
    """Rotate a float ``(C, H, W)`` tensor or ``(N, C, H, W)`` batch by
    ``rotation_degrees`` counter-clockwise (``zoom_in``/``zoom_out`` as ``sg.image``).

    Examples
    --------
    >>> T = sg.gluon.data.vision.transforms
    >>> T.Rotate(180)(sg.nd.array([[[1, 2], [3, 4]]]))  # (C, H, W)
    [[[4. 3.]
      [2. 1.]]]
    <NDArray 1x2x2 @cpu(0)>
    """

    def __init__(self, rotation_degrees: float, zoom_in: bool = False,
                 zoom_out: bool = False) -> None:
        super().__init__()
        self._args = (rotation_degrees, zoom_in, zoom_out)

    def forward(self, x: Any, *args: Any) -> Any:
        host = _float_tensor(x, "Rotate")
        return like(to_host(image_module().imrotate(host, *self._args)), host.dtype)


class RandomRotation(Block):
    """With probability ``rotate_with_proba``, rotate by an angle drawn uniformly from
    ``angle_limits`` (degrees).

    Examples
    --------
    >>> T = sg.gluon.data.vision.transforms
    >>> T.RandomRotation((180, 180))(sg.nd.array([[[1, 2], [3, 4]]]))  # always 180 degrees
    [[[4. 3.]
      [2. 1.]]]
    <NDArray 1x2x2 @cpu(0)>
    """

    def __init__(self, angle_limits: Sequence[float], zoom_in: bool = False,
                 zoom_out: bool = False, rotate_with_proba: float = 1.0) -> None:
        super().__init__()
        if not 0.0 <= rotate_with_proba <= 1.0:
            raise DataError(f"RandomRotation: rotate_with_proba must be in [0, 1], got "
                            f"{rotate_with_proba}")
        self._limits = tuple(angle_limits)
        self._zoom, self._p = (zoom_in, zoom_out), rotate_with_proba

    def forward(self, x: Any, *args: Any) -> Any:
        host = _float_tensor(x, "RandomRotation")
        rng = _random.generator()
        if rng.random() >= self._p:
            return x
        angle: Optional[float] = float(rng.uniform(*self._limits))
        return like(to_host(image_module().imrotate(host, angle, *self._zoom)), host.dtype)
