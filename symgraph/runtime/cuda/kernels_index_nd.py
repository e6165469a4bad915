"""C templates of the n-d indexing kernels (rendered for ``lowering_index_nd.py``): gather_nd,
scatter_nd and its add form (gather_nd's gradient, also index_copy and fill_element_0index),
ravel_multi_index, unravel_index, index_array and arange_like. One thread per element in the
shared grid-stride loop (``codegen.grid_stride_kernel``).

Indices arrive as floats of any float dtype or as integers (``codegen.index_load``) and are
truncated like ``astype(int64)``; a negative index counts from the end of its axis once, and
what is still out of range is clamped (a kernel cannot raise; the CPU reference does).
Elements are moved in their own type, so every float and integer dtype is one template.
"""
from __future__ import annotations

import math
from typing import Sequence

from .codegen import C_TYPES, NARROW_C, Rendered, c_float, grid_stride_kernel, index_load, ptr

Shape = tuple[int, ...]


def stored(dtype: str, value: str) -> str:
    """C of an integer or double ``value`` converted to the C type of numpy ``dtype`` (narrow
    floats through float, their one conversion)."""
    return f"(float)({value})" if C_TYPES[dtype] in NARROW_C else f"({C_TYPES[dtype]})({value})"


def _offset(dims: Sequence[int], strides: Sequence[int], n_rows: int, idx_t: str) -> str:
    """C statements summing into ``off`` each index ``idx[j * n_rows + yy]`` (read from the end
    when negative, clamped into ``[0, dims[j])``) times ``strides[j]``."""
    lines = []
    for j, (d, st) in enumerate(zip(dims, strides)):
        _, raw = index_load(f"idx[{j * n_rows}LL + yy]", idx_t)
        lines.append(f"        {{ long long q = (long long){raw}; if (q < 0) q += {d}LL;\n"
                     f"          q = q < 0 ? 0 : (q > {d - 1}LL ? {d - 1}LL : q); "
                     f"off += q * {st}LL; }}\n")
    return "".join(lines)


def _add(dtype: str, target: str, value: str) -> str:
    """An atomic ``target += value`` for elements of numpy ``dtype`` (int64 through the
    unsigned 64-bit atomicAdd: two's complement sums agree)."""
    if dtype == "int64":
        return (f"atomicAdd((unsigned long long*)&{target}, "
                f"(unsigned long long){value});\n")
    return f"atomicAdd(&{target}, {value});\n"


def render_nd_index(kind: str, dims: Sequence[int], strides: Sequence[int], n_rows: int,
                    inner: int, dtype: str, idx_t: str, row_stride: int = 0) -> Rendered:
    """For each of ``n_rows`` index columns yy (``idx`` is (len(dims), n_rows)) and each of the
    ``inner`` elements after it, with ``off`` = yy * row_stride + sum_j idx[j, yy] * strides[j]:
    ``gather``: y[i] = x[off + in]; ``scatter``: y[off + in] = x[i]; ``add``: the same with
    atomicAdd (y zero-filled first). ``i`` counts (yy, in) row-major."""
    head = (f"        const long long yy = i / {inner}LL, in = i % {inner}LL;\n"
            f"        long long off = yy * {row_stride}LL;\n"
            + _offset(dims, strides, n_rows, idx_t))
    body = {"gather": "        y[i] = x[off + in];\n",
            "scatter": "        y[off + in] = x[i];\n",
            "add": "        " + _add(dtype, "y[off + in]", "x[i]")}[kind]
    params = (f"{ptr('y', dtype, False, kind != 'add')}, {ptr('x', dtype)}, "
              f"{ptr('idx', idx_t)}")
    key = f"{kind},{tuple(dims)},{tuple(strides)},{n_rows},{inner},{row_stride}"
    return grid_stride_kernel(f"{kind}_nd", key, params, head + body, n_ptr=3)


def render_ravel(shape: Shape, n_rows: int, dtype: str) -> Rendered:
    """y[yy] = sum_j (long long)x[j, yy] * prod(shape[j+1:]) over x (len(shape), n_rows)."""
    terms = []
    for j in range(len(shape)):
        _, raw = index_load(f"x[{j * n_rows}LL + i]", dtype)
        stride = 1
        for d in shape[j + 1:]:
            stride *= d
        terms.append(f"        acc += (long long){raw} * {stride}LL;\n")
    body = ("        long long acc = 0;\n" + "".join(terms)
            + f"        y[i] = {stored(dtype, 'acc')};\n")
    return grid_stride_kernel("ravel_multi_index", f"{shape},{n_rows}",
                              f"{ptr('y', dtype, False)}, {ptr('x', dtype)}", body)


def render_unravel(shape: Shape, n_rows: int, dtype: str) -> Rendered:
    """y[j, yy] = coordinate j of the flat index x[yy] in ``shape``, with C's truncating / and
    % (MXNet's arithmetic: the first coordinate is not wrapped)."""
    dims = ", ".join(f"{d}LL" for d in shape)
    _, raw = index_load("x[yy]", dtype)
    body = (f"        const long long dm[{len(shape)}] = {{{dims}}};\n"
            f"        const int j = (int)(i / {n_rows}LL); const long long yy = i % {n_rows}LL;\n"
            f"        long long v = (long long){raw};\n"
            f"        for (int d = {len(shape) - 1}; d > j; --d) v /= dm[d];\n"
            "        if (j > 0) v %= dm[j];\n"
            f"        y[i] = {stored(dtype, 'v')};\n")
    return grid_stride_kernel("unravel_index", f"{shape},{n_rows}",
                              f"{ptr('y', dtype, False)}, {ptr('x', dtype)}", body)


def render_index_array(shape: Shape, axes: Sequence[int], dtype: str) -> Rendered:
    """y[e, a] = coordinate axes[a] of element e of an array of ``shape`` (y has len(axes)
    columns); the input is not read (only its shape matters)."""
    inner = [1] * len(shape)
    for d in range(len(shape) - 2, -1, -1):
        inner[d] = inner[d + 1] * shape[d + 1]
    st = ", ".join(f"{inner[ax]}LL" for ax in axes)
    dm = ", ".join(f"{shape[ax]}LL" for ax in axes)
    body = (f"        const long long st[{len(axes)}] = {{{st}}}, dm[{len(axes)}] = {{{dm}}};\n"
            f"        const int a = (int)(i % {len(axes)}LL);\n"
            f"        y[i] = {stored(dtype, f'(i / {len(axes)}LL / st[a]) % dm[a]')};\n")
    return grid_stride_kernel("index_array", f"{shape},{tuple(axes)}",
                              f"{ptr('y', dtype, False)}", body, n_ptr=1)


def _literal(v: float) -> str:
    """A double literal of ``v`` (C's float spelling for infinities and NaN)."""
    return repr(float(v)) if math.isfinite(v) else c_float(v)


def render_arange(start: float, step: float, repeat: int, dtype: str) -> Rendered:
    """y[i] = start + step * (i / repeat), computed in double, stored in ``dtype``."""
    value = f"(double){_literal(start)} + (double){_literal(step)} * (double)(i / {repeat}LL)"
    body = f"        y[i] = {stored(dtype, value)};\n"
    return grid_stride_kernel("arange_like", f"{start},{step},{repeat}",
                              f"{ptr('y', dtype, False)}", body, n_ptr=1)
