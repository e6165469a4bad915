"""Lowering family ``ctc`` of ``CTCLoss`` (``ops/ctc.py``): one kernel
(``kernels_ctc.render_ctc``), a block per sequence, writing the loss and the hidden gradient
output as the numpy reference does, with its alpha, beta and label links in scratch."""
from __future__ import annotations

from .actions import Kernel, StepCtx, family
from .kernels_ctc import block_for, render_ctc, scratch_counts


@family("ctc")
def _ctc(ctx: StepCtx, p: dict) -> list:
    """Inputs (data, label[, data_lengths][, label_lengths]), outputs (loss, grad)."""
    a = ctx.attrs
    t, n, c = ctx.in_shapes[0]
    label_len = ctx.in_shapes[1][1]
    lengths = iter(ctx.ins[2:])
    steps = next(lengths) if a["use_data_lengths"] else None
    lens = next(lengths) if a["use_label_lengths"] else None
    kern = render_ctc(t, n, c, label_len, a["blank_label"] == "first", ctx.dt(ctx.ins[0]),
                      ctx.dt(ctx.ins[1]), None if steps is None else ctx.dt(steps),
                      None if lens is None else ctx.dt(lens))
    scratch = tuple(ctx.new_array(count, dt) for count, dt in scratch_counts(t, n, c, label_len))
    grid = max(1, min(n, ctx.sm_count * 8))
    return [Kernel(kern, grid, block_for(label_len, c), tuple(ctx.outs) + tuple(ctx.ins)
                   + scratch, n)]
