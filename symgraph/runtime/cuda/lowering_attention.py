"""Lowering families of attention's head-layout ops (``ops/attention_heads.py``):
``_batch_dot_heads`` as a :class:`HeadGemm` (the heads addressed inside (B, T, H, D) arrays,
no transpose; issued as :func:`head_calls` says: strided-batched cuBLAS calls, or one call over
arrays of matrix pointers), and ``_softmax_backward`` as one row kernel
(``kernels_attention``)."""
from __future__ import annotations

from math import prod
from typing import Optional

import numpy as np

from ...compiler.ops.attention_heads import batch_view, gemm_sizes
from .actions import Gemm, HeadGemm, Kernel, StepCtx, family
from .codegen import THREADS
from .kernels_attention import launch_shape, render_softmax_backward

Shape = tuple[int, ...]
# A strided-batched call: the first matrix's address in A, B and C, the stride in elements
# between consecutive matrices of each, and how many matrices.
Strided = tuple[tuple[int, int, int], tuple[int, int, int], int]


def head_addressing(shape: Shape, split: bool, heads: int) -> tuple[int, tuple[int, int]]:
    """(row stride, (step between batches b, step between heads h)) in elements of an operand
    that is split (B, rows, H, cols) or plain (B*H, rows, cols)."""
    _, rows, cols = batch_view(shape, split, heads, "operand")
    if split:
        return heads * cols, (rows * heads * cols, cols)
    return cols, (heads * rows * cols, rows * cols)


@family("batch_dot_heads")
def _batch_dot_heads(ctx: StepCtx, p: dict) -> list:
    """alpha op(A) op(B) over B x H matrices, each operand and the output in its layout."""
    a, h = ctx.attrs, ctx.attrs["heads"]
    sa, sb = ctx.in_shapes
    g, m, n, k = gemm_sizes(a, sa, sb)
    la, st_a = head_addressing(sa, a["split_lhs"], h)
    lb, st_b = head_addressing(sb, a["split_rhs"], h)
    lc, st_c = head_addressing(ctx.out_shapes[0], a["split_out"], h)
    gemm = Gemm(a["transpose_a"], a["transpose_b"], m, n, k, ctx.ins[0], ctx.ins[1],
                ctx.outs[0], batch=g, dtype=ctx.storage)
    return [HeadGemm(gemm, (la, lb, lc), (st_a, st_b, st_c), h, float(a["alpha"]))]


@family("softmax_backward")
def _softmax_backward(ctx: StepCtx, p: dict) -> list:
    """dx = y * (dy - sum(dy * y)) (or log_softmax's dy - exp(y) * sum(dy)) along the last
    axis: a warp a row, one launch."""
    shape = ctx.in_shapes[0]
    k = shape[-1]
    rows = prod(shape[:-1])
    kern = render_softmax_backward(ctx.stem, rows, k, ctx.dt(ctx.ins[0]), ctx.dt(ctx.ins[1]),
                                   ctx.dt(ctx.outs[0]), bool(ctx.attrs.get("log")))
    grid, block = launch_shape(rows, k, ctx.sm_count, THREADS)
    return [Kernel(kern, grid, block, (ctx.outs[0], ctx.ins[0], ctx.ins[1]), prod(shape))]


def head_pointers(act: HeadGemm, bases: tuple[int, int, int], itemsize: int) -> list[np.ndarray]:
    """The three arrays of matrix addresses (b-major) for buffers at ``bases``."""
    b = np.arange(act.outer, dtype=np.uint64)[:, None]
    h = np.arange(act.heads, dtype=np.uint64)[None, :]
    return [(np.uint64(base) + (b * np.uint64(sb) + h * np.uint64(sh)) * np.uint64(itemsize))
            .ravel() for base, (sb, sh) in zip(bases, act.steps)]


def head_calls(act: HeadGemm, bases: tuple[int, int, int], itemsize: int,
               loop: bool) -> Optional[list[Strided]]:
    """Strided-batched calls reaching every matrix of ``act``: one when each operand's
    matrices lie one stride apart; with ``loop`` (``SYMGRAPH_HEAD_GEMM=loop``) one per head
    over the batch rows, or one per batch row when those are fewer; otherwise None (one call
    over the arrays of :func:`head_pointers`)."""
    if act.heads == 1:
        return [(bases, tuple(sb for sb, _ in act.steps), act.outer)]
    if all(sb == act.heads * sh for sb, sh in act.steps):
        return [(bases, tuple(sh for _, sh in act.steps), act.outer * act.heads)]
    if not loop:
        return None
    inner, count, outer_level = (1, act.outer, range(act.heads)) if act.heads <= act.outer \
        else (0, act.heads, range(act.outer))
    return [(tuple(base + i * st[inner] * itemsize for base, st in zip(bases, act.steps)),
             tuple(st[1 - inner] for st in act.steps), count) for i in outer_level]
