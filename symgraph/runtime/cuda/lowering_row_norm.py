"""Lowering family ``row_norm``: LayerNorm, GroupNorm, InstanceNorm, L2Normalization and
moments (``ops/norm_layer.py``, ``ops/norm_l2.py``) as one kernel each
(``kernels_row_norm.render_row_norm``: a block per row of the op's ``RowView``).

The op's lowering data names the kind (``standardize``, ``l2``, ``moments``), the function
giving its view of the data, and for ``standardize`` which statistic output 2 holds (``std`` or
``var``). Narrow data is loaded narrow and summed in float; gradients are registered ops, so
they lower through their own families.
"""
from __future__ import annotations

from math import prod

from .actions import Kernel, StepCtx, family
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
