"""``sg.nd``: arrays, and every registered op called on them (``sg.nd.relu(x)``).

An NDArray is either *materialised* (it holds ``_buf``: a numpy array on ``sg.cpu()``, device
memory on ``sg.gpu(i)``) or *pending*: the result of an op call not yet computed, standing for
one output of a node of a graph that ``symgraph.imperative`` records. Reading the value
(``asnumpy``, ``_data``, ``bool``, printing, binding it to an executor) compiles and runs what it
depends on through the ordinary pipeline; see docs/imperative.md. Executors bind the same class.
"""
from __future__ import annotations

import builtins
from typing import Any, Iterator, Optional, Sequence, Union

import math

import numpy as np

from . import ndfile
from ..compiler.ops import custom
from ..compiler.ops.creation_range import arange_array
from ..core.base import BindError, ShapeError
from ..core.dtypes import as_dtype
from ..core.types.shapes import as_shape
from ..core.context import Context, cpu, current_context
# (the imperative engine builds on this module and plugs itself in: nd_operators.set_engine)
from .nd_operators import ArrayMethods, engine, host_key as _host_key
from .nd_views import InteropMethods, axes_of, check_write, fit_value

Shape = Union[int, Sequence[int]]
_new_object = object.__new__
# nd_methods.fill adds the op functions (export())
__all__ = ["NDArray", "array", "empty", "zeros", "ones", "full", "arange", "linspace", "eye",
           "concatenate", "moveaxis", "stack", "waitall", "save", "load"]


def before_run() -> None:
    """An executor is about to overwrite its bound arrays: the engine computes pending work
    that reads them first."""
    eng = engine()
    if eng is not None:
        eng.before_run()


