"""Lowering families of the indexing ops (``ops/indexing.py``): argmax/argmin, one_hot, take,
Embedding and take's gradient.

Indices arrive as floats (the ops' convention) and are truncated like ``astype(int64)``; take
clips or wraps them as its ``mode`` says. The gradient of take scatters with ``atomicAdd`` into a
zero-filled result (summation order may differ from numpy's; well within float32 tolerance).
"""
from __future__ import annotations

from math import prod

import numpy as np

from .codegen import THREADS, Rendered, c_float, grid_for, kernel_name
from .kernels import _offset_fn
from .lowering import Fill, Kernel, StepCtx, family
from .lowering_layout import C_TYPES

LOOP = ("    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; "
        "i += (long long)blockDim.x * gridDim.x) {\n")


def _kernel(stem: str, key: str, params: str, body: str, helpers: str = "",
            n_ptr: int = 2) -> Rendered:
    """A grid-stride kernel; ``TAG`` in ``body``/``helpers`` becomes the kernel's name."""
    tag = kernel_name(stem, key)
    src = (helpers + f"extern \"C\" __global__ void TAG({params}, long long n) {{\n"
           f"{LOOP}{body}    }}\n}}\n").replace("TAG", tag)
    return Rendered(tag, src, n_ptr)


def _launch(ctx: StepCtx, kern: Rendered, args: tuple, n: int) -> Kernel:
    return Kernel(kern, grid_for(n, ctx.sm_count), THREADS, args, n)


@family("arg_reduce")
def _arg_reduce(ctx: StepCtx, p: dict) -> list:
    """Index (as a float) of the first max / min along ``axis`` (None: flattened)."""
    shape, axis = ctx.in_shapes[0], ctx.attrs["axis"]
    axes = list(range(len(shape))) if axis is None else [axis % len(shape)]
    kept = [d for d in range(len(shape)) if d not in axes]
    n_red = prod(shape[d] for d in axes)
    n_out = prod(shape) // max(n_red, 1)
    cmp = ">" if p["kind"] == "max" else "<"
    helpers = _offset_fn("TAG_base", shape, kept) + _offset_fn("TAG_roff", shape, axes)
    body = ("        const long long b0 = TAG_base(i);\n"
            "        float best = x[b0]; long long at = 0;\n"
            f"        for (long long r = 1; r < {n_red}LL; ++r) {{\n"
            "            const float v = x[b0 + TAG_roff(r)];\n"
            f"            if (v {cmp} best) {{ best = v; at = r; }}\n"
            "        }\n"
            "        y[i] = (float)at;\n")
    kern = _kernel(f"arg{p['kind']}", f"{shape}{axes}",
                   "float* __restrict__ y, const float* __restrict__ x", body, helpers)
    return [_launch(ctx, kern, (ctx.outs[0], ctx.ins[0]), n_out)]


@family("one_hot")
def _one_hot(ctx: StepCtx, p: dict) -> list:
    a = ctx.attrs
    depth = a["depth"]
    body = (f"        const long long k = (long long)idx[i / {depth}LL];\n"
            f"        y[i] = (k == i % {depth}LL) ? {c_float(a['on_value'])} : "
            f"{c_float(a['off_value'])};\n")
    idx_t = C_TYPES[np.dtype(ctx.dtypes[0]).name]  # float32, or an integer (INDEX_INPUTS)
    kern = _kernel("one_hot", f"{depth},{a['on_value']},{a['off_value']},{idx_t}",
                   f"float* __restrict__ y, const {idx_t}* __restrict__ idx", body)
    return [_launch(ctx, kern, (ctx.outs[0], ctx.ins[0]), prod(ctx.out_shapes[0]))]


def _index_expr(n: int, wrap: bool) -> str:
    """C of the clipped or wrapped integer index ``k`` read from float ``raw``."""
    if wrap:
        return f"long long k = (long long)raw % {n}LL; if (k < 0) k += {n}LL;\n"
    return f"long long k = (long long)raw; k = k < 0 ? 0 : (k > {n - 1} ? {n - 1} : k);\n"


def _take_geometry(data: tuple, n_idx: int, axis: int) -> tuple[int, int, int, int]:
    ax = axis % len(data)
    return prod(data[:ax]), data[ax], prod(data[ax + 1:]), n_idx


@family("take")
def _take(ctx: StepCtx, p: dict) -> list:
    """y[o, j, in] = data[o, idx[j], in]; ``p['data']`` / ``p['indices']`` are input positions
    (Embedding has them the other way round, axis 0, clip)."""
    di, ii = p.get("data", 0), p.get("indices", 1)
    axis = ctx.attrs.get("axis", 0) if "axis" in ctx.attrs else 0
    wrap = ctx.attrs.get("mode", "clip") == "wrap" if "mode" in ctx.attrs else False
    outer, n, inner, m = _take_geometry(ctx.in_shapes[di], prod(ctx.in_shapes[ii]), axis)
    body = (f"        const long long in = i % {inner}LL, j = (i / {inner}LL) % {m}LL;\n"
            f"        const long long o = i / {inner * m}LL;\n"
            f"        const float raw = idx[j];\n        {_index_expr(n, wrap)}"
            f"        y[i] = x[(o * {n}LL + k) * {inner}LL + in];\n")
    kern = _kernel("take", f"{outer},{n},{inner},{m},{wrap}", "float* __restrict__ y, "
                   "const float* __restrict__ x, const float* __restrict__ idx", body, n_ptr=3)
    return [_launch(ctx, kern, (ctx.outs[0], ctx.ins[di], ctx.ins[ii]),
                    prod(ctx.out_shapes[0]))]


@family("take_backward")
def _take_backward(ctx: StepCtx, p: dict) -> list:
    """Inputs (ograd, indices, data): zeros, then each ograd slice added to its row."""
    a = ctx.attrs
    outer, n, inner, m = _take_geometry(ctx.in_shapes[2], prod(ctx.in_shapes[1]), a["axis"])
    body = (f"        const long long in = i % {inner}LL, j = (i / {inner}LL) % {m}LL;\n"
            f"        const long long o = i / {inner * m}LL;\n"
            f"        const float raw = idx[j];\n        {_index_expr(n, a['mode'] == 'wrap')}"
            f"        atomicAdd(&g[(o * {n}LL + k) * {inner}LL + in], dy[i]);\n")
    kern = _kernel("take_backward", f"{outer},{n},{inner},{m},{a['mode']}",
                   "float* g, const float* __restrict__ dy, const float* __restrict__ idx",
                   body, n_ptr=3)
    return [Fill(ctx.outs[0], 0.0, prod(ctx.out_shapes[0])),
            _launch(ctx, kern, (ctx.outs[0], ctx.ins[0], ctx.ins[1]), prod(ctx.in_shapes[0]))]
