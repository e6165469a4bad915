"""Device runtime: the device's primary context, device facts, and ``sg.nd`` arrays on the GPU.

symgraph uses the *primary* context of each device (the one the CUDA runtime, and so PyTorch and
CuPy, use), pushed around each piece of work and popped after, so it shares a process with those
frameworks. Device arrays are pycuda ``GPUArray`` objects whose ``get()`` activates the context.
Importing this module imports pycuda; ``symgraph`` imports it only for a GPU context.
"""
from __future__ import annotations

import atexit
import contextlib
from typing import Any, Callable, Iterator

import numpy as np

from .libs import require_pycuda

require_pycuda()  # a missing pycuda says how to install it, not just ModuleNotFoundError
import pycuda.driver as drv  # noqa: E402
from pycuda import gpuarray  # noqa: E402

from ...core.base import BindError, ExecutionError
from .actions import memset_pattern

_CONTEXTS: dict[int, Any] = {}
_INFO: dict[int, dict] = {}
_AT_EXIT: list[Callable[[], None]] = []


def at_exit(fn: Callable[[], None]) -> None:
    """Call ``fn`` at interpreter exit while the first device's context is still current,
    before it is popped (a memory pool stops holding blocks there: see :func:`_exit`)."""
    _AT_EXIT.append(fn)


def _exit() -> None:
    # A pycuda memory pool that starts holding a freed block takes the *current* context, and
    # aborts the process when there is none: every sg.nd array freed after the pop (the
    # script's own globals, torn down after atexit) would. Pools that stop holding free their
    # blocks straight to the device through the context they were made in.
    for fn in _AT_EXIT:
        fn()
    drv.Context.pop()  # before pycuda's own exit check: its context stack must be empty


def _context(device_id: int) -> Any:
    ctx = _CONTEXTS.get(device_id)
    if ctx is None:
        drv.init()
        if device_id >= drv.Device.count():
            raise ExecutionError(f"gpu({device_id}) requested, {drv.Device.count()} device(s) "
                                 f"visible")
        ctx = _CONTEXTS[device_id] = drv.Device(device_id).retain_primary_context()
        if len(_CONTEXTS) == 1:
            # The first primary context stays current underneath every activate(), as the CUDA
            # runtime's own is: pycuda objects dropped by the garbage collector outside an
            # activate() block (a lazy sg.nd value, a cached program) then still find a current
            # context; without one pycuda's destructors abort the process.
            ctx.push()
            atexit.register(_exit)
    return ctx


@contextlib.contextmanager
def activate(device_id: int) -> Iterator[None]:
    """Make ``device_id``'s primary context current for the block (push, then pop)."""
    ctx = _context(device_id)
    ctx.push()
    try:
        yield
    finally:
        drv.Context.pop()


def device_info(device_id: int) -> dict:
    """Multiprocessor count and architecture (``sm_90`` for an H100) of a device."""
    info = _INFO.get(device_id)
    if info is None:
        _context(device_id)
        dev = drv.Device(device_id)
        major, minor = dev.compute_capability()
        info = _INFO[device_id] = {
            "sm_count": dev.get_attribute(drv.device_attribute.MULTIPROCESSOR_COUNT),
            "arch": f"sm_{major}{minor}", "name": dev.name()}
    return info


def wire_dtype(dtype: Any) -> np.dtype:
    """The dtype host-device copies use for ``dtype``: itself, or for a numpy type that has no
    buffer format (ml_dtypes' bfloat16) the unsigned integer of its size (same bytes)."""
    dt = np.dtype(dtype)
    return np.dtype(f"u{dt.itemsize}") if dt.kind == "V" else dt


def wire(a: np.ndarray) -> np.ndarray:
    """``a`` viewed as :func:`wire_dtype` (pycuda copies need the buffer protocol)."""
    return a.view(wire_dtype(a.dtype)) if a.dtype.kind == "V" else a


class DeviceArray(gpuarray.GPUArray):
    """A GPUArray that remembers its device and activates its context for host transfers
    (bfloat16 arrays travel as their 16-bit patterns)."""

    device_id = 0

    def get(self, ary: Any = None, **kwargs: Any) -> np.ndarray:
        with activate(self.device_id):
            if self.size == 0:
                return np.empty(self.shape, self.dtype)
            if self.dtype.kind == "V":
                out = np.empty(self.shape, self.dtype)
                drv.memcpy_dtoh(wire(out), self.gpudata)
                return out
            return super().get(ary, **kwargs)

    def set(self, ary: Any, **kwargs: Any) -> None:
        with activate(self.device_id):
            if self.size:
                host = np.asarray(ary, dtype=self.dtype, order="C")
                if self.dtype.kind == "V":
                    drv.memcpy_htod(self.gpudata, wire(host))
                else:
                    super().set(host, **kwargs)

    @property
    def ptr(self) -> int:
        return int(self.gpudata) if self.gpudata is not None else 0


def empty_device(shape: tuple, dtype: Any, device_id: int) -> DeviceArray:
    with activate(device_id):
        arr = DeviceArray(tuple(shape), np.dtype(dtype))
    arr.device_id = device_id
    return arr


def to_device(host: np.ndarray, ctx: Any) -> DeviceArray:
    """A new device array on context ``ctx`` holding a copy of ``host``."""
    host = np.asarray(host, order="C")  # (ascontiguousarray would make 0-d arrays 1-d)
    arr = empty_device(host.shape, host.dtype, ctx.device_id)
    arr.set(host)
    return arr


_MEMSET = {1: "memset_d8", 2: "memset_d16", 4: "memset_d32"}


def copy_device(target: Any, value: Any) -> None:
    """``target[:] = value`` for two GPU NDArrays of one device, shape and dtype: one copy on
    the legacy default stream, ordered after the earlier work of every (blocking) program
    stream and before its later work, and not waited for on the host (a batch already on the
    GPU used to travel through the host: two synchronising copies per ``Module`` step)."""
    src, dst = value._data, target._data
    if dst.nbytes and src.ptr != dst.ptr:
        with activate(dst.device_id):
            drv.memcpy_dtod_async(dst.ptr, src.ptr, dst.nbytes)


def write_device(target: Any, key: Any, value: Any) -> None:
    """``target[key] = value`` for an NDArray on the GPU; checked before anything is written.
    A scalar written to the whole array is a device memset on the legacy stream (ordered
    after the program's blocking stream, and not waiting for it on the host): a pageable
    upload would make the host wait for the GPU (each step's ``grad[:] = 0`` of gradients no
    op reaches, as BatchNorm's ``fix_gamma`` gamma, cost ResNet-20 a third of its step)."""
    data: DeviceArray = target._data
    if isinstance(key, slice) and key == slice(None):
        arr = np.asarray(value)
        fill = memset_pattern(np.asarray(arr, data.dtype)) if arr.ndim == 0 else None
        if fill is not None:
            if data.size:
                width, bits = fill
                with activate(data.device_id):
                    getattr(drv, _MEMSET[width])(data.gpudata, bits, data.nbytes // width)
            return
        try:
            # no copy when the value already has the array's shape, dtype and layout
            host = np.asarray(np.broadcast_to(arr, data.shape), data.dtype, order="C")
        except ValueError:
            raise BindError(f"cannot assign an array of shape {arr.shape} to an NDArray of "
                            f"shape {data.shape}") from None
    else:
        host = data.get()
        host[key] = value
    data.set(host)
