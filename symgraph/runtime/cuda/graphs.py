"""CUDA graphs through the driver API (ctypes on libcuda): stream capture, instantiate, launch.

pycuda has no binding for stream capture, so the few driver calls are made here directly on the
pycuda stream's handle. Capture mode is thread-local: other threads may keep allocating. This
thread may not free: a ``cuMemFree`` while capturing invalidates the capture, and the cyclic
garbage collector can run inside ``record()`` and free an unreachable GPU array of earlier work
(seen on the H100 in the GPU suite). So the collector is paused while recording.
"""
from __future__ import annotations

import ctypes
import gc
from typing import Any, Callable

from ...core.base import ExecutionError

CU_STREAM_CAPTURE_MODE_THREAD_LOCAL = 1
_LIB: Any = None


def driver_lib() -> Any:
    global _LIB
    if _LIB is None:
        _LIB = ctypes.CDLL("libcuda.so.1")
        vp = ctypes.c_void_p
        _LIB.cuStreamBeginCapture_v2.argtypes = [vp, ctypes.c_int]
        _LIB.cuStreamEndCapture.argtypes = [vp, ctypes.POINTER(vp)]
        _LIB.cuGraphInstantiateWithFlags.argtypes = [ctypes.POINTER(vp), vp, ctypes.c_ulonglong]
        _LIB.cuGraphLaunch.argtypes = [vp, vp]
        _LIB.cuGraphExecDestroy.argtypes = [vp]
        _LIB.cuGraphDestroy.argtypes = [vp]
        # cooperative.py's launches
        _LIB.cuModuleLoadData.argtypes = [ctypes.POINTER(vp), ctypes.c_char_p]
        _LIB.cuModuleGetFunction.argtypes = [ctypes.POINTER(vp), vp, ctypes.c_char_p]
        _LIB.cuLaunchKernelEx.argtypes = [vp, vp, vp, vp]
    return _LIB


def check_cuda(status: int, what: str) -> None:
    if status != 0:
        raise ExecutionError(f"CUDA driver {what} failed with error {status}")


class CudaGraph:
    """An instantiated graph of the work ``record()`` issued on ``stream_handle``."""

    def __init__(self, stream_handle: int, record: Callable[[], None]) -> None:
        lib = driver_lib()
        self._stream = ctypes.c_void_p(stream_handle)
        check_cuda(lib.cuStreamBeginCapture_v2(self._stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
               "cuStreamBeginCapture")
        graph = ctypes.c_void_p()
        collecting = gc.isenabled()
        gc.disable()
        try:
            record()
        finally:
            status = lib.cuStreamEndCapture(self._stream, ctypes.byref(graph))
            if collecting:
                gc.enable()
        check_cuda(status, "cuStreamEndCapture")
        self._graph = graph
        self._exec = ctypes.c_void_p()
        check_cuda(lib.cuGraphInstantiateWithFlags(ctypes.byref(self._exec), graph, 0),
               "cuGraphInstantiate")

    def launch(self) -> None:
        check_cuda(driver_lib().cuGraphLaunch(self._exec, self._stream), "cuGraphLaunch")

    def destroy(self) -> None:
        """Free the graph (the owning context must be current)."""
        lib = driver_lib()
        if self._exec:
            lib.cuGraphExecDestroy(self._exec)
            self._exec = ctypes.c_void_p()
        if self._graph:
            lib.cuGraphDestroy(self._graph)
            self._graph = ctypes.c_void_p()
