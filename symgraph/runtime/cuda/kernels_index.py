"""C templates of the indexing kernels (rendered for ``lowering_index.py``): argmax/argmin,
one_hot, take (and Embedding) and take's gradient. One thread per output element, in the
shared grid-stride loop (``codegen.grid_stride_kernel``); indices arrive as floats (of any
float dtype, or one_hot's integers) and are truncated like ``astype(int64)``, then clipped or
wrapped as take's ``mode`` says; ``raise`` clips (a kernel cannot raise, and no read may leave
the array), where the CPU raises DataError (docs/mxnet_parity.md). ``dtype``: the data's float type (``idx_t``: the indices').
"""
from __future__ import annotations

from .codegen import Rendered, c_float, grid_stride_kernel, index_load, ptr
from .kernels_reduce import offset_fn

Shape = tuple[int, ...]


def render_arg_reduce(kind: str, shape: Shape, axes: list[int], kept: list[int],
                      n_red: int, dtype: str = "float32", y_t: str = "float32") -> Rendered:
    """y[i] = index (as a float) of the first max/min of x over ``axes`` at output i."""
    cmp = ">" if kind == "max" else "<"
    helpers = offset_fn("TAG_base", shape, kept) + offset_fn("TAG_roff", shape, axes)
    body = ("        const long long b0 = TAG_base(i);\n"
            "        float best = sg_ld(x[b0]); long long at = 0;\n"
            f"        for (long long r = 1; r < {n_red}LL; ++r) {{\n"
            "            const float v = sg_ld(x[b0 + TAG_roff(r)]);\n"
            f"            if (v {cmp} best) {{ best = v; at = r; }}\n"
            "        }\n"
            "        y[i] = (float)at;\n")
    return grid_stride_kernel(f"arg{kind}", f"{shape}{axes}",
                              f"{ptr('y', y_t, False)}, {ptr('x', dtype)}", body,
                              prelude=helpers)


def render_one_hot(depth: int, on_value: float, off_value: float, idx_t: str,
                   y_t: str = "float32") -> Rendered:
    """y[i] = on_value where i % depth is the index idx[i / depth], else off_value; ``idx_t``
    is the indices' numpy dtype (a float type, or an integer type read as it is), ``y_t`` the
    output's."""
    _, value = index_load(f"idx[i / {depth}LL]", idx_t)
    body = (f"        const long long k = (long long){value};\n"
            f"        y[i] = (k == i % {depth}LL) ? {c_float(on_value)} : "
            f"{c_float(off_value)};\n")
    return grid_stride_kernel("one_hot", f"{depth},{on_value},{off_value},{idx_t}",
                              f"{ptr('y', y_t, False)}, {ptr('idx', idx_t)}", body)


def _index_expr(n: int, wrap: bool) -> str:
    """C of the clipped or wrapped integer index ``k`` read from ``raw`` (a float or integer)."""
    if wrap:
        return f"long long k = (long long)raw % {n}LL; if (k < 0) k += {n}LL;\n"
    return f"long long k = (long long)raw; k = k < 0 ? 0 : (k > {n - 1} ? {n - 1} : k);\n"


def _take_index(n: int, inner: int, m: int, wrap: bool, idx_t: str) -> str:
    """The first lines of a take kernel's body: element ``i``'s ``(o, j, in)`` and ``k``, the
    index ``idx[j]`` wrapped or clipped into ``[0, n)``."""
    raw_t, raw = index_load("idx[j]", idx_t)
    return (f"        const long long in = i % {inner}LL, j = (i / {inner}LL) % {m}LL;\n"
            f"        const long long o = i / {inner * m}LL;\n"
            f"        const {raw_t} raw = {raw};\n        {_index_expr(n, wrap)}")


def render_take(outer: int, n: int, inner: int, m: int, wrap: bool, dtype: str = "float32",
                idx_t: str = "float32") -> Rendered:
    """y[o, j, in] = x[o, idx[j], in] over data viewed as (outer, n, inner), m indices."""
    body = (_take_index(n, inner, m, wrap, idx_t)
            + f"        y[i] = x[(o * {n}LL + k) * {inner}LL + in];\n")
    return grid_stride_kernel("take", f"{outer},{n},{inner},{m},{wrap}",
                              f"{ptr('y', dtype, False)}, {ptr('x', dtype)}, {ptr('idx', idx_t)}",
                              body, n_ptr=3)


def render_take_backward(outer: int, n: int, inner: int, m: int, mode: str,
                         dtype: str = "float32", idx_t: str = "float32") -> Rendered:
    """g[o, idx[j], in] += dy[o, j, in] with atomicAdd (g zero-filled first; narrow types use
    their own atomicAdd, sm_70+ for __half, sm_80+ for __nv_bfloat16)."""
    body = (_take_index(n, inner, m, mode == "wrap", idx_t)
            + f"        atomicAdd(&g[(o * {n}LL + k) * {inner}LL + in], dy[i]);\n")
    return grid_stride_kernel("take_backward", f"{outer},{n},{inner},{m},{mode}",
                              f"{ptr('g', dtype, False, False)}, {ptr('dy', dtype)}, "
                              f"{ptr('idx', idx_t)}", body, n_ptr=3)
