"""Random numbers on the GPU: Dropout's lowering, drawing its mask with the Philox-4x32-10
kernel of ``kernels_random``.

The key is a program buffer (``StepCtx.new_key``) that the backend refills from ``RunCtx.rng``
(``sg.random``) before every run: a replayed CUDA graph reads new keys and draws new masks, and
reseeding ``sg.random`` repeats them. The GPU mask is not numpy's mask (another
generator), only its distribution is the same.
"""
from __future__ import annotations

from math import prod

from ...core.expr import inp
from .codegen import THREADS, grid_for
from .actions import Copy, Fill, Kernel, StepCtx, Switch, family
from .kernels_random import render_dropout_mask
from .lowering_elementwise import elementwise_actions


@family("dropout")
def _dropout(ctx: StepCtx, p: dict) -> list:
    """Outputs (y, mask): in training (or ``mode='always'``) a fresh mask and y = x * mask, the
    mask broadcast along ``axes``; otherwise y = x and a mask of ones (the numpy reference)."""
    a, x, m = ctx.attrs, ctx.in_shapes[0], ctx.out_shapes[1]
    y, mask = ctx.outs
    infer = [Copy(y, ctx.ins[0], ctx.dtype_of(y).itemsize * prod(x)),
             Fill(mask, 1.0, prod(m), ctx.dt(mask))]
    if a["p"] == 0.0 or not prod(x):
        return infer
    n = prod(m)
    train = [Kernel(render_dropout_mask(n, a["p"], ctx.dt(mask)),
                    grid_for(-(-n // 4), ctx.sm_count),
                    THREADS, (mask, ctx.new_key()), n)]
    train += elementwise_actions(ctx, "dropout_apply", [inp(0) * inp(1)], [x, m],
                                 [ctx.ins[0], mask], x, [y])
    return train if a["mode"] == "always" else [Switch(tuple(train), tuple(infer))]
