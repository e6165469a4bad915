"""The densities' GPU lowering (``ops/random_pdf``): family ``leading_elementwise``, one
elementwise kernel of the op's formula whose parameter inputs span the leading axes of input 0
(shape P of its P + S), and family ``dirichlet_pdf``, one thread per output element summing
the last axis (``kernels_random_pdf``).
"""
from __future__ import annotations

from math import prod

from ...core.expr import inp
from .actions import StepCtx, family, launch
from .kernels_random_pdf import render_dirichlet_pdf
from .lowering_elementwise import elementwise_actions


@family("leading_elementwise")
def _leading_elementwise(ctx: StepCtx, p: dict) -> list:
    """``p['formula'](attrs, x, *params)``: each input is read as its shape followed by ones
    up to the output's rank, so numpy-style broadcasting lines it up on the leading axes."""
    out = ctx.out_shapes[0]
    if not prod(out):
        return []
    shapes = [tuple(s) + (1,) * (len(out) - len(s)) for s in ctx.in_shapes]
    e = p["formula"](ctx.attrs, *(inp(i) for i in range(len(ctx.ins))))
    return elementwise_actions(ctx, ctx.stem, [e], shapes, ctx.ins, out, ctx.outs)


@family("dirichlet_pdf")
def _dirichlet_pdf(ctx: StepCtx, p: dict) -> list:
    """sample (P..., S..., K), alpha (P..., K) -> (P..., S...)."""
    n = prod(ctx.out_shapes[0])
    if not n:
        return []
    per_row = n // max(prod(ctx.in_shapes[1][:-1]), 1)
    kern = render_dirichlet_pdf(ctx.in_shapes[0][-1], per_row, ctx.attrs["is_log"],
                                *(ctx.dt(r) for r in (*ctx.ins, ctx.outs[0])))
    return [launch(ctx, kern, (ctx.outs[0], *ctx.ins), n)]
