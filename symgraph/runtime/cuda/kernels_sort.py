"""Kernel templates of ``lowering_sort``: ranking sort (sort/argsort/topk) and the axis gather
(pick, ``_gather_axis``) with its scatter.

A sort kernel runs a thread per element: its rank is the number of elements of its row that
come before it (smaller, or equal and earlier: the stable order numpy's reference uses), and it
writes itself at that rank (if below k for topk). Quadratic in the row length, with no scratch
memory and no synchronisation; rows of sort/topk in models are short. Arrays are read as
(outer, n, inner) around the sorted or indexed axis.
"""
from __future__ import annotations

from typing import Sequence

from .codegen import Rendered, ctype, grid_stride_kernel, index_load, ptr

FLOAT_DTYPES = ("float32", "float16", "bfloat16")


def render_rank(kind: str, outer: int, n: int, inner: int, k: int, ascend: bool,
                out_types: Sequence[str], x_type: str) -> Rendered:
    """``kind``: value (sorted values), indices, both (values and indices), or mask (1 where
    the element is among the first ``k``); outputs of ``out_types``, input of ``x_type``.
    Float inputs compare as float; integer inputs in their own type (a float holds int32
    exactly only below 2**24)."""
    before = "w < v" if ascend else "w > v"
    whole = x_type not in FLOAT_DTYPES
    vt = ctype(x_type) if whole else "float"

    def load(e: str) -> str:
        return e if whole else f"sg_ld({e})"

    def index(t: str) -> str:  # r in an output of dtype t
        return "(float)r" if t in FLOAT_DTYPES else f"({ctype(t)})r"
    body = (f"        const long long in = i % {inner}LL, r = (i / {inner}LL) % {n}LL;\n"
            f"        const long long o = i / {n * inner}LL, base = o * {n * inner}LL + in;\n"
            f"        const {vt} v = {load('x[i]')};\n        long long rank = 0;\n"
            f"        for (long long j = 0; j < {n}LL; ++j) {{\n"
            f"            const {vt} w = {load(f'x[base + j * {inner}LL]')};\n"
            f"            rank += ({before}) || (w == v && j < r);\n        }}\n")
    at = f"(o * {k}LL + rank) * {inner}LL + in"
    if kind == "mask":
        body += f"        y0[i] = rank < {k}LL ? 1.f : 0.f;\n"
    else:
        body += f"        if (rank < {k}LL) {{\n"
        if kind in ("value", "both"):
            body += f"            y0[{at}] = v;\n"
        if kind == "indices":
            body += f"            y0[{at}] = {index(out_types[0])};\n"
        if kind == "both":
            body += f"            y1[{at}] = {index(out_types[1])};\n"
        body += "        }\n"
    params = ", ".join([ptr(f"y{i}", t, False) for i, t in enumerate(out_types)]
                       + [ptr("x", x_type)])
    return grid_stride_kernel(f"rank_{kind}", f"{outer},{n},{inner},{k},{ascend}", params, body,
                              n_ptr=len(out_types) + 1)


def render_axis_gather(scatter: bool, outer: int, n: int, inner: int, m: int, wrap: bool,
                       y_t: str, x_t: str, idx_t: str) -> Rendered:
    """Gather ``y[o, j, in] = x[o, idx[o, j, in], in]`` over ``m`` index entries per row; with
    ``scatter`` its adjoint, ``atomicAdd`` of each ``g`` element into ``y`` (zeroed before).
    Indices wrap (``wrap``) or are clipped to [0, n) (also for ``mode='raise'``: a kernel cannot
    raise, and no read may leave the array; the CPU raises DataError)."""
    idx = (f"long long k = (long long)raw % {n}LL; if (k < 0) k += {n}LL;" if wrap else
           f"long long k = (long long)raw; k = k < 0 ? 0 : (k > {n - 1} ? {n - 1} : k);")
    raw_t, raw = index_load("idx[i]", idx_t)
    body = (f"        const long long in = i % {inner}LL, o = i / {m * inner}LL;\n"
            f"        const {raw_t} raw = {raw};\n        {idx}\n"
            f"        const long long at = (o * {n}LL + k) * {inner}LL + in;\n")
    key = f"{outer},{n},{inner},{m},{wrap}"
    if scatter:
        body += "        atomicAdd(&y[at], g[i]);\n"
        params = f"{ptr('y', y_t, False)}, {ptr('g', x_t)}, {ptr('idx', idx_t)}"
        return grid_stride_kernel("scatter_axis", key, params, body, n_ptr=3)
    body += "        y[i] = x[at];\n"
    params = f"{ptr('y', y_t, False)}, {ptr('x', x_t)}, {ptr('idx', idx_t)}"
    return grid_stride_kernel("gather_axis", key, params, body, n_ptr=3)
