"""Host-side helpers shared by the image transforms (``basic`` and ``color``): images as numpy
arrays in, NDArrays of the input's dtype out."""
from __future__ import annotations

from typing import Any

import numpy as np

from .....runtime import ndarray as nd
from .....core.base import DataError, ShapeError


def image_module() -> Any:
    """``sg.image`` (imported on first use: it loads Pillow)."""
    from .....training import image
    return image


def to_host(x: Any) -> np.ndarray:
    """An NDArray's values (or anything array-like) as a numpy array."""
    return x.asnumpy() if isinstance(x, nd.NDArray) else np.asarray(x)


def like(values: np.ndarray, dtype: Any) -> nd.NDArray:
    """``values`` as an NDArray of ``dtype``."""
    return nd.array(values.astype(dtype, copy=False), dtype=dtype)


def per_image(x: Any, fn: Any, who: str) -> nd.NDArray:
    """``fn`` (an (H, W, C) host array -> host array) on an image or each image of a batch."""
    host = to_host(x)
    if host.ndim == 3:
        return like(fn(host), host.dtype)
    if host.ndim == 4:
        return like(np.stack([fn(img) for img in host]), host.dtype)
    raise ShapeError(f"{who}: expected an (H, W, C) image or an (N, H, W, C) batch, got "
                     f"shape {host.shape}")


def check_proba(p: float, who: str) -> float:
    """``p`` if it is a probability; DataError naming the transform ``who`` otherwise."""
    if not 0.0 <= p <= 1.0:
        raise DataError(f"{who}: probability must be in [0, 1], got {p}")
    return p
