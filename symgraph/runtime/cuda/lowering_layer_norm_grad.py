"""Lowering family ``layer_norm_backward``: LayerNorm's gradient op
(``ops/layer_norm_grad.py``) as one kernel (``kernels_layer_norm_grad``)."""
from __future__ import annotations

from ...compiler.ops.layer_norm_grad import layer_norm_view
from .actions import Kernel, StepCtx, family
from .kernels_layer_norm_grad import render_layer_norm_backward
from .kernels_row_norm import block_for


@family("layer_norm_backward")
def _layer_norm_backward(ctx: StepCtx, p: dict) -> list:
    """One launch: a block per row (grid-stride), at most one block per SM, so the last block's
    sum over the blocks' partials stays short; the partials are scratch, the count of blocks
    done is program state (zero, and left zero by the last block)."""
    view = layer_norm_view(ctx.attrs, ctx.in_shapes[1])
    outer, count, inner = view.dims
    block = block_for(view)
    per = -(-count // block)  # at most 16: the op's rows are at most MAX_ROW values
    grid = max(1, min(outer * inner, ctx.sm_count))
    kern = render_layer_norm_backward(outer, count, inner, per, ctx.dt(ctx.ins[1]),
                                      ctx.dt(ctx.ins[2]), ctx.dt(ctx.ins[3]))
    part = ctx.new_array(2 * grid * count, "float32")
    done = ctx.new_state(4)
    return [Kernel(kern, grid, block, (*ctx.outs, part, done, *ctx.ins), outer * inner)]