class NDArray(ArrayMethods, InteropMethods):
    """A fixed-shape, fixed-dtype array on a device. ``x[:] = value`` writes in place.

    Example: ``sg.nd.array([1, 2]) * 2`` records ``_mul_scalar`` (operators, indexing and the
    fluent methods come from :class:`~symgraph.runtime.nd_operators.ArrayMethods`)."""

    __slots__ = ("_buf", "_ctx", "_entry", "_recorded", "_var", "_grad", "_grad_req",
                 "_shape", "_dtype", "_fresh_grad", "__weakref__")
    __array_priority__ = 1000.0

    def __init__(self, data: Any, ctx: Optional[Context] = None) -> None:
        self._buf = data
        self._ctx = ctx or cpu()
        self._entry = None  # graph entry: pending value, or recorded for autograd
        self._recorded = False
        self._var = None  # variable node standing for this value in recorded graphs
        self._grad: Optional[NDArray] = None
        self._grad_req = "null"
        self._shape: Optional[tuple] = None  # only while pending
        self._dtype: Optional[np.dtype] = None
        self._fresh_grad = False  # a backward() wrote .grad since the last optimizer step

    @staticmethod
    def pending(ctx: Context, entry: Any, shape: tuple, dtype: np.dtype,
                recorded: bool) -> "NDArray":
        """A pending array standing for graph entry ``entry`` (of ``shape`` and ``dtype``),
        without ``__init__``'s frame (the imperative engine makes one per op output)."""
        a = _new_object(NDArray)
        a._buf, a._ctx, a._entry, a._recorded = None, ctx, entry, recorded
        a._shape, a._dtype, a._var, a._grad = shape, dtype, None, None
        a._grad_req, a._fresh_grad = "null", False
        return a

    def _host_array(self, values: Any) -> "NDArray":
        return array(values, self._ctx, self.dtype)

    def _fluent_function(self, name: str) -> Any:
        fn = globals().get(name)  # sg.nd's function (this module is sg.nd)
        if fn is None:
            raise AttributeError(f"NDArray has no method {name!r}: sg.nd has no such function")
        return fn

    # -- value ------------------------------------------------------------------------------
    @property
    def _data(self) -> Any:
        """The buffer; computes a pending array first."""
        if self._buf is None:
            engine().force([self])
        return self._buf

    @_data.setter
    def _data(self, value: Any) -> None:
        self._buf = value

    @property
    def is_pending(self) -> bool:
        """True while the value is recorded but not computed yet."""
        return self._buf is None

    @property
    def shape(self) -> tuple[int, ...]:
        b = self._buf
        return tuple(b.shape) if b is not None else self._shape

    @property
    def dtype(self) -> np.dtype:
        b = self._buf
        return np.dtype(b.dtype) if b is not None else self._dtype

    @property
    def context(self) -> Context:
        return self._ctx

    ctx = context

    @property
    def size(self) -> int:
        return math.prod(self.shape)  # a numpy reduction cost more than the rest of a step

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def grad(self) -> Optional["NDArray"]:
        """The gradient buffer given by :meth:`attach_grad` (None before)."""
        return self._grad

    @property
    def grad_req(self) -> str:
        return self._grad_req

    def asnumpy(self) -> np.ndarray:
        """A numpy copy of the contents."""
        data = self._data
        if self._ctx.device_type == "cpu":
            return np.array(data, copy=True)
        return data.get()

    def asscalar(self) -> Any:
        if self.size != 1:
            raise BindError(f"asscalar needs a 1-element array, got shape {self.shape}")
        return self.asnumpy().reshape(())[()]

    def wait_to_read(self) -> None:
        """Compute the value if it is pending (and wait for the device)."""
        engine().wait(self)

    def __bool__(self) -> bool:
        if self.size == 0:
            return False
        if self.size != 1:
            raise ShapeError(f"the truth value of an NDArray of shape {self.shape} is "
                             f"ambiguous; use .asnumpy().any() or .all()")
        return bool(self.asscalar())

    def __float__(self) -> float:
        return float(self.asscalar())

    def __int__(self) -> int:
        return int(self.asscalar())

    def __index__(self) -> int:
        return int(self.asscalar())

    # -- writing ----------------------------------------------------------------------------
    def __setitem__(self, key: Any, value: Any) -> None:
        check_write(self, key, value, engine())
        engine().before_write(self)
        if isinstance(value, NDArray):  # a host array is only read: no copy (per-batch path)
            if value._ctx.device_type == "cpu":
                value = value._data
            elif (value._ctx == self._ctx and isinstance(key, builtins.slice)
                  and key == builtins.slice(None) and value.shape == self.shape
                  and value.dtype == self.dtype):
                from .cuda.runtime import copy_device
                return copy_device(self, value)
            else:
                value = value.asnumpy()
        if self._ctx.device_type == "cpu":
            if isinstance(key, builtins.slice) and key == builtins.slice(None):
                arr = np.asarray(value)
                try:
                    np.broadcast_to(arr, self.shape)
                except ValueError:
                    raise BindError(f"cannot assign an array of shape {arr.shape} to an "
                                    f"NDArray of shape {self.shape}") from None
                np.copyto(self._buf, arr, casting="unsafe")
            else:
                self._buf[_host_key(key)] = fit_value(value, self._buf[_host_key(key)], key)
        else:
            from .cuda.runtime import write_device
            write_device(self, _host_key(key), value)

    def copyto(self, other: Union["NDArray", Context]) -> "NDArray":
        """Copy into ``other`` (an NDArray of the same shape) or a new array on a context."""
        if isinstance(other, Context):
            if other == self._ctx:
                return engine().call("identity", [self], {})
            eng = engine()
            if self._recorded and eng is not None and eng.is_recording():
                # a recorded graph runs on one device: a copy to another would cut the
                # gradient's path (a silently zero gradient), so it is refused by name
                raise BindError(f"copy of a recorded array from {self._ctx} to {other} inside "
                                f"autograd.record(): gradients do not cross devices here; copy "
                                f"before recording, or compute on one device")
            return array(self.asnumpy(), other, self.dtype)
        if other.shape != self.shape:
            raise BindError(f"copyto: shape {self.shape} into {other.shape}")
        other[:] = self
        return other

    def as_in_context(self, ctx: Context) -> "NDArray":
        return self if ctx is self._ctx or ctx == self._ctx else self.copyto(ctx)

    def copy(self) -> "NDArray":
        return self.copyto(self._ctx)

    def astype(self, dtype: Any, copy: bool = True) -> "NDArray":
        if not copy and as_dtype(dtype) == self.dtype:
            return self
        return engine().call("Cast", [self], {"dtype": as_dtype(dtype).name})

    def reshape(self, *shape: Any, **kwargs: Any) -> "NDArray":
        """MXNet's reshape: 0 keeps an axis, -1 infers one, -2 copies the rest, -3 merges two,
        -4 splits one; ``reverse=True`` reads the codes from the right."""
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        if "shape" in kwargs:
            shape = tuple(kwargs.pop("shape"))
        return engine().call("Reshape", [self], {"shape": tuple(shape), **kwargs})

    def detach(self) -> "NDArray":
        """The same value, outside any recorded graph."""
        return engine().detach(self)

    def attach_grad(self, grad_req: str = "write", stype: Optional[str] = None) -> None:
        """Allocate ``.grad`` (zeros) and make this array a variable autograd differentiates."""
        engine().attach_grad(self, grad_req)

    def __reduce__(self) -> tuple:
        """Pickle the value (DataLoader workers send batches between processes), never the
        recorded graph: the copy is a computed array on the same context."""
        return (array, (self.asnumpy(), self._ctx, self.dtype))

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        a = self.asnumpy()
        return a if dtype is None else a.astype(dtype)

    def __repr__(self) -> str:
        return f"\n{self.asnumpy()}\n<NDArray {'x'.join(map(str, self.shape))} @{self._ctx}>"

    def __len__(self) -> int:
        return self.shape[0]

    def __iter__(self) -> Iterator["NDArray"]:
        return (self[i] for i in range(len(self)))

    __hash__ = object.__hash__


