"""MXNet's ``mx.nd`` functions that are not ops: zero-copy exchange with numpy and DLPack,
loading an array file from memory, the legacy ``onehot_encode``, and the ``contrib``
tests ``isinf``/``isnan``/``isfinite`` (composed from ops, so they work on symbols too).

Example::

    >>> import numpy as np, symgraph as sg
    >>> a = np.zeros((2, 2), np.float32)
    >>> x = sg.nd.from_numpy(a)          # shares a's memory
    >>> x[0, 1] = 5
    >>> float(a[0, 1])
    5.0
"""
from __future__ import annotations

import ctypes
from typing import Any, Union

import numpy as np

from ..core.base import AttrError, BindError, DataError
from ..core.context import cpu
from ..runtime import ndarray as nd, ndfile
from ..runtime.ndarray import NDArray


def from_numpy(ndarray: np.ndarray, zero_copy: bool = True) -> NDArray:
    """An NDArray on the CPU holding ``ndarray``'s values. With ``zero_copy`` (MXNet's
    default) it shares the memory, which must be C-contiguous, and the numpy array becomes
    read-only (writes go through the NDArray, as MXNet). Example:
    ``sg.nd.from_numpy(np.ones(3, np.float32)).shape == (3,)``."""
    if not isinstance(ndarray, np.ndarray):
        raise AttrError(f"from_numpy: expected a numpy.ndarray, got {type(ndarray).__name__}")
    if not zero_copy:
        return NDArray(np.array(ndarray, copy=True), cpu())
    if not ndarray.flags.c_contiguous:
        raise BindError(f"from_numpy(zero_copy=True): the array (shape {ndarray.shape}, "
                        f"strides {ndarray.strides}) is not C-contiguous; pass "
                        f"np.ascontiguousarray(a) or zero_copy=False")
    ndarray.flags.writeable = False  # (MXNet takes the buffer over: the source is read-only)
    return NDArray(_writable_alias(ndarray), cpu())


def _writable_alias(source: np.ndarray) -> np.ndarray:
    """The memory of C-contiguous ``source`` as a writable array, also when ``source`` is
    read-only (numpy's own views of it would be); the alias keeps ``source`` alive."""
    if not source.size:
        return np.array(source, copy=True)
    memory = (ctypes.c_char * source.nbytes).from_address(source.ctypes.data)
    memory._source = source  # type: ignore[attr-defined]
    return np.frombuffer(memory, source.dtype).reshape(source.shape)


class _Capsule:
    """A DLPack capsule as numpy's ``from_dlpack`` takes it (an object with ``__dlpack__``);
    symgraph exports CPU memory only."""

    def __init__(self, capsule: Any) -> None:
        self.capsule = capsule

    def __dlpack__(self, **kwargs: Any) -> Any:
        return self.capsule

    def __dlpack_device__(self) -> tuple[int, int]:
        return (1, 0)  # kDLCPU


def from_dlpack(dlpack: Any) -> NDArray:
    """An NDArray sharing the memory of a DLPack capsule (``to_dlpack_for_read``/``_write``
    of an NDArray, or another library's CPU tensor). Example:
    ``sg.nd.from_dlpack(sg.nd.to_dlpack_for_read(sg.nd.ones((2,)))).shape == (2,)``."""
    source = dlpack if hasattr(dlpack, "__dlpack__") else _Capsule(dlpack)
    try:
        values = np.from_dlpack(source)
    except (TypeError, ValueError, BufferError, RuntimeError) as exc:
        raise BindError(f"from_dlpack: cannot read the capsule as CPU memory: {exc}") from None
    if not values.flags.writeable and values.flags.c_contiguous:  # (numpy marks it read-only)
        values = _writable_alias(values)
    return NDArray(values, cpu())


def to_dlpack_for_read(data: NDArray) -> Any:
    """``data.to_dlpack_for_read()``: a DLPack capsule of its memory."""
    return data.to_dlpack_for_read()


def to_dlpack_for_write(data: NDArray) -> Any:
    """``data.to_dlpack_for_write()``: a DLPack capsule of its memory, to write."""
    return data.to_dlpack_for_write()


def load_frombuffer(buf: Union[bytes, bytearray, str]) -> Union[list, dict]:
    """``sg.nd.load`` of a file's contents already in memory: a dict when the arrays have
    names, else a list. Damaged contents raise DataError. Example:
    ``sg.nd.load_frombuffer(open("x.params", "rb").read())``."""
    if isinstance(buf, str):
        buf = buf.encode("latin-1")
    if not isinstance(buf, (bytes, bytearray)):
        raise DataError(f"load_frombuffer: expected bytes, got {type(buf).__name__}")
    arrays, names = ndfile.load_bytes(bytes(buf))
    if not names:
        return [NDArray(a, cpu()) for a in arrays]
    return {k: NDArray(a, cpu()) for k, a in zip(names, arrays)}


def onehot_encode(indices: NDArray, out: NDArray) -> NDArray:
    """MXNet's legacy one-hot: row ``i`` of ``out`` (N, depth) becomes 1 at column
    ``indices[i]`` and 0 elsewhere; returns ``out``. Example:
    ``sg.nd.onehot_encode(sg.nd.array([1, 0]), sg.nd.zeros((2, 3)))``."""
    if indices.ndim != 1 or out.ndim != 2 or out.shape[0] != indices.shape[0]:
        raise BindError(f"onehot_encode: indices (N,) and out (N, depth) expected, got "
                        f"{indices.shape} and {out.shape}")
    out[:] = nd.one_hot(indices, depth=out.shape[1], dtype=out.dtype.name)  # (op function)
    return out


def isinf(data: Any) -> Any:
    """1 where ``data`` is +-infinity, else 0 (``contrib.isinf``), in data's dtype."""
    return data.abs() == np.inf


def isnan(data: Any) -> Any:
    """1 where ``data`` is NaN, else 0 (``contrib.isnan``): NaN alone differs from itself."""
    return data != data


def isfinite(data: Any) -> Any:
    """1 where ``data`` is neither infinite nor NaN, else 0 (``contrib.isfinite``)."""
    return (data == data) * (data.abs() != np.inf)


FUNCTIONS = {f.__name__: f for f in (from_numpy, from_dlpack, to_dlpack_for_read,
                                     to_dlpack_for_write, load_frombuffer, onehot_encode)}
CONTRIB = {f.__name__: f for f in (isinf, isnan, isfinite)}
