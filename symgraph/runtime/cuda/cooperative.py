"""Cooperative kernel launches through the driver API (ctypes on libcuda): ``cuLaunchKernelEx``
with the cooperative attribute, for kernels with a grid-wide barrier (``kernels_norm``'s
channel-last BatchNorm).

A cooperative launch is scheduled only when every block of its grid can be resident at once:
the driver refuses a grid that cannot (``CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE``) instead of
letting blocks wait at the barrier for blocks that never start, also beside other kernels and
processes. The attribute is valid in stream capture, so the launch becomes a cooperative node
of the step's CUDA graph. pycuda launches through ``cuLaunchKernel`` and does not expose its
function handles, so the module's cubin is loaded a second time here, once per device and
cubin (``cuModuleLoadData`` in the current context), for the functions launched this way.
"""
from __future__ import annotations

import ctypes
import hashlib
from typing import Any, Callable

from ...core.base import ExecutionError
from .graphs import check_cuda, driver_lib

CU_LAUNCH_ATTRIBUTE_COOPERATIVE = 2  # cuda.h: CUlaunchAttributeID


class LaunchAttribute(ctypes.Structure):
    """``CUlaunchAttribute``: the id, padding to 8 bytes, a 64-byte value union."""

    _fields_ = [("id", ctypes.c_int), ("pad", ctypes.c_char * 4),
                ("value", ctypes.c_int), ("value_pad", ctypes.c_char * 60)]


class LaunchConfig(ctypes.Structure):
    """``CUlaunchConfig``."""

    _fields_ = [("gridDimX", ctypes.c_uint), ("gridDimY", ctypes.c_uint),
                ("gridDimZ", ctypes.c_uint), ("blockDimX", ctypes.c_uint),
                ("blockDimY", ctypes.c_uint), ("blockDimZ", ctypes.c_uint),
                ("sharedMemBytes", ctypes.c_uint), ("hStream", ctypes.c_void_p),
                ("attrs", ctypes.POINTER(LaunchAttribute)), ("numAttrs", ctypes.c_uint)]


_MODULES: dict[tuple[int, str], ctypes.c_void_p] = {}  # (device, cubin digest) -> CUmodule


def function(device_id: int, cubin: bytes, name: str) -> ctypes.c_void_p:
    """The ``CUfunction`` of kernel ``name`` in ``cubin``, loaded on ``device_id``'s context
    (which must be current) the first time the cubin is asked for. Modules stay loaded: one
    per distinct cubin with a cooperative kernel."""
    lib = driver_lib()
    key = (device_id, hashlib.sha256(cubin).hexdigest())
    module = _MODULES.get(key)
    if module is None:
        module = ctypes.c_void_p()
        check_cuda(lib.cuModuleLoadData(ctypes.byref(module), cubin), "cuModuleLoadData")
        _MODULES[key] = module
    func = ctypes.c_void_p()
    check_cuda(lib.cuModuleGetFunction(ctypes.byref(func), module, name.encode()),
           f"cuModuleGetFunction({name})")
    return func


def launch_closure(func: ctypes.c_void_p, grid: int, block: int, ptrs: tuple, n: int,
                   stream_handle: int, name: str) -> Callable[[Any], None]:
    """A cooperative launch of ``func`` with the pointer arguments ``ptrs`` then ``long long
    n``, on the stream, its parameters packed once (the closure keeps them alive)."""
    lib = driver_lib()
    values = (ctypes.c_uint64 * (len(ptrs) + 1))(*ptrs, n & (2 ** 64 - 1))
    base = ctypes.addressof(values)
    params = (ctypes.c_void_p * len(values))(*[base + 8 * i for i in range(len(values))])
    attr = LaunchAttribute(id=CU_LAUNCH_ATTRIBUTE_COOPERATIVE, value=1)
    config = LaunchConfig(grid, 1, 1, block, 1, 1, 0, ctypes.c_void_p(stream_handle),
                          ctypes.pointer(attr), 1)
    keep = (values, params, attr, config)  # alive as long as the closure
    args = (ctypes.c_void_p(ctypes.addressof(config)), func,
            ctypes.c_void_p(ctypes.addressof(params)), None)

    def run(rc: Any) -> None:
        status = lib.cuLaunchKernelEx(*args)
        assert keep
        if status != 0:
            raise ExecutionError(f"cooperative launch of {name} ({grid} blocks of {block} "
                                 f"threads) failed with CUDA error {status}")
    return run
