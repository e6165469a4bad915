"""Lowering family ``row_norm``: LayerNorm, GroupNorm, InstanceNorm, L2Normalization and
moments (``ops/norm_layer.py``, ``ops/norm_l2.py``) as one kernel each
(``kernels_row_norm.render_row_norm``: a block per row of the op's ``RowView``); family
``layer_norm_backward``: LayerNorm's gradient op as one kernel (``kernels_layer_norm_grad``).

The op's lowering data names the kind (``standardize``, ``l2``, ``moments``), the function
giving its view of the data, and for ``standardize`` which statistic output 2 holds (``std`` or
``var``). Narrow data is loaded narrow and summed in float; gradients are registered ops, so
they lower through their own families.
"""
from __future__ import annotations

from math import prod

from ...compiler.ops.layer_norm_grad import layer_norm_view
from .actions import Kernel, StepCtx, family
from .kernels_layer_norm_grad import render_layer_norm_backward
from .kernels_row_norm import block_for, render_row_norm


@family("row_norm")
def _row_norm(ctx: StepCtx, p: dict) -> list:
    """One launch: a block per row, about eight rows' blocks per SM resident."""
    view = p["view"](ctx.attrs, ctx.in_shapes[0])
    kind = p["kind"]
    eps = ctx.attrs.get("eps", 0.0)
    p_t = ctx.dt(ctx.ins[1]) if kind == "standardize" else ""
    stat = ctx.outs[0] if kind == "moments" else ctx.outs[1]
    kern = render_row_norm(view, kind, eps, p.get("second", "std"), ctx.dt(ctx.ins[0]),
                           ctx.dt(stat), p_t)
    block = block_for(view)
    grid = max(1, min(view.rows, ctx.sm_count * (2048 // block)))
    # every output, then every input: the kernel's [y,] s1[, s2], x[, gamma, beta]
    return [Kernel(kern, grid, block, tuple(ctx.outs) + tuple(ctx.ins), prod(ctx.in_shapes[0]))]


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
