"""``gluon.data.vision.transforms``: per-sample image transforms (MXNet 1.x names).

``ToTensor``, ``Normalize`` and the random flips are HybridBlocks over ``F.image`` (they
hybridize into a graph); resizing and cropping run on the host through ``sg.image``
(Pillow-backed), as a data loader transforms one small image at a time. The colour and
rotation transforms are in ``transforms_color``. ``Compose`` chains any of them.
"""
from __future__ import annotations

import numbers
from typing import Any, Sequence, Union

import numpy as np

from .....runtime import ndarray as nd, random as _random
from .....core.base import ShapeError
from ....block import Block, HybridBlock
from ....nn.basic_layers import HybridSequential, Sequential
from .host import check_proba, image_module, per_image, to_host

Size = Union[int, Sequence[int]]


class Compose(Sequential):
    """Applies ``transforms`` in order.

    Examples
    --------
    >>> T = sg.gluon.data.vision.transforms
    >>> t = T.Compose([T.Resize(8), T.ToTensor()])
    >>> t(sg.nd.ones((10, 12, 3), dtype='uint8')).shape  # (H, W, C) image to (C, H, W)
    (3, 8, 8)
    """

    def __init__(self, transforms: Sequence[Any]) -> None:
        super().__init__()
        with self.name_scope():
            for t in transforms:
                self.add(t if isinstance(t, Block) else _Call(t))


class RandomApply(Sequential):
    """Apply ``transforms`` (a block or callable) with probability ``p``, else pass through.

    Examples
    --------
    >>> T = sg.gluon.data.vision.transforms
    >>> always = T.RandomApply(T.Cast('float16'), p=1.0)
    >>> always(sg.nd.ones(2)).dtype
    dtype('float16')
    >>> T.RandomApply(T.Cast('float16'), p=0.0)(sg.nd.ones(2)).dtype  # never: unchanged
    dtype('float32')
    """

    def __init__(self, transforms: Any, p: float = 0.5) -> None:
        super().__init__()
        self._p = check_proba(p, "RandomApply")
        with self.name_scope():
            self.add(transforms if isinstance(transforms, Block) else _Call(transforms))

    def forward(self, x: Any, *args: Any) -> Any:
        if _random.generator().random() < self._p:
            return super().forward(x, *args)
        return x


class _Call(Block):
    """A plain callable as a block of a Compose."""

    def __init__(self, fn: Any) -> None:
        super().__init__()
        self._fn = fn

    def forward(self, x: Any, *args: Any) -> Any:
        return self._fn(x, *args)


class HybridCompose(HybridSequential):
    """``Compose`` of HybridBlocks, hybridizable as one graph.

    Examples
    --------
    >>> T = sg.gluon.data.vision.transforms
    >>> t = T.HybridCompose([T.Cast('float32'), T.Normalize(0.5, 0.5)])
    >>> t(sg.nd.array([[[0, 1]]]))  # (x - 0.5) / 0.5
    [[[-1.  1.]]]
    <NDArray 1x1x2 @cpu(0)>
    """

    def __init__(self, transforms: Sequence[HybridBlock]) -> None:
        super().__init__()
        with self.name_scope():
            for t in transforms:
                self.add(t)


class _Tensor(HybridBlock):
    """A hybridizable transform that also takes a numpy image (as a data set yields it)."""

    def forward(self, x: Any, *args: Any) -> Any:
        if isinstance(x, np.ndarray):
            x = nd.array(x, dtype=x.dtype)
        return super().forward(x, *args)


class Cast(_Tensor):
    """Cast to ``dtype`` (default float32).

    Examples
    --------
    >>> T = sg.gluon.data.vision.transforms
    >>> T.Cast('float16')(sg.nd.ones(2)).dtype
    dtype('float16')
    """

    def __init__(self, dtype: Any = "float32") -> None:
        super().__init__()
        self._dtype = np.dtype(dtype).name

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        return F.cast(x, dtype=self._dtype)


class ToTensor(_Tensor):
    """``(H, W, C)`` in [0, 255] to float32 ``(C, H, W)`` in [0, 1] (also a batch
    ``(N, H, W, C)``).

    Examples
    --------
    >>> T = sg.gluon.data.vision.transforms
    >>> t = T.ToTensor()(sg.nd.full((2, 2, 3), 255, dtype='uint8'))
    >>> t.shape, float(t.max())  # (C, H, W), values scaled to [0, 1]
    ((3, 2, 2), 1.0)
    """

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        return F.image.to_tensor(x)


