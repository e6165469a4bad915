"""Kernel templates of ``lowering_reduce``: reductions over any axes (sum, mean, max, min, prod,
nansum, nanprod, L1/L2 norm), a thread or a block per output, in one or two stages.

Shapes are baked in as constants (one kernel per shape, all in the one module of a compiled
graph); every kernel takes pointers then ``long long n``. Buffers are of any float dtype (numpy
names ``x_t``, ``y_t``: float32 by default); every kernel reads through ``sg_ld`` and
accumulates in float.
"""
from __future__ import annotations

from math import prod
from typing import Sequence

from ...core.expr import C_MAX, C_MIN
from .codegen import (Rendered, c_float, dtype_helpers, index_type, kernel_name, ptr,
                      with_dtype)

Shape = tuple[int, ...]

# reduction kind -> (initial value, combine, finish given the count, map of each element v)
REDUCERS = {
    "sum": ("0.f", "a + b", "acc", "v"),
    "mean": ("0.f", "a + b", "acc * (1.f / {count}.f)", "v"),
    "max": (c_float(float("-inf")), C_MAX.format("a", "b"), "acc", "v"),  # NaN wins (numpy)
    "min": (c_float(float("inf")), C_MIN.format("a", "b"), "acc", "v"),
    "prod": ("1.f", "a * b", "acc", "v"),
    "nansum": ("0.f", "a + b", "acc", "(isnan(v) ? 0.f : v)"),
    "nanprod": ("1.f", "a * b", "acc", "(isnan(v) ? 1.f : v)"),
    "norm1": ("0.f", "a + b", "acc", "fabsf(v)"),
    "norm2": ("0.f", "a + b", "sqrtf(acc)", "v * v"),
    "sumsq": ("0.f", "a + b", "acc", "v * v"),
    "finite": ("1.f", "fminf(a, b)", "acc", "(isfinite(v) ? 1.f : 0.f)"),
}


def offset_fn(fname: str, shape: Shape, dims: Sequence[int]) -> str:
    """``__device__`` function: flat index over ``dims`` of ``shape`` -> element offset."""
    strides = [prod(shape[d + 1:]) for d in range(len(shape))]
    lines = ["    long long off = 0;"]
    for d in reversed(dims):
        lines.append(f"    off += (k % {shape[d]}LL) * {strides[d]}LL; k /= {shape[d]}LL;")
    return (f"__device__ __forceinline__ long long {fname}(long long k) {{\n"
            + "\n".join(lines) + "\n    return off;\n}\n")


def reduce_split(shape: Shape, axes: Sequence[int]) -> tuple[int, int]:
    """(number of outputs, elements reduced per output)."""
    n_red = prod(shape[a] for a in axes)
    return prod(shape) // max(n_red, 1), n_red


def use_block_per_output(n_out: int, n_red: int, sm_count: int) -> bool:
    """Few outputs with long reductions: a block cooperates on each; else a thread per output."""
    return n_out < sm_count * 64 and n_red > 64


