"""A compiled imperative subgraph (:class:`Program`): its executor, and how each call's leaves
and gradient buffers are bound to it and its outputs handed out, on the CPU and the GPU.

Requires: an :class:`~symgraph.executor.Executor` bound over a canonical copy whose variables
are ``_in0``, ``_in1``... (``imperative_compile._compile``). Guarantees: on the GPU the
executor's bound device pointers never change between calls, so its CUDA graph replays.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .context import Context
from .ndarray import NDArray


class Program:
    """A compiled subgraph: the executor and where each leaf and gradient is bound."""

    def __init__(self, exe: Any, ctx: Context, n_leaves: int, n_out: int) -> None:
        self.exe, self.ctx, self.n_out = exe, ctx, n_out
        names = [f"_in{k}" for k in range(n_leaves)]
        self.slots = [(exe.arg_dict, n) if n in exe.arg_dict else (exe.aux_dict, n)
                      for n in names]
        self.owned = [False] * n_leaves
        self.gpu = ctx.device_type == "gpu"
        self.train_dependent = False  # holds a Dropout-like op (see _warn_recomputed)

    def bind(self, leaves: Sequence[NDArray], grads: Sequence[tuple[str, NDArray]]) -> None:
        """Point the executor at this call's leaves: on the CPU by rebinding; on the GPU a
        changing argument is copied into a buffer the program owns, so device pointers stay
        fixed and the CUDA graph replays."""
        exe = self.exe
        copies = []
        for k, ((d, name), leaf) in enumerate(zip(self.slots, leaves)):
            cur = d[name]
            if cur._buf is leaf._buf:
                continue
            if not self.gpu or d is exe.aux_dict:
                d[name] = leaf
                continue
            if not self.owned[k]:
                d[name] = _device_array(leaf.shape, leaf.dtype, self.ctx)
                self.owned[k] = True
            copies.append((d[name], leaf))
        if copies:
            _copy_device(copies, self.ctx.device_id)
        for name, g in grads:
            exe.grad_dict[name] = g

    def take_outputs(self) -> list[Any]:
        """The first ``n_out`` output buffers, handed over (CPU) or copied (GPU, where the
        program keeps writing into its own output arrays)."""
        outs = self.exe.outputs[:self.n_out]
        if self.gpu:
            return _device_copies(outs, self.ctx.device_id)
        bufs = []
        for o in outs:
            bufs.append(o._buf)
            o._buf = np.empty_like(o._buf)
        return bufs


_POOLS: dict[int, Any] = {}  # device id -> pycuda DeviceMemoryPool


def _pool_buffer(shape: tuple, dtype: np.dtype, device_id: int) -> Any:
    """Uninitialised device memory from a per-device pool (``device_id``'s context current):
    results handed out every step are allocated and freed without cuMemAlloc/cuMemFree (the
    latter synchronises the device)."""
    from pycuda.tools import DeviceMemoryPool
    from .cuda.runtime import DeviceArray
    pool = _POOLS.get(device_id)
    if pool is None:
        pool = _POOLS[device_id] = DeviceMemoryPool()
    arr = DeviceArray(tuple(shape), np.dtype(dtype), allocator=pool.allocate)
    arr.device_id = device_id
    return arr


def _device_array(shape: tuple, dtype: np.dtype, ctx: Context) -> NDArray:
    """A pool buffer (see :func:`_pool_buffer`) as an NDArray on ``ctx``."""
    from .cuda.runtime import activate
    with activate(ctx.device_id):
        arr = _pool_buffer(shape, dtype, ctx.device_id)
    return NDArray(arr, ctx)


def _device_copies(arrays: Sequence[NDArray], device_id: int) -> list[Any]:
    """Pool buffers holding copies of device ``arrays`` (copied as :func:`_copy_device` does),
    made under one activation of the context: a push and a pop per array cost more host time
    than the copies' launches (this runs at every step)."""
    import pycuda.driver as drv
    from .cuda.runtime import activate
    with activate(device_id):
        bufs = [_pool_buffer(a.shape, a.dtype, device_id) for a in arrays]
        for buf, a in zip(bufs, arrays):
            if buf.nbytes:
                drv.memcpy_dtod_async(buf.ptr, a._buf.ptr, buf.nbytes)
    return bufs


def _copy_device(pairs: Sequence[tuple[NDArray, NDArray]], device_id: int) -> None:
    """Device-to-device copies ``(destination, source)`` on the legacy default stream, under
    one activation of the context: asynchronous for the host, yet ordered after the work of
    every (blocking) program stream and before their later work, so programs of different
    executors that share arrays see each other's results."""
    import pycuda.driver as drv
    from .cuda.runtime import activate
    with activate(device_id):
        for dst, src in pairs:
            if dst._buf.nbytes:
                drv.memcpy_dtod_async(dst._buf.ptr, src._buf.ptr, dst._buf.nbytes)