class Normalize(_Tensor):
    """``(x - mean) / std`` per channel of a ``(C, H, W)`` (or ``(N, C, H, W)``) tensor.

    Examples
    --------
    >>> T = sg.gluon.data.vision.transforms
    >>> T.Normalize(mean=0.5, std=0.5)(sg.nd.array([[[0, 1]]]))  # (x - mean) / std
    [[[-1.  1.]]]
    <NDArray 1x1x2 @cpu(0)>
    """

    def __init__(self, mean: Union[float, Sequence[float]] = 0.0,
                 std: Union[float, Sequence[float]] = 1.0) -> None:
        super().__init__()
        self._mean, self._std = mean, std

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        return F.image.normalize(x, mean=self._mean, std=self._std)


# The random flips draw on the host per call: a traced graph would fix one draw forever.
class RandomFlipLeftRight(Block):
    """Flip the width axis with probability 0.5.

    Examples
    --------
    >>> T = sg.gluon.data.vision.transforms
    >>> img = sg.nd.array([[[1], [2]]])  # (H, W, C) = (1, 2, 1)
    >>> out = T.RandomFlipLeftRight()(img)
    >>> out.reshape((2,)).asnumpy().tolist() in ([1.0, 2.0], [2.0, 1.0])
    True
    """

    def forward(self, x: Any, *args: Any) -> Any:
        return nd.image.flip_left_right(x) if _random.generator().random() < 0.5 else x


class RandomFlipTopBottom(Block):
    """Flip the height axis with probability 0.5.

    Examples
    --------
    >>> T = sg.gluon.data.vision.transforms
    >>> img = sg.nd.array([[[1]], [[2]]])  # (H, W, C) = (2, 1, 1)
    >>> out = T.RandomFlipTopBottom()(img)
    >>> out.reshape((2,)).asnumpy().tolist() in ([1.0, 2.0], [2.0, 1.0])
    True
    """

    def forward(self, x: Any, *args: Any) -> Any:
        return nd.image.flip_top_bottom(x) if _random.generator().random() < 0.5 else x


def _wh(size: Size, who: str) -> tuple[int, int]:
    """``size`` as (w, h); one int is a square."""
    wh = (size, size) if isinstance(size, numbers.Integral) else tuple(size)
    if len(wh) != 2 or any(not isinstance(v, numbers.Integral) or v <= 0 for v in wh):
        raise ShapeError(f"{who}: size must be a positive int or (width, height), got {size!r}")
    return int(wh[0]), int(wh[1])


def _resize(img: np.ndarray, w: int, h: int, interp: int) -> np.ndarray:
    return to_host(image_module().imresize(img, w, h, interp))


class Resize(Block):
    """Resize to ``size`` ((w, h), or a square); ``keep_ratio`` with one int scales the
    shorter side to it.

    Examples
    --------
    >>> T = sg.gluon.data.vision.transforms
    >>> img = sg.nd.ones((8, 8, 3), dtype='uint8')  # (H, W, C)
    >>> T.Resize((4, 2))(img).shape  # size is (width, height)
    (2, 4, 3)
    """

    def __init__(self, size: Size, keep_ratio: bool = False, interpolation: int = 1) -> None:
        super().__init__()
        self._size, self._keep, self._interp = size, keep_ratio, interpolation

    def _target(self, h: int, w: int) -> tuple[int, int]:
        if isinstance(self._size, numbers.Integral) and self._keep:
            short = _wh(self._size, "Resize")[0]
            if h > w:
                return short, int(short * h / w)
            return int(short * w / h), short
        return _wh(self._size, "Resize")

    def forward(self, x: Any, *args: Any) -> nd.NDArray:
        def one(img: np.ndarray) -> np.ndarray:
            w, h = self._target(img.shape[0], img.shape[1])
            return _resize(img, w, h, self._interp)
        return per_image(x, one, "Resize")


