"""Lowering family ``layer_norm_backward``: LayerNorm's gradient op
(``ops/layer_norm_grad.py``) as one kernel (``kernels_layer_norm_grad``)."""
from __future__ import annotations

from ...compiler.ops.layer_norm_grad import layer_norm_view
from .actions import Kernel, StepCtx, family
from .kernels_layer_norm_grad import (FOLD_WARPS, WARP_ROW, render_layer_norm_backward,
                                      render_layer_norm_backward_warps, render_layer_norm_fold)
from .kernels_row_norm import block_for

WARPS = 8  # rows a block of the warp-per-row kernel works on at once


@family("layer_norm_backward")
def _layer_norm_backward(ctx: StepCtx, p: dict) -> list:
    """Rows of up to ``WARP_ROW`` values: a warp per row, then a fold of the blocks' partials
    (two launches). Longer rows: one launch, a block per row (grid-stride), at most one block
    per SM, so the last block's sum over the blocks' partials stays short; the count of blocks
    done is program state (zero, and left zero by the last block). Partials are scratch."""
    view = layer_norm_view(ctx.attrs, ctx.in_shapes[1])
    outer, count, inner = view.dims
    types = ctx.dt(ctx.ins[1]), ctx.dt(ctx.ins[2]), ctx.dt(ctx.ins[3])
    dx, dgamma, dbeta = ctx.outs
    if count <= WARP_ROW:  # a row per warp, 8 warps a block, two blocks per SM; then the fold
        grid = max(1, min(-(-outer * inner // WARPS), 2 * ctx.sm_count))
        part = ctx.new_array(2 * grid * count, "float32")
        rows = render_layer_norm_backward_warps(outer, count, inner, grid, *types)
        fold = render_layer_norm_fold(count, grid, types[1])
        return [Kernel(rows, grid, WARPS * 32, (dx, part, *ctx.ins), outer * inner),
                Kernel(fold, -(-count // 32), FOLD_WARPS * 32, (dgamma, dbeta, part), count)]
    block = block_for(view)
    per = -(-count // block)  # at most 16: the op's rows are at most MAX_ROW values
    grid = max(1, min(outer * inner, ctx.sm_count))
    kern = render_layer_norm_backward(outer, count, inner, per, *types)
    part = ctx.new_array(2 * grid * count, "float32")
    done = ctx.new_state(4)
    return [Kernel(kern, grid, block, (*ctx.outs, part, done, *ctx.ins), outer * inner)]
