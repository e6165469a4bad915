"""cuBLAS through ctypes: one handle per device, (strided-batched) GEMM, row-major.

cuBLAS is column-major; a row-major product C = op(A) op(B) is computed as the column-major
C^T = op(B)^T op(A)^T, i.e. the operands are swapped and no data moves. float32 runs SGEMM with
math mode CUBLAS_DEFAULT_MATH (true FP32, no TF32 tensor cores) unless ``SYMGRAPH_TF32=1``;
float16 and bfloat16 run ``cublasGemmEx`` / ``cublasGemmStridedBatchedEx`` with narrow A, B
and C, float32 accumulation (CUBLAS_COMPUTE_32F, float alpha/beta) and the default algorithm,
which takes the tensor cores. A fixed workspace is set so that calls made while a stream is
being captured never allocate.
"""
from __future__ import annotations

import ctypes
from typing import Any

from ...core import config
from ...core.base import ExecutionError
from . import libs

CUBLAS_OP_N, CUBLAS_OP_T = 0, 1
CUBLAS_DEFAULT_MATH, CUBLAS_TF32_TENSOR_OP_MATH = 0, 3
# cudaDataType_t (library_types.h), cublasComputeType_t and cublasGemmAlgo_t (cublas_api.h).
CUDA_DATA_TYPES = {"float32": 0, "float16": 2, "bfloat16": 14}  # CUDA_R_32F, _16F, _16BF
CUBLAS_COMPUTE_32F = 68
CUBLAS_GEMM_DEFAULT = -1
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
        # GemmEx: handle, opB, opA, m, n, k, alpha, A, Atype, lda, B, Btype, ldb, beta, C,
        # Ctype, ldc, computeType, algo (the strided form adds a stride after each ld and the
        # batch count after C's).
        _LIB.cublasGemmEx.argtypes = [vp, i, i, i, i, i, fp, vp, i, i, vp, i, i, fp, vp, i, i,
                                      i, i]
        _LIB.cublasGemmStridedBatchedEx.argtypes = [vp, i, i, i, i, i, fp, vp, i, i, ll, vp, i,
                                                    i, ll, fp, vp, i, i, ll, i, i, i]
        # GemmBatchedEx: as GemmEx with device arrays of pointers and the batch count last
        # before computeType.
        _LIB.cublasGemmBatchedEx.argtypes = [vp, i, i, i, i, i, fp, vp, i, i, vp, i, i, fp, vp,
                                             i, i, i, i, i]
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
        tf32 = config.get("SYMGRAPH_TF32")
        _check(lib.cublasSetMathMode(hd, CUBLAS_TF32_TENSOR_OP_MATH if tf32
                                     else CUBLAS_DEFAULT_MATH), "cublasSetMathMode")
        ws = drv.mem_alloc(WORKSPACE_BYTES)
        _check(lib.cublasSetWorkspace_v2(hd, int(ws), WORKSPACE_BYTES), "cublasSetWorkspace")
        h = _HANDLES[device_id] = (hd, ws)
    return h[0]


_ONE, _ZERO = ctypes.c_float(1.0), ctypes.c_float(0.0)


def _on_stream(device_id: int, stream_handle: int, trans_a: bool,
               trans_b: bool) -> tuple[Any, ctypes.c_void_p, int, int]:
    """(library, the device's handle set to the stream, op_a, op_b) of a row-major GEMM."""
    lib = _load()
    hd = handle(device_id)
    _check(lib.cublasSetStream_v2(hd, stream_handle), "cublasSetStream")
    return (lib, hd, CUBLAS_OP_T if trans_a else CUBLAS_OP_N,
            CUBLAS_OP_T if trans_b else CUBLAS_OP_N)


def _data_type(dtype: str) -> int:
    """cuBLAS's cudaDataType of a GEMM's operands (float accumulation for every one)."""
    if dtype not in CUDA_DATA_TYPES:
        raise ExecutionError(f"cuBLAS GEMM: no GPU GEMM for dtype {dtype} (float32, float16, "
                             f"bfloat16)")
    return CUDA_DATA_TYPES[dtype]


