"""Lowering of the layout ops that are not strided views (``ops/layout.py``): pad and its
gradient, the gradients of tile / repeat, and Cast.

* ``pad``: one gather kernel; each output coordinate maps to a source coordinate per axis
  (constant: outside -> the constant; edge: clamped; reflect: mirrored without the edge).
* ``pad_backward``: the adjoint, one *fold* kernel per padded axis (the numpy reference folds the
  same way): each kept cell sums its own value and the padded cells that copied it.
* ``sum_copies``: tile and repeat outputs are ``x`` broadcast along copy axes of a split shape
  (the op's ``split`` data, shared with its numpy reference), so their gradient is one reduction.
* ``cast``: an elementwise conversion between C types (float16 and bfloat16 through float).
"""
from __future__ import annotations

from math import prod
from typing import Callable

import numpy as np

from .actions import Copy, Host, StepCtx, family, launch
from .codegen import C_TYPES
from .kernels_layout import Pairs, render_cast, render_pad, render_pad_fold
from .lowering_reduce import reduce_actions


@family("pad")
def _pad(ctx: StepCtx, p: dict) -> list:
    """y = x padded; ``p['pairs'](attrs, shape)`` is the op's own (before, after) per axis."""
    a, x, y = ctx.attrs, ctx.in_shapes[0], ctx.out_shapes[0]
    pairs: Pairs = p["pairs"](a, x)
    kern = render_pad(x, y, pairs, a["mode"], a["constant_value"], ctx.storage)
    return [launch(ctx, kern, (ctx.outs[0], ctx.ins[0]), prod(y))]


@family("pad_backward")
def _pad_backward(ctx: StepCtx, p: dict) -> list:
    """Inputs (ograd, data): fold each padded axis in turn, through scratch, into the output."""
    a, x = ctx.attrs, ctx.in_shapes[1]
    pairs: Pairs = p["pairs"](a, x)
    folds = [d for d, pr in enumerate(pairs) if pr != (0, 0)]
    dt = ctx.storage
    if not folds:
        return [Copy(ctx.outs[0], ctx.ins[0], ctx.dtype_of(ctx.outs[0]).itemsize * prod(x))]
    shape, src, acts = list(ctx.in_shapes[0]), ctx.ins[0], []
    for k, d in enumerate(folds):
        shape[d] = x[d]
        dst = ctx.outs[0] if k == len(folds) - 1 else ctx.new_array(prod(shape), dt)
        kern = render_pad_fold(prod(shape[:d]), x[d], prod(shape[d + 1:]), *pairs[d], a["mode"],
                               dt)
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


@family("cast")
def _cast(ctx: StepCtx, p: dict) -> list:
    """Output = input 0 converted to the output's dtype, as C converts (numpy's astype: floats
    truncate toward zero, bool is ``!= 0``); float16 and bfloat16 go through float."""
    src_t, dst_t = np.dtype(ctx.dtypes[0]).name, np.dtype(ctx.dtypes[-1]).name
    n = prod(ctx.out_shapes[0])
    if src_t == dst_t:
        return [Copy(ctx.outs[0], ctx.ins[0], n * ctx.dtype_of(ctx.outs[0]).itemsize)] if n else []
    if src_t not in C_TYPES or dst_t not in C_TYPES:
        return [Host(ctx.step)]
    kern = render_cast(src_t, dst_t)
    return [launch(ctx, kern, (ctx.outs[0], ctx.ins[0]), n)] if n else []
