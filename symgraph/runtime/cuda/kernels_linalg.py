"""C templates of the ``linalg`` family's own kernels (rendered for ``lowering_linalg.py``):
packing and unpacking a triangle (extracttrian / maketrian), the triangle of a matrix with the
rest zeroed (trmm's operand before its GEMM), sumlogdiag, alpha/beta scaling after a GEMM and
the Khatri-Rao product. One thread per element in the shared grid-stride loop; arithmetic in
float, loads through ``sg_ld``.

The packed index of element (r, c) of an n x n matrix follows ``ops/linalg_tri``'s order:
below the ``offset``-th diagonal (offset <= 0) row r holds r + offset + 1 entries, packed row by
row, so (r, c) is entry (r + offset)(r + offset + 1)/2 + c; the upper triangle (offset >= 0) is
packed column by column, as the lower one of the transpose: (c - offset)(c - offset + 1)/2 + r.
"""
from __future__ import annotations

from .codegen import Rendered, c_float, grid_stride_kernel, ptr, with_dtype


def _triangle(n: int, offset: int, lower: bool) -> str:
    """C computing ``r``, ``c``, ``inside`` and ``k`` (packed index) of element ``i``."""
    if lower:
        test, k = f"c - r <= {offset}LL", f"(r + {offset}LL) * (r + {offset}LL + 1) / 2 + c"
    else:
        test, k = f"c - r >= {offset}LL", f"(c - {offset}LL) * (c - {offset}LL + 1) / 2 + r"
    return (f"        const long long m = i / {n * n}LL, r = (i / {n}LL) % {n}LL, "
            f"c = i % {n}LL;\n"
            f"        const bool inside = {test};\n"
            f"        const long long k = inside ? m * PACKED + {k} : 0;\n")


def render_trian(n: int, offset: int, lower: bool, packed: int, kind: str,
                 dtype: str) -> Rendered:
    """Over every element of (batch, n, n) matrices: ``kind`` "extract" writes the triangle's
    entries into the packed rows ``y`` (batch, packed); "make" writes the matrices ``y`` from
    the packed ``x`` (zero outside); "mask" copies the triangle of ``x`` into ``y`` (zero
    outside)."""
    stmt = {"extract": "        if (inside) y[k] = x[i];\n",
            "make": "        if (inside) y[i] = x[k]; else y[i] = 0.0f;\n",
            "mask": "        if (inside) y[i] = x[i]; else y[i] = 0.0f;\n"}[kind]
    body = _triangle(n, offset, lower).replace("PACKED", f"{packed}LL") + stmt
    params = f"{ptr('y', dtype, False)}, {ptr('x', dtype)}"
    return grid_stride_kernel(with_dtype(f"linalg_trian_{kind}", dtype),
                              f"{n},{offset},{lower},{packed}", params, body)


def render_sumlogdiag(n: int, dtype: str) -> Rendered:
    """y[m] = sum of log(x[m, j, j]): one thread per matrix (n is a matrix side: small)."""
    body = (f"        float s = 0.0f;\n"
            f"        for (long long j = 0; j < {n}LL; ++j) "
            f"s += logf(sg_ld(x[i * {n * n}LL + j * {n + 1}LL]));\n"
            f"        y[i] = s;\n")
    params = f"{ptr('y', dtype, False)}, {ptr('x', dtype)}"
    return grid_stride_kernel(with_dtype("linalg_sumlogdiag", dtype), str(n), params, body)


def render_scale(alpha: float, source: str, dtype: str) -> Rendered:
    """y = alpha * x (``source`` "x", another buffer) or y = alpha * y (``source`` "y", in
    place): the alpha and beta of a GEMM the library call runs with 1 and 0 or 1."""
    body = f"        y[i] = {c_float(alpha)} * sg_ld({source}[i]);\n"
    params = f"{ptr('y', dtype, False, False)}, {ptr('x', dtype, True, False)}"
    return grid_stride_kernel(with_dtype(f"linalg_scale_{source}", dtype), str(alpha), params,
                              body)


def render_khatri_rao(rows: tuple[int, ...], cols: int, dtype: str) -> Rendered:
    """y[(i_1, ..., i_k), c] = prod_j x_j[i_j, c], the row index split in C order."""
    lines = [f"        const long long c = i % {cols}LL;\n",
             f"        long long rest = i / {cols}LL;\n", "        float p = 1.0f;\n"]
    for j in reversed(range(len(rows))):
        lines.append(f"        p *= sg_ld(x{j}[(rest % {rows[j]}LL) * {cols}LL + c]); "
                     f"rest /= {rows[j]}LL;\n")
    params = ", ".join([ptr("y", dtype, False)] + [ptr(f"x{j}", dtype) for j in range(len(rows))])
    return grid_stride_kernel(with_dtype("khatri_rao", dtype), f"{rows},{cols}", params,
                              "".join(lines) + "        y[i] = p;\n", n_ptr=1 + len(rows))
