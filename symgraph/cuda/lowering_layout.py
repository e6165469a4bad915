"""Lowering of the layout ops that are not strided views (``ops/layout.py``): pad and its
gradient, the gradients of tile / repeat, and Cast.

* ``pad``: one gather kernel; each output coordinate maps to a source coordinate per axis
  (constant: outside -> the constant; edge: clamped; reflect: mirrored without the edge).
* ``pad_backward``: the adjoint, one *fold* kernel per padded axis (the numpy reference folds the
  same way): each kept cell sums its own value and the padded cells that copied it.
* ``sum_copies``: tile and repeat outputs are ``x`` broadcast along copy axes of a split shape
  (the op's ``split`` data, shared with its numpy reference), so their gradient is one reduction.
* ``cast``: an elementwise conversion between C types (float16 through float).
"""
from __future__ import annotations

from math import prod
from typing import Callable

import numpy as np

from .codegen import Rendered, c_float, grid_stride_kernel
from .actions import Copy, Host, StepCtx, family, launch
from .lowering_reduce import reduce_actions
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


@family("pad")
def _pad(ctx: StepCtx, p: dict) -> list:
    """y = x padded; ``p['pairs'](attrs, shape)`` is the op's own (before, after) per axis."""
    a, x, y = ctx.attrs, ctx.in_shapes[0], ctx.out_shapes[0]
    pairs: Pairs = p["pairs"](a, x)
    idx = ["        long long r = i, src = 0, c, s;", "        bool inside = true;"]
    for d in range(len(x) - 1, -1, -1):
        idx.append(f"        c = r % {y[d]}LL; r /= {y[d]}LL; "
                   + pad_source_index(a["mode"], x[d], *pairs[d])
                   + f" src += s * {prod(x[d + 1:])}LL;")
    body = "\n".join(idx) + f"\n        y[i] = inside ? x[src] : {c_float(a['constant_value'])};\n"
    kern = grid_stride_kernel(f"pad_{a['mode']}", f"{x}{pairs}{a['mode']}{a['constant_value']}",
                   "float* __restrict__ y, const float* __restrict__ x", body)
    return [launch(ctx, kern, (ctx.outs[0], ctx.ins[0]), prod(y))]


def render_pad_fold(outer: int, n: int, inner: int, before: int, after: int,
                    mode: str) -> Rendered:
    """y(outer, n, inner) = the gradient of one padded axis (outer, before+n+after, inner)
    folded back: each cell's own entry plus the padded entries that were copies of it."""
    m = before + n + after
    lines = [f"        const long long in = i % {inner}LL, c = (i / {inner}LL) % {n}LL;",
             f"        const float* col = x + (i / {inner * n}LL) * {m * inner}LL + in;",
             f"        float acc = col[(c + {before}LL) * {inner}LL];"]
    if mode == "edge" and before:  # the head copies cell 0
        lines.append(f"        if (c == 0) for (int k = 0; k < {before}; ++k) "
                     f"acc += col[k * {inner}LL];")
    if mode == "edge" and after:  # the tail copies cell n-1
        lines.append(f"        if (c == {n - 1}) for (int k = {before + n}; k < {m}; ++k) "
                     f"acc += col[k * {inner}LL];")
    if mode == "reflect" and before:  # head entry before-c mirrors cell c
        lines.append(f"        if (c >= 1 && c <= {before}) "
                     f"acc += col[({before}LL - c) * {inner}LL];")
    if mode == "reflect" and after:  # tail entry before+2n-2-c mirrors cell c
        lines.append(f"        if (c >= {n - 1 - after} && c <= {n - 2}) "
                     f"acc += col[({before + 2 * n - 2}LL - c) * {inner}LL];")
    body = "\n".join(lines) + "\n        y[i] = acc;\n"
    return grid_stride_kernel(f"pad_fold_{mode}", f"{outer},{n},{inner},{before},{after},{mode}",
                   "float* __restrict__ y, const float* __restrict__ x", body)


@family("pad_backward")
def _pad_backward(ctx: StepCtx, p: dict) -> list:
    """Inputs (ograd, data): fold each padded axis in turn, through scratch, into the output."""
    a, x = ctx.attrs, ctx.in_shapes[1]
    pairs: Pairs = p["pairs"](a, x)
    folds = [d for d, pr in enumerate(pairs) if pr != (0, 0)]
    if not folds:
        return [Copy(ctx.outs[0], ctx.ins[0], 4 * prod(x))]
    shape, src, acts = list(ctx.in_shapes[0]), ctx.ins[0], []
    for k, d in enumerate(folds):
        shape[d] = x[d]
        dst = ctx.outs[0] if k == len(folds) - 1 else ctx.new_scratch(4 * prod(shape))
        kern = render_pad_fold(prod(shape[:d]), x[d], prod(shape[d + 1:]), *pairs[d], a["mode"])
        acts.append(launch(ctx, kern, (dst, src), prod(shape)))
        src = dst
    return acts


@family("sum_copies")
def _sum_copies(ctx: StepCtx, p: dict) -> list:
    """Inputs (ograd, data): ograd viewed as ``p['split'](attrs, data shape)`` = (shape, copy
    axes), summed over the copy axes."""
    split: Callable = p["split"]
    shape, axes = split(ctx.attrs, ctx.in_shapes[1])
    return reduce_actions(ctx, tuple(shape), list(axes), "sum")


C_TYPES = {"float32": "float", "float64": "double", "float16": "__half", "bool": "bool",
           "int8": "signed char", "uint8": "unsigned char", "int16": "short",
           "uint16": "unsigned short", "int32": "int", "uint32": "unsigned int",
           "int64": "long long", "uint64": "unsigned long long"}
FP16_HEADER = ("cuda_fp16", "#include <cuda_fp16.h>\n")


@family("cast")
def _cast(ctx: StepCtx, p: dict) -> list:
    """Output = input 0 converted to the output's dtype, as C converts (numpy's astype: floats
    truncate toward zero, bool is ``!= 0``); float16 goes through float, its only conversion."""
    src_t, dst_t = np.dtype(ctx.dtypes[0]).name, np.dtype(ctx.dtypes[-1]).name
    n = prod(ctx.out_shapes[0])
    if src_t == dst_t:
        return [Copy(ctx.outs[0], ctx.ins[0], n * np.dtype(dst_t).itemsize)] if n else []
    if src_t not in C_TYPES or dst_t not in C_TYPES:
        return [Host(ctx.step)]
    half = "float16" in (src_t, dst_t)
    value = "(float)x[i]" if half else "x[i]"
    kern = grid_stride_kernel(f"cast_{src_t}_to_{dst_t}", f"{src_t},{dst_t}",
                   f"{C_TYPES[dst_t]}* __restrict__ y, const {C_TYPES[src_t]}* __restrict__ x",
                   f"        y[i] = ({C_TYPES[dst_t]}){value};\n",
                   helpers=(FP16_HEADER,) if half else ())
    return [launch(ctx, kern, (ctx.outs[0], ctx.ins[0]), n)] if n else []
