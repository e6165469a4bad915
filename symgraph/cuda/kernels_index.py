"""C templates of the indexing kernels (rendered for ``lowering_index.py``): argmax/argmin,
one_hot, take (and Embedding) and take's gradient. One thread per output element, in the
shared grid-stride loop (``codegen.grid_stride_kernel``); indices arrive as floats and are
truncated like ``astype(int64)``, then clipped or wrapped as take's ``mode`` says.
"""
from __future__ import annotations

from .codegen import Rendered, c_float, grid_stride_kernel
from .kernels import _offset_fn

Shape = tuple[int, ...]


def render_arg_reduce(kind: str, shape: Shape, axes: list[int], kept: list[int],
                      n_red: int) -> Rendered:
    """y[i] = index (as a float) of the first max/min of x over ``axes`` at output i."""
    cmp = ">" if kind == "max" else "<"
    helpers = _offset_fn("TAG_base", shape, kept) + _offset_fn("TAG_roff", shape, axes)
    body = ("        const long long b0 = TAG_base(i);\n"
            "        float best = x[b0]; long long at = 0;\n"
            f"        for (long long r = 1; r < {n_red}LL; ++r) {{\n"
            "            const float v = x[b0 + TAG_roff(r)];\n"
            f"            if (v {cmp} best) {{ best = v; at = r; }}\n"
            "        }\n"
            "        y[i] = (float)at;\n")
    return grid_stride_kernel(f"arg{kind}", f"{shape}{axes}",
                              "float* __restrict__ y, const float* __restrict__ x", body,
                              prelude=helpers)


def render_one_hot(depth: int, on_value: float, off_value: float, idx_t: str) -> Rendered:
    """y[i] = on_value where i % depth is the index idx[i / depth], else off_value; ``idx_t``
    is the indices' C type (float, or an integer type read as it is)."""
    body = (f"        const long long k = (long long)idx[i / {depth}LL];\n"
            f"        y[i] = (k == i % {depth}LL) ? {c_float(on_value)} : "
            f"{c_float(off_value)};\n")
    return grid_stride_kernel("one_hot", f"{depth},{on_value},{off_value},{idx_t}",
                              f"float* __restrict__ y, const {idx_t}* __restrict__ idx", body)


def _index_expr(n: int, wrap: bool) -> str:
    """C of the clipped or wrapped integer index ``k`` read from float ``raw``."""
    if wrap:
        return f"long long k = (long long)raw % {n}LL; if (k < 0) k += {n}LL;\n"
    return f"long long k = (long long)raw; k = k < 0 ? 0 : (k > {n - 1} ? {n - 1} : k);\n"


def render_take(outer: int, n: int, inner: int, m: int, wrap: bool) -> Rendered:
    """y[o, j, in] = x[o, idx[j], in] over data viewed as (outer, n, inner), m indices."""
    body = (f"        const long long in = i % {inner}LL, j = (i / {inner}LL) % {m}LL;\n"
            f"        const long long o = i / {inner * m}LL;\n"
            f"        const float raw = idx[j];\n        {_index_expr(n, wrap)}"
            f"        y[i] = x[(o * {n}LL + k) * {inner}LL + in];\n")
    return grid_stride_kernel("take", f"{outer},{n},{inner},{m},{wrap}", "float* __restrict__ y, "
                              "const float* __restrict__ x, const float* __restrict__ idx", body,
                              n_ptr=3)


def render_take_backward(outer: int, n: int, inner: int, m: int, mode: str) -> Rendered:
    """g[o, idx[j], in] += dy[o, j, in] with atomicAdd (g zero-filled first)."""
    body = (f"        const long long in = i % {inner}LL, j = (i / {inner}LL) % {m}LL;\n"
            f"        const long long o = i / {inner * m}LL;\n"
            f"        const float raw = idx[j];\n        {_index_expr(n, mode == 'wrap')}"
            f"        atomicAdd(&g[(o * {n}LL + k) * {inner}LL + in], dy[i]);\n")
    return grid_stride_kernel("take_backward", f"{outer},{n},{inner},{m},{mode}",
                              "float* g, const float* __restrict__ dy, const float* __restrict__ "
                              "idx", body, n_ptr=3)
