"""``sg.nd``: arrays bound to executors. On ``sg.cpu()`` an NDArray wraps a numpy array; on
``sg.gpu(i)`` it wraps device memory (``symgraph.cuda``)."""
from __future__ import annotations

from typing import Any, Optional, Sequence, Union

import numpy as np

from .base import BindError
from .context import Context, cpu, current_context


class NDArray:
    """A fixed-shape, fixed-dtype array on a device. ``x[:] = value`` writes in place."""

    __slots__ = ("_data", "_ctx")
    __array_priority__ = 1000.0

    def __init__(self, data: Any, ctx: Optional[Context] = None) -> None:
        self._data = data
        self._ctx = ctx or cpu()

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self._data.shape)

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(self._data.dtype)

    @property
    def context(self) -> Context:
        return self._ctx

    ctx = context

    @property
    def size(self) -> int:
        return int(np.prod(self.shape))

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def asnumpy(self) -> np.ndarray:
        """A numpy copy of the contents."""
        if self._ctx.device_type == "cpu":
            return np.array(self._data, copy=True)
        return self._data.get()

    def asscalar(self) -> Any:
        if self.size != 1:
            raise BindError(f"asscalar needs a 1-element array, got shape {self.shape}")
        return self.asnumpy().reshape(())[()]

    def __setitem__(self, key: Any, value: Any) -> None:
        if isinstance(value, NDArray):  # a host array is only read: no copy (per-batch path)
            value = value._data if value._ctx.device_type == "cpu" else value.asnumpy()
        if self._ctx.device_type == "cpu":
            if isinstance(key, slice) and key == slice(None):
                arr = np.asarray(value)
                try:
                    np.broadcast_to(arr, self.shape)
                except ValueError:
                    raise BindError(f"cannot assign an array of shape {arr.shape} to an "
                                    f"NDArray of shape {self.shape}") from None
                np.copyto(self._data, arr, casting="unsafe")
            else:
                self._data[key] = value
        else:
            from .cuda.runtime import write_device
            write_device(self, key, value)

    def __getitem__(self, key: Any) -> "NDArray":
        return array(self.asnumpy()[key], self._ctx)

    def copyto(self, other: Union["NDArray", Context]) -> "NDArray":
        """Copy into ``other`` (an NDArray of the same shape) or a new array on a context."""
        if isinstance(other, Context):
            return array(self.asnumpy(), other, self.dtype)
        if other.shape != self.shape:
            raise BindError(f"copyto: shape {self.shape} into {other.shape}")
        other[:] = self
        return other

    def as_in_context(self, ctx: Context) -> "NDArray":
        return self if ctx == self._ctx else self.copyto(ctx)

    def astype(self, dtype: Any) -> "NDArray":
        return array(self.asnumpy(), self._ctx, dtype)

    def reshape(self, *shape: Any) -> "NDArray":
        shape = shape[0] if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape
        return array(self.asnumpy().reshape(shape), self._ctx)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        a = self.asnumpy()
        return a if dtype is None else a.astype(dtype)

    def __repr__(self) -> str:
        return f"\n{self.asnumpy()}\n<NDArray {'x'.join(map(str, self.shape))} @{self._ctx}>"

    def __len__(self) -> int:
        return self.shape[0]

    # Arithmetic returns new arrays on the same context (convenience, not a hot path).
    def _op(self, other: Any, fn: Any) -> "NDArray":
        o = other.asnumpy() if isinstance(other, NDArray) else other
        return array(fn(self.asnumpy(), o), self._ctx)

    def __add__(self, o: Any) -> "NDArray":
        return self._op(o, np.add)

    def __sub__(self, o: Any) -> "NDArray":
        return self._op(o, np.subtract)

    def __mul__(self, o: Any) -> "NDArray":
        return self._op(o, np.multiply)

    def __truediv__(self, o: Any) -> "NDArray":
        return self._op(o, np.divide)

    def __neg__(self) -> "NDArray":
        return array(-self.asnumpy(), self._ctx)

    __radd__ = __add__
    __rmul__ = __mul__


def array(source: Any, ctx: Optional[Context] = None, dtype: Any = None) -> NDArray:
    """A new NDArray holding a copy of ``source``.

    As in MXNet, the dtype is ``dtype`` if given, the source's for an NDArray, else float32
    (also for float64 numpy arrays)."""
    ctx = ctx or current_context()
    if dtype is None:
        dtype = source.dtype if isinstance(source, NDArray) else np.float32
    src = source.asnumpy() if isinstance(source, NDArray) else source
    host = np.array(src, dtype=dtype, copy=True)
    if ctx.device_type == "cpu":
        return NDArray(host, ctx)
    from .cuda.runtime import to_device
    return NDArray(to_device(host, ctx), ctx)


def empty(shape: Union[int, Sequence[int]], ctx: Optional[Context] = None,
          dtype: Any = np.float32) -> NDArray:
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    return array(np.zeros(shape, dtype), ctx, dtype)


def zeros(shape: Union[int, Sequence[int]], ctx: Optional[Context] = None,
          dtype: Any = np.float32) -> NDArray:
    return empty(shape, ctx, dtype)


def ones(shape: Union[int, Sequence[int]], ctx: Optional[Context] = None,
         dtype: Any = np.float32) -> NDArray:
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    return array(np.ones(shape, dtype), ctx, dtype)


def full(shape: Union[int, Sequence[int]], val: float, ctx: Optional[Context] = None,
         dtype: Any = np.float32) -> NDArray:
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    return array(np.full(shape, val, dtype), ctx, dtype)


def save(fname: str, data: Union[dict, list, NDArray]) -> None:
    """Save NDArrays in MXNet's NDArray-list format (``mx.nd.save``): a dict keeps its names, a
    list (or one array) is saved in order without names. The file is replaced atomically."""
    from . import ndfile
    ndfile.save(fname, data)


def load(fname: str) -> Union[dict[str, NDArray], list[NDArray]]:
    """Load an MXNet NDArray-list file (or symgraph's older ``.npz``) as CPU NDArrays: a dict if
    the file holds names, else a list, as ``mx.nd.load``. Damaged files raise DataError."""
    from . import ndfile
    arrays, names = ndfile.load(fname)
    if names is None:
        return [NDArray(a, cpu()) for a in arrays]
    return {k: NDArray(a, cpu()) for k, a in zip(names, arrays)}
