"""BatchNorm over a channel-last (rows, channels) matrix, for ``lowering_norm``'s training and
backward families: one cooperative launch per direction (``kernels_bn_column``), with its float
partials in scratch and its grid barrier's word in program state.
"""
from __future__ import annotations

from typing import Callable, Optional

from .actions import Kernel, StepCtx
from .codegen import Rendered
from .kernels_bn_column import COOP_THREADS, render_bn_column_backward, render_bn_column_train
from .lowering_fused import Epilogue


def column_grid(ctx: StepCtx, rows: int, cols: int) -> tuple[int, int]:
    """(row chunks, blocks) of a one-kernel channel-last BatchNorm: about one unit per SM, at
    least eight elements per thread, at most one block per SM (a cooperative launch: half of
    what every SM can hold, so it fits beside other work). One unit per SM
    measured faster than two (H100, bf16: a 16-channel layer's forward 11.7 against 14.1 us;
    32 channels 8.1 against 9.0): a cheaper barrier, and half the partials for each block to
    sum after it."""
    lanes = min(cols, COOP_THREADS)
    tiles = -(-cols // lanes)
    chunks = max(1, min(-(-ctx.sm_count // tiles), rows * lanes // (COOP_THREADS * 8)))
    return chunks, min(tiles * chunks, ctx.sm_count)


def _launch(ctx: StepCtx, rows: int, cols: int, render: Callable[[int], Rendered], outs: tuple,
            ins: tuple) -> list:
    """One launch of ``render(chunks)``: ``outs``, its float partials (scratch), its barrier's
    word (program state), ``ins``."""
    chunks, grid = column_grid(ctx, rows, cols)
    part = ctx.new_array(2 * chunks * cols, "float32")
    bar = ctx.new_state(4)
    return [Kernel(render(chunks), grid, COOP_THREADS, (*outs, part, bar, *ins), grid,
                   cooperative=True)]


def column_train(ctx: StepCtx, rows: int, cols: int, epi: Optional[Epilogue]) -> list:
    """BatchNorm's training forward (statistics, moving statistics, the normalised output,
    ``epi`` fused into its store) of a step whose data is (rows, cols) with channels last."""
    a, (x, gamma) = ctx.attrs, ctx.ins[:2]
    dt, st = ctx.dt(x), ctx.dt(ctx.outs[1])  # narrow data keeps float32 statistics
    operands = epi.operands if epi is not None else ()
    return _launch(ctx, rows, cols, lambda chunks: render_bn_column_train(
        rows, cols, chunks, a["eps"], a["momentum"], a["fix_gamma"], dt, st, ctx.dt(gamma),
        epi.expr if epi is not None else None, len(operands)),
        ctx.outs, tuple(ctx.ins) + tuple(operands))


def column_backward(ctx: StepCtx, rows: int, cols: int) -> list:
    """BatchNorm's (dx, dgamma, dbeta) of a step whose data is (rows, cols), channels last."""
    a = ctx.attrs
    _, data, gamma, mean, _ = ctx.ins
    return _launch(ctx, rows, cols, lambda chunks: render_bn_column_backward(
        rows, cols, chunks, a["eps"], a["fix_gamma"], a["use_global_stats"], ctx.dt(data),
        ctx.dt(mean), ctx.dt(gamma), ctx.dt(ctx.outs[1])), tuple(ctx.outs), tuple(ctx.ins))
