"""MXNet's shared-memory views of basic indexing, and the NDArray methods that hand an array's
memory to other libraries (DLPack, pickling's raw bytes).

``x[key]`` with ints and slices is, as in MXNet, a *view* sharing ``x``'s memory whenever the
indexed part is contiguous in memory: writing into it writes into ``x`` (``x[0][1] = 5``).
That holds for arrays on the CPU outside ``autograd.record()``; there the index is a recorded
``slice`` (a copy that gradients flow through), as it is on a GPU and for non-contiguous parts.

Example::

    >>> import symgraph as sg
    >>> x = sg.nd.zeros((2, 3))
    >>> x[1][2] = 7
    >>> float(x.asnumpy()[1, 2])
    7.0
"""
from __future__ import annotations

from math import prod
from typing import Any, Optional, Sequence

import numpy as np

from . import ndfile
from ..core.base import BindError, GraphError, ShapeError
from ..core.context import cpu


def slice_is_contiguous(slc_key: Sequence[slice], shape: Sequence[int]) -> bool:
    """Whether ``x[slc_key]`` (one slice per axis of ``shape``) is C-contiguous in ``x``'s
    C-ordered memory: every axis of the result longer than 1 steps through memory by the
    product of the result's later lengths (an empty or one-element result always is).

    Example: ``slice_is_contiguous((slice(1, 2), slice(None)), (4, 5))`` is True."""
    lengths = [len(range(*s.indices(n))) for s, n in zip(slc_key, shape)]
    if prod(lengths) <= 1:
        return True
    for axis, (s, n) in enumerate(zip(slc_key, shape)):
        if lengths[axis] > 1 and prod(shape[axis + 1:]) * s.indices(n)[2] \
                != prod(lengths[axis + 1:]):
            return False
    return True


def _is_basic(k: Any) -> bool:
    return k is None or k is Ellipsis or isinstance(k, (int, np.integer, slice))


def host_view(a: Any, parts: tuple, recording: bool) -> Optional[np.ndarray]:
    """The numpy view of CPU array ``a`` that basic index ``parts`` (ints, slices, None,
    Ellipsis) selects, when it is contiguous and nothing is recorded; else None. A 0-d
    result has shape (1,) as in MXNet (indexing gives no 0-d arrays)."""
    if recording or a.context.device_type != "cpu" or not all(_is_basic(k) for k in parts):
        return None
    if not any(k is Ellipsis for k in parts):
        parts = parts + (Ellipsis,)  # (a 0-d view, never a numpy scalar)
    view = a._data[parts]
    if not view.flags.c_contiguous:
        return None
    return view.reshape(1) if view.ndim == 0 else view


def flat_positions(shape: tuple, key: Any) -> np.ndarray:
    """The positions in the flattened array of what numpy index ``key`` (NDArrays in it
    already read as numpy arrays) selects: an index ``take`` can record, arrays included,
    as one gather."""
    positions = np.arange(prod(shape), dtype=np.int64).reshape(shape)[key]
    return positions.reshape(1) if positions.ndim == 0 else positions


def fit_value(value: Any, target: Any, key: Any) -> Any:
    """``value`` shaped for ``target`` (the indexed part): as MXNet, a value with the same
    number of elements is reshaped (``b[0] = np.array([x])``), otherwise it must broadcast."""
    arr = np.asarray(value)
    shape = np.shape(target)
    if arr.shape != shape and arr.size == int(np.prod(shape, dtype=np.int64)):
        return arr.reshape(shape)
    while arr.ndim > len(shape) and arr.shape[0] == 1:  # MXNet drops leading 1-axes
        arr = arr[0]
    try:
        np.broadcast_to(arr, shape)
    except ValueError:
        raise BindError(f"cannot assign an array of shape {arr.shape} to index {key!r} "
                        f"(shape {shape})") from None
    return arr