def array(source: Any, ctx: Optional[Context] = None, dtype: Any = None) -> NDArray:
    """A new NDArray holding a copy of ``source``.

    As in MXNet, the dtype is ``dtype`` if given, the source's for an NDArray, else float32
    (also for float64 numpy arrays)."""
    ctx = ctx or current_context()
    if dtype is None:
        dtype = source.dtype if isinstance(source, NDArray) else np.float32
    src = source.asnumpy() if isinstance(source, NDArray) else source
    host = np.array(src, dtype=as_dtype(dtype), copy=True)
    if ctx.device_type == "cpu":
        return NDArray(host, ctx)
    from .cuda.runtime import to_device
    return NDArray(to_device(host, ctx), ctx)


def _shape(shape: Shape) -> tuple:
    """A checked shape: integral, non-negative dimensions, not past what can be allocated
    (ShapeError, not numpy's ValueError/TypeError)."""
    return as_shape((shape,) if isinstance(shape, (int, np.integer)) else shape, "array shape")


def _made(values: np.ndarray, ctx: Optional[Context], dtype: Any,
          out: Optional[NDArray]) -> NDArray:
    """A new array holding ``values`` (a numpy array made for it by the caller: on the CPU
    it becomes the buffer, uncopied; simple_bind allocates every array here), or ``values``
    written into ``out``."""
    if out is not None:
        out[:] = values
        return out
    ctx = ctx or current_context()
    if ctx.device_type == "cpu" and values.dtype == dtype:
        return NDArray(values, ctx)
    return array(values, ctx, dtype)


def empty(shape: Shape, ctx: Optional[Context] = None, dtype: Any = np.float32,
          out: Optional[NDArray] = None) -> NDArray:
    dtype = as_dtype(dtype or np.float32)
    return _made(np.zeros(_shape(shape), dtype), ctx, dtype, out)


def zeros(shape: Shape, ctx: Optional[Context] = None, dtype: Any = np.float32,
          out: Optional[NDArray] = None, stype: Optional[str] = None) -> NDArray:
    return empty(shape, ctx, dtype, out)