def gemm(device_id: int, stream_handle: int, trans_a: bool, trans_b: bool, m: int, n: int,
         k: int, a: int, b: int, c: int, accumulate: bool = False, batch: int = 1,
         dtype: str = "float32") -> None:
    """Row-major C (m x n) = op(A) @ op(B) (+ C), A stored (m,k) or (k,m) if ``trans_a``;
    A, B and C of ``dtype`` (float32, float16 or bfloat16)."""
    lib, hd, op_a, op_b = _on_stream(device_id, stream_handle, trans_a, trans_b)
    lda = m if trans_a else k
    ldb = k if trans_b else n
    beta = _ONE if accumulate else _ZERO
    if dtype != "float32":
        _gemm_ex(lib, hd, op_b, op_a, n, m, k, b, ldb, a, lda, beta, c, batch, dtype)
    elif batch == 1:
        _check(lib.cublasSgemm_v2(hd, op_b, op_a, n, m, k, ctypes.byref(_ONE), b, ldb, a, lda,
                                  ctypes.byref(beta), c, n), "cublasSgemm")
    else:
        _check(lib.cublasSgemmStridedBatched(
            hd, op_b, op_a, n, m, k, ctypes.byref(_ONE), b, ldb, k * n, a, lda, m * k,
            ctypes.byref(beta), c, n, m * n, batch), "cublasSgemmStridedBatched")


def _gemm_ex(lib: Any, hd: ctypes.c_void_p, op_b: int, op_a: int, n: int, m: int, k: int,
             b: int, ldb: int, a: int, lda: int, beta: ctypes.c_float, c: int, batch: int,
             dtype: str) -> None:
    """The column-major call of :func:`gemm` with narrow operands and float accumulation."""
    t, one = _data_type(dtype), ctypes.byref(_ONE)
    if batch == 1:
        _check(lib.cublasGemmEx(hd, op_b, op_a, n, m, k, one, b, t, ldb, a, t, lda,
                                ctypes.byref(beta), c, t, n, CUBLAS_COMPUTE_32F,
                                CUBLAS_GEMM_DEFAULT), f"cublasGemmEx ({dtype})")
    else:
        _check(lib.cublasGemmStridedBatchedEx(
            hd, op_b, op_a, n, m, k, one, b, t, ldb, k * n, a, t, lda, m * k,
            ctypes.byref(beta), c, t, n, m * n, batch, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
            f"cublasGemmStridedBatchedEx ({dtype})")


def gemm_batched(device_id: int, stream_handle: int, trans_a: bool, trans_b: bool, m: int,
                 n: int, k: int, a: int, b: int, c: int, lds: tuple[int, int, int], batch: int,
                 alpha: float, dtype: str = "float32") -> None:
    """Row-major C[i] (m x n, row stride ``lds[2]``) = alpha op(A[i]) @ op(B[i]) for ``batch``
    matrices whose addresses are in the device arrays of pointers ``a``, ``b`` and ``c`` (row
    strides ``lds[0]``, ``lds[1]``): matrices that no single stride reaches, such as
    attention heads inside (B, T, H, D) arrays. Any of the GEMM dtypes, float accumulation."""
    lib, hd, op_a, op_b = _on_stream(device_id, stream_handle, trans_a, trans_b)
    t = _data_type(dtype)
    _check(lib.cublasGemmBatchedEx(hd, op_b, op_a, n, m, k, ctypes.byref(ctypes.c_float(alpha)),
                                   b, t, lds[1], a, t, lds[0], ctypes.byref(_ZERO), c, t,
                                   lds[2], batch, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
           f"cublasGemmBatchedEx ({dtype})")


def gemm_strided(device_id: int, stream_handle: int, trans_a: bool, trans_b: bool, m: int,
                 n: int, k: int, a: int, b: int, c: int, lds: tuple[int, int, int],
                 steps: tuple[int, int, int], batch: int, alpha: float,
                 dtype: str = "float32") -> None:
    """As :func:`gemm_batched` for matrices ``steps`` elements apart from the addresses
    ``a``, ``b`` and ``c`` (one strided-batched call, any GEMM dtype)."""
    lib, hd, op_a, op_b = _on_stream(device_id, stream_handle, trans_a, trans_b)
    t = _data_type(dtype)
    _check(lib.cublasGemmStridedBatchedEx(
        hd, op_b, op_a, n, m, k, ctypes.byref(ctypes.c_float(alpha)), b, t, lds[1], steps[1],
        a, t, lds[0], steps[0], ctypes.byref(_ZERO), c, t, lds[2], steps[2], batch,
        CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT), f"cublasGemmStridedBatchedEx ({dtype})")
