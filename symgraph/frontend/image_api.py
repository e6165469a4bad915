"""``sg.nd.image`` and ``sg.sym.image``: MXNet's image ops on ``(H, W, C)`` images and
``(N, H, W, C)`` batches, usable in a hybridized transform.

The flips are ops (symgraph/ops/image.py). ``to_tensor``, ``normalize`` and ``crop`` are
compositions of registered ops (a cast, axis swaps, slices, scalar arithmetic): they get shapes, dtypes,
fusion and CUDA code from those ops, and no op of their own is needed.
"""
from __future__ import annotations

from types import SimpleNamespace
from typing import Any, Sequence, Union

from ..core.base import ShapeError
from ..core.registry import all_ops

Values = Union[float, Sequence[float]]


def _ndim(x: Any, name: str, allowed: tuple) -> None:
    """A ShapeError for an NDArray of the wrong rank (a Symbol's rank is not known yet)."""
    shape = getattr(x, "shape", None)
    if isinstance(shape, tuple) and len(shape) not in allowed:
        raise ShapeError(f"image.{name}: expected an input of {' or '.join(map(str, allowed))} "
                         f"axes ((H, W, C) or (N, H, W, C)), got shape {shape}")


def _values(v: Values) -> list[float]:
    return [float(a) for a in (v if isinstance(v, (list, tuple)) else [v])]


def _to_tensor(ns: dict) -> Any:
    cast, swap = ns["Cast"], ns["SwapAxis"]

    def to_tensor(data: Any, **kwargs: Any) -> Any:
        """``(H, W, C)`` (or ``(N, H, W, C)``) in [0, 255] to float32 ``(C, H, W)`` (or
        ``(N, C, H, W)``) in [0, 1].

        Examples
        --------
        >>> t = sg.nd.image.to_tensor(sg.nd.full((4, 5, 3), 255, dtype='uint8'))
        >>> t.shape, float(t.max())
        ((3, 4, 5), 1.0)
        """
        _ndim(data, "to_tensor", (3, 4))
        x = cast(data, dtype="float32")
        # moving the last axis 2 places left: (.., H, W, C) -> (.., C, H, W), for 3 or 4 axes
        x = swap(swap(x, dim1=-1, dim2=-2), dim1=-2, dim2=-3)
        return x * (1.0 / 255.0)
    return to_tensor


def _normalize(ns: dict) -> Any:
    split, concat = ns["split"], ns["concat"]

    def normalize(data: Any, mean: Values = 0.0, std: Values = 1.0, **kwargs: Any) -> Any:
        """``(x - mean[c]) / std[c]`` over the channel axis of ``(C, H, W)`` or
        ``(N, C, H, W)`` float data (one value applies to every channel).

        Examples
        --------
        >>> sg.nd.image.normalize(sg.nd.array([[[1]], [[3]]]), mean=(1, 2), std=(1, 0.5))
        [[[0.]]
        <BLANKLINE>
         [[2.]]]
        <NDArray 2x1x1 @cpu(0)>
        """
        _ndim(data, "normalize", (3, 4))
        means, stds = _values(mean), _values(std)
        n = max(len(means), len(stds))
        if len(means) not in (1, n) or len(stds) not in (1, n):
            raise ShapeError(f"image.normalize: mean has {len(means)} values and std "
                             f"{len(stds)}; give one value or one per channel")
        shape = getattr(data, "shape", None)
        if isinstance(shape, tuple) and n > 1 and shape[-3] != n:
            raise ShapeError(f"image.normalize: {n} mean/std values for {shape[-3]} channels "
                             f"(input shape {shape})")
        means, stds = means * (n // len(means)), stds * (n // len(stds))
        if n == 1:
            return (data - means[0]) * (1.0 / stds[0])
        parts = split(data, num_outputs=n, axis=-3)
        return concat(*[(parts[c] - means[c]) * (1.0 / stds[c]) for c in range(n)], dim=-3)
    return normalize


def _crop(ns: dict) -> Any:
    slice_axis = ns["slice_axis"]

    def crop(data: Any, x: int, y: int, width: int, height: int, **kwargs: Any) -> Any:
        """The ``width`` x ``height`` window at column ``x``, row ``y`` of an ``(H, W, C)``
        image or each image of an ``(N, H, W, C)`` batch (two slices: the gradient is the
        head gradient placed in zeros).

        Examples
        --------
        >>> img = sg.nd.arange(16).reshape((4, 4, 1))  # (H, W, C)
        >>> sg.nd.image.crop(img, x=1, y=2, width=2, height=1).reshape((2,))  # row 2, cols 1-2
        [ 9. 10.]
        <NDArray 2 @cpu(0)>
        """
        _ndim(data, "crop", (3, 4))
        shape = getattr(data, "shape", None)
        if width <= 0 or height <= 0 or x < 0 or y < 0 or (isinstance(shape, tuple) and (
                x + width > shape[-2] or y + height > shape[-3])):
            raise ShapeError(f"image.crop: window x={x}, y={y}, width={width}, "
                             f"height={height} does not fit the input of shape {shape}")
        rows = slice_axis(data, axis=-3, begin=y, end=y + height)
        return slice_axis(rows, axis=-2, begin=x, end=x + width)
    return crop


def make_namespace(ns: dict) -> SimpleNamespace:
    """The ``image`` namespace over op functions ``ns`` (``sg.nd``'s or ``sg.sym``'s): every
    ``_image_X`` op as ``X`` (MXNet's routing), and the compositions above."""
    ops = {k[len("_image_"):]: ns[k] for k in all_ops() if k.startswith("_image_")}
    return SimpleNamespace(**ops, to_tensor=_to_tensor(ns), normalize=_normalize(ns),
                           crop=_crop(ns))