def render_reduce(stem: str, shape: Shape, axes: Sequence[int], kind: str,
                  block_per_output: bool, chunks: int = 1, count: int = 0,
                  partials: bool = False, x_t: str = "float32",
                  y_t: str = "float32") -> Rendered:
    """out[o] = reduce over the ``axes`` of ``shape``; outputs in row-major order of kept axes.

    With ``chunks > 1`` (block per output only) each output's reduction is cut into ``chunks``
    pieces and the kernel writes the ``n_out * chunks`` unfinished partial results (stage one of
    a two-stage reduction). ``count`` overrides the divisor of ``mean``; ``partials`` says the
    input holds such partial results (stage two), so the per-element map is not applied again.
    ``x_t`` / ``y_t``: the dtypes of input and output (the accumulator is a float).
    """
    kept = [d for d in range(len(shape)) if d not in axes]
    n_out, n_red = reduce_split(shape, axes)
    init, comb, fin, load = REDUCERS[kind]
    fin = "acc" if chunks > 1 else fin.format(count=max(count or n_red, 1))
    load = "v" if partials else load
    clen = -(-n_red // chunks)
    tag = kernel_name(with_dtype(stem, x_t), f"{shape}{tuple(axes)}{kind}{block_per_output}"
                      f"{chunks},{count},{partials},{x_t},{y_t}")
    helpers = (offset_fn(f"{tag}_base", shape, kept) + offset_fn(f"{tag}_roff", shape, list(axes))
               + f"__device__ __forceinline__ float {tag}_op(float a, float b) "
               f"{{ return {comb}; }}\n"
               + f"__device__ __forceinline__ float {tag}_load(float v) {{ return {load}; }}\n")
    if block_per_output:
        body = (
            f"    __shared__ float part[32];\n"
            f"    for (long long v = blockIdx.x; v < {n_out * chunks}LL; v += gridDim.x) {{\n"
            f"        const long long o = v / {chunks}LL, r0 = (v % {chunks}LL) * {clen}LL;\n"
            f"        const long long r1 = r0 + {clen}LL < {n_red}LL ? r0 + {clen}LL : {n_red}LL;\n"
            f"        const long long b0 = {tag}_base(o);\n"
            f"        float acc = {init};\n"
            f"        for (long long r = r0 + threadIdx.x; r < r1; r += blockDim.x)\n"
            f"            acc = {tag}_op(acc, {tag}_load(sg_ld(x[b0 + {tag}_roff(r)])));\n"
            f"        for (int s = 16; s > 0; s >>= 1) "
            f"acc = {tag}_op(acc, __shfl_down_sync(0xffffffffu, acc, s));\n"
            "        if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = acc;\n"
            "        __syncthreads();\n"
            "        if (threadIdx.x < 32) {\n"
            f"            acc = threadIdx.x < (blockDim.x >> 5) ? part[threadIdx.x] : {init};\n"
            f"            for (int s = 16; s > 0; s >>= 1) "
            f"acc = {tag}_op(acc, __shfl_down_sync(0xffffffffu, acc, s));\n"
            f"            if (threadIdx.x == 0) y[v] = {fin};\n"
            "        }\n"
            "        __syncthreads();\n"
            "    }\n")
    else:
        body = (
            f"    for (long long o = (long long)blockIdx.x * blockDim.x + threadIdx.x; "
            f"o < {n_out}LL; o += (long long)blockDim.x * gridDim.x) {{\n"
            f"        const long long b0 = {tag}_base(o);\n"
            f"        float acc = {init};\n"
            f"        for (long long r = 0; r < {n_red}LL; ++r) "
            f"acc = {tag}_op(acc, {tag}_load(sg_ld(x[b0 + {tag}_roff(r)])));\n"
            f"        y[o] = {fin};\n"
            "    }\n")
    src = (helpers + f"extern \"C\" __global__ void {tag}({ptr('y', y_t, False)}, "
           f"{ptr('x', x_t)}, long long n) {{\n{body}}}\n")
    return Rendered(tag, src, 2, helpers=dtype_helpers(x_t, y_t))


def leading_split(shape: Shape, axes: Sequence[int]) -> tuple[int, int]:
    """(rows, columns) when ``axes`` are the leading axes of ``shape`` and some axes stay
    (a column reduction of a row-major (rows, columns) matrix); (0, 0) otherwise."""
    k = len(axes)
    if k == 0 or k == len(shape) or tuple(sorted(axes)) != tuple(range(k)):
        return 0, 0
    return prod(shape[:k]), prod(shape[k:])


def render_column_partials(rows: int, cols: int, chunks: int, kind: str,
                           x_t: str = "float32") -> Rendered:
    """Stage one of a column reduction: ``part[c * cols + j]`` (float) reduces rows ``c *
    ceil(rows / chunks)`` onward (a chunk) of column ``j``; adjacent threads take adjacent
    columns, so each row's loads are coalesced (a block per column would read one element per
    32-byte sector). Stage two reduces ``part`` as a (chunks, cols) column reduction."""
    init, comb, _, load = REDUCERS[kind]
    clen = -(-rows // chunks)
    it = index_type(rows * cols + 1)
    tag = kernel_name(with_dtype("column_partials", x_t), f"{rows},{cols},{chunks},{kind}")
    body = (f"    for ({it} t = ({it})blockIdx.x * blockDim.x + threadIdx.x; "
            f"t < {cols * chunks}u; t += ({it})blockDim.x * gridDim.x) {{\n"
            f"        const {it} j = t % {cols}u, r0 = (t / {cols}u) * {clen}u;\n"
            f"        const {it} r1 = r0 + {clen}u < {rows}u ? r0 + {clen}u : {rows}u;\n"
            f"        float acc = {init};\n"
            f"        for ({it} r = r0; r < r1; ++r) {{\n"
            f"            const float v = sg_ld(x[r * {cols}u + j]);\n"
            f"            const float a = acc, b = {load};\n"
            f"            acc = {comb};\n"
            "        }\n"
            "        part[t] = acc;\n"
            "    }\n")
    src = (f"extern \"C\" __global__ void {tag}(float* part, {ptr('x', x_t)}, long long n) "
           f"{{\n{body}}}\n")
    return Rendered(tag, src, 2, helpers=dtype_helpers(x_t))
