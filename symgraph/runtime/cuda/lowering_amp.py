"""Lowering family of AMP's ``amp_multicast``: one cast per input, through the ``cast`` family.

Each (input i, output i) pair is lowered as a one-input cast step would be, so the multicast
runs in every dtype the cast family does, and gets narrow kernels when the cast family does.
"""
from __future__ import annotations

from dataclasses import replace

from .actions import FAMILIES, StepCtx, family


@family("cast_each")
def _cast_each(ctx: StepCtx, p: dict) -> list:
    """Output i = input i converted to output i's dtype (a copy when the dtypes agree)."""
    n = len(ctx.ins)
    actions: list = []
    for i in range(n):
        pair = replace(ctx, in_shapes=[ctx.in_shapes[i]], out_shapes=[ctx.out_shapes[i]],
                       dtypes=[ctx.dtypes[i], ctx.dtypes[n + i]], ins=[ctx.ins[i]],
                       outs=[ctx.outs[i]])
        actions += FAMILIES["cast"](pair, {})
    return actions
