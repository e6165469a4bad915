"""C templates of the layout kernels (rendered for ``lowering_layout.py``): pad's gather, the
fold of one padded axis (pad's gradient) and Cast between C types, each one thread per output
element in the shared grid-stride loop (``codegen.grid_stride_kernel``).
"""
from __future__ import annotations

from math import prod

from .codegen import C_TYPES, NARROW_C, Rendered, c_float, grid_stride_kernel, ptr

Shape = tuple[int, ...]
Pairs = list[tuple[int, int]]


def pad_source_index(mode: str, n: int, before: int, after: int) -> str:
    """C statements mapping output coordinate ``c`` of one axis to source coordinate ``s``."""
    if before == after == 0:
        return "s = c;"
    s = f"s = c - {before}LL;"
    if mode == "edge":
        return s + f" s = s < 0 ? 0 : (s >= {n}LL ? {n - 1}LL : s);"
    if mode == "reflect":
        return s + f" s = s < 0 ? -s : (s >= {n}LL ? {2 * (n - 1)}LL - s : s);"
    return s + f" inside = inside && s >= 0 && s < {n}LL;"


def render_pad(x: Shape, y: Shape, pairs: Pairs, mode: str, constant_value: float,
               dtype: str = "float32") -> Rendered:
    """y = x padded by ``pairs`` (before, after) per axis in ``mode``."""
    idx = ["        long long r = i, src = 0, c, s;", "        bool inside = true;"]
    for d in range(len(x) - 1, -1, -1):
        idx.append(f"        c = r % {y[d]}LL; r /= {y[d]}LL; "
                   + pad_source_index(mode, x[d], *pairs[d])
                   + f" src += s * {prod(x[d + 1:])}LL;")
    body = ("\n".join(idx)
            + f"\n        y[i] = inside ? sg_ld(x[src]) : {c_float(constant_value)};\n")
    return grid_stride_kernel(f"pad_{mode}", f"{x}{pairs}{mode}{constant_value}",
                              f"{ptr('y', dtype, False)}, {ptr('x', dtype)}", body)


def render_pad_fold(outer: int, n: int, inner: int, before: int, after: int,
                    mode: str, dtype: str = "float32") -> Rendered:
    """y(outer, n, inner) = the gradient of one padded axis (outer, before+n+after, inner)
    folded back: each cell's own entry plus the padded entries that were copies of it."""
    m = before + n + after
    lines = [f"        const long long in = i % {inner}LL, c = (i / {inner}LL) % {n}LL;",
             f"        const {C_TYPES[dtype]}* col = x + (i / {inner * n}LL) * {m * inner}LL"
             " + in;",
             f"        float acc = sg_ld(col[(c + {before}LL) * {inner}LL]);"]
    if mode == "edge" and before:  # the head copies cell 0
        lines.append(f"        if (c == 0) for (int k = 0; k < {before}; ++k) "
                     f"acc += sg_ld(col[k * {inner}LL]);")
    if mode == "edge" and after:  # the tail copies cell n-1
        lines.append(f"        if (c == {n - 1}) for (int k = {before + n}; k < {m}; ++k) "
                     f"acc += sg_ld(col[k * {inner}LL]);")
    if mode == "reflect" and before:  # head entry before-c mirrors cell c
        lines.append(f"        if (c >= 1 && c <= {before}) "
                     f"acc += sg_ld(col[({before}LL - c) * {inner}LL]);")
    if mode == "reflect" and after:  # tail entry before+2n-2-c mirrors cell c
        lines.append(f"        if (c >= {n - 1 - after} && c <= {n - 2}) "
                     f"acc += sg_ld(col[({before + 2 * n - 2}LL - c) * {inner}LL]);")
    body = "\n".join(lines) + "\n        y[i] = acc;\n"
    return grid_stride_kernel(f"pad_fold_{mode}", f"{outer},{n},{inner},{before},{after},{mode}",
                              f"{ptr('y', dtype, False)}, {ptr('x', dtype)}", body)


def converted(src_t: str, dst_t: str, ref: str) -> str:
    """C of element ``ref`` (of numpy dtype ``src_t``) converted to ``dst_t`` as C converts;
    float16 and bfloat16 go through float, their only conversion (rounding to nearest)."""
    narrow = C_TYPES[src_t] in NARROW_C or C_TYPES[dst_t] in NARROW_C
    value = f"sg_ld({ref})" if C_TYPES[src_t] in NARROW_C else f"(float){ref}" if narrow \
        else ref
    return f"({C_TYPES[dst_t]}){value}"


def render_cast(src_t: str, dst_t: str) -> Rendered:
    """y[i] = x[i] converted from numpy dtype ``src_t`` to ``dst_t`` (:func:`converted`)."""
    return grid_stride_kernel(
        f"cast_{src_t}_to_{dst_t}", f"{src_t},{dst_t}",
        f"{C_TYPES[dst_t]}* __restrict__ y, const {C_TYPES[src_t]}* __restrict__ x",
        f"        y[i] = {converted(src_t, dst_t, 'x[i]')};\n")
