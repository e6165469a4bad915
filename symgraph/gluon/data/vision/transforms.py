"""``gluon.data.vision.transforms``: per-sample image transforms (MXNet 1.x names).

They run on the host, on each sample's numpy data, and return CPU NDArrays: a data loader
transforms one small image at a time, where building and compiling a graph per sample would
cost far more than the arithmetic. ``Compose`` chains them.
"""
from __future__ import annotations

from typing import Any, Sequence, Union

import numpy as np

from .... import ndarray as nd
from ....base import DTypeError, ShapeError
from ...block import Block


def _host(x: Any) -> np.ndarray:
    return x.asnumpy() if isinstance(x, nd.NDArray) else np.asarray(x)


class Compose(Block):
    """Applies ``transforms`` in order."""

    def __init__(self, transforms: Sequence[Any]) -> None:
        super().__init__()
        self._transforms = list(transforms)
        for i, t in enumerate(self._transforms):
            if isinstance(t, Block):
                self.register_child(t, str(i))

    def forward(self, x: Any, *args: Any) -> Any:
        for t in self._transforms:
            x = t(x)
        return x


class Cast(Block):
    """Cast to ``dtype`` (default float32)."""

    def __init__(self, dtype: Any = "float32") -> None:
        super().__init__()
        self._dtype = np.dtype(dtype)

    def forward(self, x: Any, *args: Any) -> nd.NDArray:
        return nd.array(_host(x), dtype=self._dtype)


class ToTensor(Block):
    """``(H, W, C)`` uint8 in [0, 255] to ``(C, H, W)`` float32 in [0, 1] (also for a batch
    ``(N, H, W, C)``)."""

    def forward(self, x: Any, *args: Any) -> nd.NDArray:
        host = _host(x)
        if host.ndim not in (3, 4):
            raise ShapeError(f"ToTensor: expected an (H, W, C) or (N, H, W, C) image, got "
                             f"shape {host.shape}")
        axes = (2, 0, 1) if host.ndim == 3 else (0, 3, 1, 2)
        out = np.ascontiguousarray(host.transpose(axes), dtype=np.float32) / np.float32(255)
        return nd.array(out, dtype=np.float32)


class Normalize(Block):
    """``(x - mean) / std`` per channel of a ``(C, H, W)`` (or ``(N, C, H, W)``) tensor."""

    def __init__(self, mean: Union[float, Sequence[float]] = 0.0,
                 std: Union[float, Sequence[float]] = 1.0) -> None:
        super().__init__()
        self._mean = np.asarray(mean, np.float32).reshape(-1)
        self._std = np.asarray(std, np.float32).reshape(-1)

    def forward(self, x: Any, *args: Any) -> nd.NDArray:
        host = _host(x)
        if host.dtype.kind != "f":
            raise DTypeError(f"Normalize: expected a float tensor (use ToTensor first), got "
                             f"{host.dtype}")
        c_axis = host.ndim - 3
        channels = host.shape[c_axis] if host.ndim in (3, 4) else 0
        for name, v in (("mean", self._mean), ("std", self._std)):
            if v.size not in (1, channels):
                raise ShapeError(f"Normalize: {name} has {v.size} values for {channels} "
                                 f"channels (input shape {host.shape})")
        shape = (-1, 1, 1)
        out = (host - self._mean.reshape(shape)) / self._std.reshape(shape)
        return nd.array(out.astype(host.dtype), dtype=host.dtype)
