"""cuBLAS through ctypes: one handle per device, SGEMM and strided-batched SGEMM, row-major.

cuBLAS is column-major; a row-major product C = op(A) op(B) is computed as the column-major
C^T = op(B)^T op(A)^T, i.e. the operands are swapped and no data moves. Math mode is
CUBLAS_DEFAULT_MATH (true FP32, no TF32 tensor cores) unless ``SYMGRAPH_TF32=1``. A fixed
workspace is set so that calls made while a stream is being captured never allocate.
"""
from __future__ import annotations

import ctypes
import os
from typing import Any

from ..base import ExecutionError
from . import libs

CUBLAS_OP_N, CUBLAS_OP_T = 0, 1
CUBLAS_DEFAULT_MATH, CUBLAS_TF32_TENSOR_OP_MATH = 0, 3
WORKSPACE_BYTES = 32 << 20

_LIB: Any = None
_HANDLES: dict[int, tuple[ctypes.c_void_p, Any]] = {}


def _load() -> Any:
    global _LIB
    if _LIB is None:
        _LIB = libs.load("cublas")  # nvidia-cublas wheel first, then the system
        vp, i, ll = ctypes.c_void_p, ctypes.c_int, ctypes.c_longlong
        fp = ctypes.POINTER(ctypes.c_float)
        _LIB.cublasSgemm_v2.argtypes = [vp, i, i, i, i, i, fp, vp, i, vp, i, fp, vp, i]
        _LIB.cublasSgemmStridedBatched.argtypes = [vp, i, i, i, i, i, fp, vp, i, ll, vp, i, ll,
                                                   fp, vp, i, ll, i]
        _LIB.cublasSetStream_v2.argtypes = [vp, vp]
        _LIB.cublasSetMathMode.argtypes = [vp, i]
        _LIB.cublasSetWorkspace_v2.argtypes = [vp, vp, ctypes.c_size_t]
    return _LIB


def _check(status: int, what: str) -> None:
    if status != 0:
        raise ExecutionError(f"cuBLAS {what} failed with status {status}")


def handle(device_id: int) -> ctypes.c_void_p:
    """The device's cuBLAS handle (created once, in its primary context, which must be current)."""
    h = _HANDLES.get(device_id)
    if h is None:
        import pycuda.driver as drv
        lib = _load()
        hd = ctypes.c_void_p()
        _check(lib.cublasCreate_v2(ctypes.byref(hd)), "cublasCreate")
        tf32 = os.environ.get("SYMGRAPH_TF32", "0") == "1"
        _check(lib.cublasSetMathMode(hd, CUBLAS_TF32_TENSOR_OP_MATH if tf32
                                     else CUBLAS_DEFAULT_MATH), "cublasSetMathMode")
        ws = drv.mem_alloc(WORKSPACE_BYTES)
        _check(lib.cublasSetWorkspace_v2(hd, int(ws), WORKSPACE_BYTES), "cublasSetWorkspace")
        h = _HANDLES[device_id] = (hd, ws)
    return h[0]


_ONE, _ZERO = ctypes.c_float(1.0), ctypes.c_float(0.0)


def gemm(device_id: int, stream_handle: int, trans_a: bool, trans_b: bool, m: int, n: int,
         k: int, a: int, b: int, c: int, accumulate: bool = False, batch: int = 1) -> None:
    """Row-major C (m x n) = op(A) @ op(B) (+ C), A stored (m,k) or (k,m) if ``trans_a``."""
    lib = _load()
    hd = handle(device_id)
    _check(lib.cublasSetStream_v2(hd, stream_handle), "cublasSetStream")
    lda = m if trans_a else k
    ldb = k if trans_b else n
    op_a = CUBLAS_OP_T if trans_a else CUBLAS_OP_N
    op_b = CUBLAS_OP_T if trans_b else CUBLAS_OP_N
    beta = _ONE if accumulate else _ZERO
    if batch == 1:
        _check(lib.cublasSgemm_v2(hd, op_b, op_a, n, m, k, ctypes.byref(_ONE), b, ldb, a, lda,
                                  ctypes.byref(beta), c, n), "cublasSgemm")
    else:
        _check(lib.cublasSgemmStridedBatched(
            hd, op_b, op_a, n, m, k, ctypes.byref(_ONE), b, ldb, k * n, a, lda, m * k,
            ctypes.byref(beta), c, n, m * n, batch), "cublasSgemmStridedBatched")