class CropResize(Block):
    """Crop ``(x, y, width, height)``, then resize to ``size`` when given.

    Examples
    --------
    >>> T = sg.gluon.data.vision.transforms
    >>> img = sg.nd.ones((8, 8, 3), dtype='uint8')  # (H, W, C)
    >>> T.CropResize(x=0, y=0, width=4, height=2)(img).shape
    (2, 4, 3)
    """

    def __init__(self, x: int, y: int, width: int, height: int, size: Any = None,
                 interpolation: int = 1) -> None:
        super().__init__()
        self._box = (x, y, width, height)
        self._size, self._interp = size, interpolation

    def forward(self, x: Any, *args: Any) -> nd.NDArray:
        x0, y0, w, h = self._box
        size = _wh(self._size, "CropResize") if self._size is not None else None

        def one(img: np.ndarray) -> np.ndarray:
            if w <= 0 or h <= 0 or x0 < 0 or y0 < 0 or x0 + w > img.shape[1] or \
                    y0 + h > img.shape[0]:
                raise ShapeError(f"CropResize: box (x={x0}, y={y0}, width={w}, height={h}) "
                                 f"does not fit an image of shape {img.shape}")
            crop = img[y0:y0 + h, x0:x0 + w]
            return crop if size is None else _resize(crop, size[0], size[1], self._interp)
        return per_image(x, one, "CropResize")


class CenterCrop(Block):
    """The centred crop of ``size`` (scaled down to fit and resized back).

    Examples
    --------
    >>> T = sg.gluon.data.vision.transforms
    >>> img = sg.nd.arange(16).reshape((4, 4, 1))
    >>> T.CenterCrop(2)(img).reshape((2, 2))  # the middle 2x2 of 0..15
    [[ 5.  6.]
     [ 9. 10.]]
    <NDArray 2x2 @cpu(0)>
    """

    def __init__(self, size: Size, interpolation: int = 1) -> None:
        super().__init__()
        self._size, self._interp = _wh(size, "CenterCrop"), interpolation

    def forward(self, x: Any, *args: Any) -> nd.NDArray:
        return per_image(x, lambda img: to_host(image_module().center_crop(
            img, self._size, self._interp)[0]), "CenterCrop")


class RandomCrop(Block):
    """A random crop of ``size`` after padding every side by ``pad`` (``pad_value``).

    Examples
    --------
    >>> T = sg.gluon.data.vision.transforms
    >>> img = sg.nd.ones((8, 8, 3), dtype='uint8')  # (H, W, C)
    >>> T.RandomCrop(4)(img).shape
    (4, 4, 3)
    """

    def __init__(self, size: Size, pad: Any = None, pad_value: float = 0,
                 interpolation: int = 1) -> None:
        super().__init__()
        self._size, self._interp = _wh(size, "RandomCrop"), interpolation
        self._pad, self._value = pad, pad_value

    def forward(self, x: Any, *args: Any) -> nd.NDArray:
        def one(img: np.ndarray) -> np.ndarray:
            if self._pad:
                p = self._pad if isinstance(self._pad, (tuple, list)) else (self._pad,) * 2
                img = np.pad(img, ((p[0], p[0]), (p[1], p[1]), (0, 0)),
                             constant_values=self._value)
            return to_host(image_module().random_crop(img, self._size, self._interp)[0])
        return per_image(x, one, "RandomCrop")


class RandomResizedCrop(Block):
    """A crop of random area (fraction in ``scale``) and aspect ratio (in ``ratio``),
    resized to ``size``.

    Examples
    --------
    >>> T = sg.gluon.data.vision.transforms
    >>> img = sg.nd.ones((8, 8, 3), dtype='uint8')  # (H, W, C)
    >>> T.RandomResizedCrop(4)(img).shape
    (4, 4, 3)
    """

    def __init__(self, size: Size, scale: tuple = (0.08, 1.0),
                 ratio: tuple = (3.0 / 4.0, 4.0 / 3.0), interpolation: int = 1) -> None:
        super().__init__()
        self._size, self._scale = _wh(size, "RandomResizedCrop"), scale
        self._ratio, self._interp = ratio, interpolation

    def forward(self, x: Any, *args: Any) -> nd.NDArray:
        return per_image(x, lambda img: to_host(image_module().random_size_crop(
            img, self._size, self._scale, self._ratio, self._interp)[0]), "RandomResizedCrop")
