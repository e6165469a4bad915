"""Launch closures of a :class:`~symgraph.runtime.cuda.backend.CudaProgram`'s actions: one builder per
action type (the table :data:`LAUNCHES`), each resolving the action's buffer references to
device pointers once and returning a closure ``fn(run_ctx)`` that enqueues it on the program's
stream. What the closures capture never changes between runs with the same bound arrays, so a
range of them can be captured into a CUDA graph (``replay.GraphCache``).
"""
from __future__ import annotations

import struct
from typing import Any, Callable

import numpy as np

import pycuda.driver as drv

from ...core.dtypes import as_dtype
from ...core.registry import RunCtx
from ...core import config
from . import cooperative, cublas, cudnn
from .actions import (Callback, Choice, ConvCall, Copy, Fill, Gemm, HeadGemm, Host, Kernel,
                      Switch, Upload, memset_pattern)
from .codegen import THREADS
from .host_steps import callback_step, host_step
from .lowering_attention import head_calls, head_pointers

Closure = Callable[[RunCtx], None]

# A memset's width in bytes -> the driver call.
MEMSETS = {1: drv.memset_d8_async, 2: drv.memset_d16_async, 4: drv.memset_d32_async}


def kernel_closure(module: Any, stream: Any, name: str, grid: int, ptrs: tuple, n: int,
                   block: int = THREADS) -> Closure:
    """A launch of ``module``'s kernel ``name`` with its parameter buffer packed once:
    pointers, then ``long long n``."""
    func = module.get_function(name)
    buf = struct.pack("<" + "Q" * len(ptrs) + "q", *ptrs, n)
    grid_t, block_t = (grid, 1, 1), (block, 1, 1)
    return lambda rc: func._launch_kernel(grid_t, block_t, buf, 0, stream)


def _kernel(prog: Any, act: Kernel, env: Any) -> Closure:
    ptrs = tuple(prog.ptr(r, env) for r in act.args)
    if act.cooperative:
        prog.load()
        func = cooperative.function(prog.device_id, prog.module.cubin_of(act.kernel.name),
                                    act.kernel.name)
        return cooperative.launch_closure(func, act.grid, act.block, ptrs, act.n,
                                          prog.stream.handle, act.kernel.name)
    return prog.kernel_closure(act.kernel.name, act.grid, ptrs, act.n, act.block)


def _copy(prog: Any, act: Copy, env: Any) -> Closure:
    dst, src, nbytes = prog.ptr(act.dst, env), prog.ptr(act.src, env), act.nbytes
    stream = prog.stream
    return lambda rc: drv.memcpy_dtod_async(dst, src, nbytes, stream)


def _fill(prog: Any, act: Fill, env: Any) -> Closure:
    """A memset of the value's bits in the fill's dtype (``memset_pattern``: a Fill's 2- or
    4-byte values repeat at their own width)."""
    dst, stream = prog.ptr(act.dst, env), prog.stream
    value = np.asarray(act.value, as_dtype(act.dtype))
    width, bits = memset_pattern(value)
    count = act.count * value.itemsize // width
    memset = MEMSETS[width]
    return lambda rc: memset(dst, bits, count, stream) if count else None


def _gemm(prog: Any, act: Gemm, env: Any) -> Closure:
    a, b, c = (prog.ptr(r, env) for r in (act.a, act.b, act.c))
    dev, stream = prog.device_id, prog.stream
    return lambda rc: cublas.gemm(dev, stream.handle, act.trans_a, act.trans_b, act.m,
                                  act.n, act.k, a, b, c, accumulate=act.accumulate,
                                  batch=act.batch, dtype=act.dtype)


def _head_gemm(prog: Any, act: HeadGemm, env: Any) -> Closure:
    """Strided-batched calls where strides reach the matrices, else one call over arrays of
    pointers, uploaded once per set of bound arrays and kept by the program: they never change
    between runs, so a captured graph replays them as they are."""
    g = act.gemm
    bases = tuple(prog.ptr(r, env) for r in (g.a, g.b, g.c))
    size = as_dtype(g.dtype).itemsize
    dev, stream = prog.device_id, prog.stream
    shape = (g.trans_a, g.trans_b, g.m, g.n, g.k)
    calls = head_calls(act, bases, size, config.get("SYMGRAPH_HEAD_GEMM") == "loop")
    if calls is not None:
        def strided(rc: RunCtx) -> None:
            for (a, b, c), steps, count in calls:
                cublas.gemm_strided(dev, stream.handle, *shape, a, b, c, act.lds, steps, count,
                                    act.alpha, g.dtype)
        return strided
    arrays = prog.head_pointers.get((act, bases))
    if arrays is None:
        arrays = prog.head_pointers[(act, bases)] = [drv.to_device(p) for p in
                                                     head_pointers(act, bases, size)]
    a, b, c = (int(x) for x in arrays)

    def batched(rc: RunCtx) -> None:
        cublas.gemm_batched(dev, stream.handle, *shape, a, b, c, act.lds, g.batch, act.alpha,
                            g.dtype)
    return batched


def _host(prog: Any, act: Host, env: Any) -> Closure:
    return lambda rc: host_step(prog, act, env, rc)


def _upload(prog: Any, act: Upload, env: Any) -> Closure:
    host = drv.pagelocked_empty(len(act.data), np.uint8)
    host[:] = np.frombuffer(act.data, np.uint8)
    dst, stream = prog.ptr(act.dst, env), prog.stream
    return lambda rc: drv.memcpy_htod_async(dst, host, stream)


def _switch(prog: Any, act: Switch, env: Any) -> Closure:
    train = [prog.closure(a, env) for a in act.train]
    infer = [prog.closure(a, env) for a in act.infer]

    def switch(rc: RunCtx) -> None:
        for fn in (train if rc.is_train else infer):
            fn(rc)
    return switch


def _callback(prog: Any, act: Callback, env: Any) -> Closure:
    return lambda rc: callback_step(prog, act, env, rc)


def _choice(prog: Any, act: Choice, env: Any) -> Closure:
    parts = [prog.closure(a, env) for a in prog.choose(act, env)]

    def run_all(rc: RunCtx) -> None:
        for fn in parts:
            fn(rc)
    return run_all


def _conv(prog: Any, act: ConvCall, env: Any) -> Closure:
    p = prog.conv_plan(act)
    a, b, out = (prog.ptr(r, env) for r in (act.a, act.b, act.out))
    ws, nbytes, dev, kind = int(prog.workspace), prog.ws_bytes, prog.device_id, act.kind
    stream = prog.stream
    return lambda rc: cudnn.run(dev, stream.handle, p, kind, a, b, out, ws, nbytes)


# Action type -> the builder of its launch closure: (program, action, env) -> closure.
LAUNCHES: dict[type, Callable[[Any, Any, Any], Closure]] = {
    Kernel: _kernel, Copy: _copy, Fill: _fill, Gemm: _gemm, Host: _host, Upload: _upload,
    HeadGemm: _head_gemm,
    Switch: _switch, Callback: _callback, Choice: _choice, ConvCall: _conv,
}
