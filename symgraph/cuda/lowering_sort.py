"""Lowering families of ``ops/sorting.py``: sort/argsort/topk by ranks, and the axis gather
(pick, ``_gather_axis``) and its scatter.

A sort step is one kernel with a thread per element: its rank is the number of elements of its
row that come before it (smaller, or equal and earlier: the stable order numpy's reference
uses), and it writes itself at that rank (if below k for topk). Quadratic in the row length,
with no scratch memory and no synchronisation; rows of sort/topk in models are short.
"""
from __future__ import annotations

from math import prod

import numpy as np

from ..attrs import Attrs
from .actions import Fill, StepCtx, family, launch
from .codegen import grid_stride_kernel
from .kernels_layout import C_TYPES


def _row_geometry(shape: tuple, axis) -> tuple[int, int, int]:
    if axis is None:  # the flattened array is one row
        return 1, prod(shape), 1
    ax = axis % len(shape)
    return prod(shape[:ax]), shape[ax], prod(shape[ax + 1:])


def _topk_k(a: Attrs, n: int) -> int:
    return n if a["k"] <= 0 else a["k"]


@family("rank_sort")
def _rank_sort(ctx: StepCtx, p: dict) -> list:
    """``p['mode']``: value (sort), indices (argsort) or topk (ret_typ from the attrs)."""
    a = ctx.attrs
    outer, n, inner = _row_geometry(ctx.in_shapes[0], a["axis"])
    kind = a["ret_typ"] if p["mode"] == "topk" else p["mode"]
    k = _topk_k(a, n) if p["mode"] == "topk" else n
    before = "w < v" if a["is_ascend"] else "w > v"
    body = (f"        const long long in = i % {inner}LL, r = (i / {inner}LL) % {n}LL;\n"
            f"        const long long o = i / {n * inner}LL, base = o * {n * inner}LL + in;\n"
            "        const float v = x[i];\n        long long rank = 0;\n"
            f"        for (long long j = 0; j < {n}LL; ++j) {{\n"
            f"            const float w = x[base + j * {inner}LL];\n"
            f"            rank += ({before}) || (w == v && j < r);\n        }}\n")
    at = f"(o * {k}LL + rank) * {inner}LL + in"
    if kind == "mask":
        body += f"        y0[i] = rank < {k}LL ? 1.f : 0.f;\n"
    else:
        body += f"        if (rank < {k}LL) {{\n"
        if kind in ("value", "both"):
            body += f"            y0[{at}] = v;\n"
        if kind == "indices":
            body += f"            y0[{at}] = (float)r;\n"
        if kind == "both":
            body += f"            y1[{at}] = (float)r;\n"
        body += "        }\n"
    outs = ctx.outs[:2] if kind == "both" else ctx.outs[:1]
    params = ", ".join([f"float* __restrict__ y{i}" for i in range(len(outs))]
                       + ["const float* __restrict__ x"])
    kern = grid_stride_kernel(f"rank_{kind}", f"{outer},{n},{inner},{k},{a['is_ascend']}",
                              params, body, n_ptr=len(outs) + 1)
    return [launch(ctx, kern, (*outs, ctx.ins[0]), prod(ctx.in_shapes[0]))]


@family("axis_gather")
def _axis_gather(ctx: StepCtx, p: dict) -> list:
    """Gather ``out[o, j, in] = data[o, idx[o, j, in], in]`` (pick: j has one value), or with
    ``p['scatter']`` its adjoint: zeros, then ``atomicAdd`` of each ograd element."""
    a = {**ctx.attrs, **{k: p[k] for k in ("axis", "mode") if k in p}}  # batch_take: fixed
    data = ctx.in_shapes[2] if p["scatter"] else ctx.in_shapes[0]
    outer, n, inner = _row_geometry(data, a["axis"])
    m = prod(ctx.in_shapes[1]) // max(1, outer * inner)  # index entries per row
    wrap = a["mode"] == "wrap"
    # the index input is read in its own type: float32, or integer labels (INDEX_INPUTS)
    idx_t = C_TYPES[np.dtype(ctx.dtypes[1]).name]
    key = f"{outer},{n},{inner},{m},{wrap}" + ("" if idx_t == "float" else f",{idx_t}")
    idx = (f"long long k = (long long)raw % {n}LL; if (k < 0) k += {n}LL;" if wrap else
           f"long long k = (long long)raw; k = k < 0 ? 0 : (k > {n - 1} ? {n - 1} : k);")
    body = (f"        const long long in = i % {inner}LL, o = i / {m * inner}LL;\n"
            f"        const {idx_t} raw = idx[i];\n        {idx}\n"
            f"        const long long at = (o * {n}LL + k) * {inner}LL + in;\n")
    if p["scatter"]:
        body += "        atomicAdd(&y[at], g[i]);\n"
        params = ("float* __restrict__ y, const float* __restrict__ g, "
                  f"const {idx_t}* __restrict__ idx")
        kern = grid_stride_kernel("scatter_axis", key, params, body, n_ptr=3)
        return [Fill(ctx.outs[0], 0.0, prod(data)),
                launch(ctx, kern, (ctx.outs[0], ctx.ins[0], ctx.ins[1]), prod(ctx.in_shapes[1]))]
    body += "        y[i] = x[at];\n"
    params = f"float* __restrict__ y, const float* __restrict__ x, const {idx_t}* __restrict__ idx"
    kern = grid_stride_kernel("gather_axis", key, params, body, n_ptr=3)
    return [launch(ctx, kern, (ctx.outs[0], ctx.ins[0], ctx.ins[1]), prod(ctx.in_shapes[1]))]