def ones(shape: Shape, ctx: Optional[Context] = None, dtype: Any = np.float32,
         out: Optional[NDArray] = None, stype: Optional[str] = None) -> NDArray:
    dtype = as_dtype(dtype or np.float32)
    return _made(np.ones(_shape(shape), dtype), ctx, dtype, out)


def full(shape: Shape, val: float, ctx: Optional[Context] = None,
         dtype: Any = np.float32, out: Optional[NDArray] = None) -> NDArray:
    dtype = as_dtype(dtype or np.float32)
    return _made(np.full(_shape(shape), val, dtype), ctx, dtype, out)


def arange(start: float, stop: Optional[float] = None, step: float = 1.0, repeat: int = 1,
           infer_range: bool = False, ctx: Optional[Context] = None,
           dtype: Any = np.float32) -> NDArray:
    """MXNet's arange: ``[start, stop)`` by ``step``, each value ``repeat`` times."""
    return array(arange_array(start, stop, step, int(repeat), dtype or np.float32), ctx, dtype)


def linspace(start: float, stop: float, num: int, endpoint: bool = True,
             ctx: Optional[Context] = None, dtype: Any = np.float32) -> NDArray:
    """``num`` evenly spaced values from ``start`` to ``stop``."""
    return array(np.linspace(start, stop, int(num), endpoint=endpoint), ctx, dtype)


def eye(N: int, M: int = 0, k: int = 0, ctx: Optional[Context] = None,
        dtype: Any = np.float32) -> NDArray:
    """An N x M (M = N when 0) array with ones on diagonal ``k``."""
    return array(np.eye(int(N), int(M) or None, int(k)), ctx, dtype)


def concatenate(arrays: Sequence[NDArray], axis: int = 0, always_copy: bool = True) -> NDArray:
    """MXNet's legacy concatenate: ``Concat`` along ``axis``."""
    if len(arrays) == 1 and not always_copy:
        return arrays[0]
    return engine().call("Concat", list(arrays), {"dim": axis})


def moveaxis(tensor: NDArray, source: Union[int, Sequence[int]],
             destination: Union[int, Sequence[int]]) -> NDArray:
    """Move axes ``source`` (an int or several) to positions ``destination``, the others
    keeping their order, as ``numpy.moveaxis`` (a recorded transpose). Example:
    ``sg.nd.moveaxis(sg.nd.zeros((4, 1, 2)), [0, 1], [2, 0]).shape == (1, 2, 4)``."""
    src, dst = axes_of(source, tensor.ndim, "source"), axes_of(destination, tensor.ndim,
                                                               "destination")
    if len(src) != len(dst):
        raise ShapeError(f"moveaxis: source {source} and destination {destination} must "
                         f"name as many axes")
    order = [a for a in range(tensor.ndim) if a not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return engine().call("transpose", [tensor], {"axes": tuple(order)})


def waitall() -> None:
    """Compute every pending array and wait for every device symgraph has used."""
    engine().flush()
    import sys
    runtime = sys.modules.get("symgraph.runtime.cuda.runtime")  # imported only once a GPU was used
    if runtime is not None:
        import pycuda.driver as drv
        for device_id in list(runtime._CONTEXTS):
            with runtime.activate(device_id):
                drv.Context.synchronize()


def save(fname: str, data: Union[dict, list, NDArray]) -> None:
    """Save NDArrays in MXNet's NDArray-list format (``mx.nd.save``): a dict keeps its names, a
    list (or one array) is saved in order without names. The file is replaced atomically."""
    ndfile.save(fname, data)


def load(fname: str) -> Union[dict[str, NDArray], list[NDArray]]:
    """Load an MXNet NDArray-list file (or symgraph's older ``.npz``) as CPU NDArrays: a dict if
    the file holds names, else a list, as ``mx.nd.load``. Damaged files raise DataError."""
    arrays, names = ndfile.load(fname)
    if names is None:
        return [NDArray(a, cpu()) for a in arrays]
    return {k: NDArray(a, cpu()) for k, a in zip(names, arrays)}


# user operators (sg.operator.CustomOp) receive NDArrays in the numpy references too
custom.use_host_array(NDArray, lambda a: a._data)