def check_write(a: Any, key: Any, value: Any, eng: Any) -> None:
    """Refuse ``a[key] = value`` under ``autograd.record()`` when ``value`` is part of the
    recorded graph (MXNet refuses it too): the write would copy the value out of the graph,
    and the gradient to it would silently be lost. ``a[:] = value`` stays a plain copy."""
    if eng is None or not eng.is_recording() or not hasattr(value, "_recorded"):
        return
    if not (value._recorded or value._var is not None):
        return
    if key is None or key is Ellipsis or (isinstance(key, slice) and key == slice(None)):
        return  # (the whole array: a copy, as MXNet)
    raise GraphError(f"Inplace operations (+=, -=, x[:]=, etc) are not supported when "
                     f"recording with autograd: x[{key!r}] = value, where value (shape "
                     f"{value.shape}) is recorded, would not pass its gradient on; build the "
                     f"result with ops (where, concat, slice_assign) instead")


def axes_of(axes: Any, ndim: int, what: str) -> list[int]:
    """``axes`` (an int or a sequence of them) as distinct axes of an ``ndim``-d array, each
    in range (negative ones counting from the end); ShapeError (a ValueError) otherwise."""
    given = [axes] if isinstance(axes, (int, np.integer)) else list(axes)
    out = []
    for ax in given:
        if not -ndim <= int(ax) < ndim:
            raise ShapeError(f"moveaxis: {what} axis {ax} is out of range for {ndim} axes")
        out.append(int(ax) % ndim)
    if len(set(out)) != len(out):
        raise ShapeError(f"moveaxis: repeated axis in {what} {axes}")
    return out


class InteropMethods:
    """NDArray's DLPack export and MXNet's pickle state (raw bytes of one array record)."""

    __slots__ = ()

    _basic_indexing_slice_is_contiguous = staticmethod(slice_is_contiguous)  # MXNet's name

    def _host_buffer(self, what: str) -> np.ndarray:
        if self.context.device_type != "cpu":  # type: ignore[attr-defined]
            raise BindError(f"{what}: only CPU arrays can be shared through DLPack here; "
                            f"copy to sg.cpu() first (array on {self.context})")
        self.wait_to_read()  # type: ignore[attr-defined]
        return self._data  # type: ignore[attr-defined]

    def to_dlpack_for_read(self) -> Any:
        """A DLPack capsule of this array's memory, to read (``sg.nd.from_dlpack``,
        ``torch.utils.dlpack.from_dlpack``). Example:
        ``sg.nd.from_dlpack(sg.nd.ones((2,)).to_dlpack_for_read()).shape == (2,)``."""
        return self._host_buffer("to_dlpack_for_read").__dlpack__()

    def to_dlpack_for_write(self) -> Any:
        """A DLPack capsule of this array's memory, to write: the other library's writes
        show in this array."""
        return self._host_buffer("to_dlpack_for_write").__dlpack__()

    def __getstate__(self) -> dict:
        """MXNet's pickle state: ``{'handle': the array's record in MXNet's file format}``."""
        return {"handle": bytearray(ndfile.record_bytes(self))}

    def __setstate__(self, state: dict) -> None:
        """Become the array that MXNet's state holds, on the CPU (a GPU array's state loads
        where no GPU is). Example: ``y.__setstate__(x.__getstate__())``."""
        handle = state.get("handle") if isinstance(state, dict) else None
        if not isinstance(handle, (bytes, bytearray)):
            raise BindError(f"NDArray.__setstate__: expected {{'handle': bytes}}, got "
                            f"{type(state).__name__}")
        values = ndfile.record_from_bytes(bytes(handle))
        self._buf, self._ctx = values, cpu()  # type: ignore[attr-defined]
        self._entry, self._recorded, self._var = None, False, None  # type: ignore
        self._grad, self._grad_req, self._fresh_grad = None, "null", False  # type: ignore
        self._shape, self._dtype = None, None  # type: ignore[attr-defined]
