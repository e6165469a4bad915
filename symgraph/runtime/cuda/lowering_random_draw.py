"""The samplers' GPU lowering (``kernels_random_draw``): family ``random_draw`` for every law of
``ops/_random_laws`` (``_random_<law>`` and ``_random_<law>_like``: parameters from
attributes; ``_sample_<law>``: from the parameter arrays, one per ``inner`` samples), family
``multinomial`` (``_sample_multinomial``) and family ``shuffle``. Each step takes a key that
the backend refreshes from ``RunCtx.rng`` before every run, as Dropout's, so
``sg.random.seed`` repeats the draws (the GPU's, not numpy's: another generator, same laws).
"""
from __future__ import annotations

from math import prod

import numpy as np

from ...compiler.ops._random_laws import LAWS
from .actions import Copy, Kernel, StepCtx, family, launch
from .codegen import THREADS, grid_for
from .kernels_random_draw import (render_multinomial, render_random_draw, render_shuffle_gather,
                                  render_shuffle_keys, render_shuffle_rank)


@family("random_draw")
def _random_draw(ctx: StepCtx, p: dict) -> list:
    """``p``: ``law`` and ``source`` ("attrs": parameters from attributes; "inputs": from the
    parameter arrays, the data input of a ``_like`` op not being one)."""
    law, out = p["law"], ctx.outs[0]
    n = prod(ctx.out_shapes[0])
    if not n:
        return []
    if p["source"] == "attrs":
        kern = render_random_draw(law, n, 1, [ctx.attrs[k] for k, *_ in LAWS[law].params],
                                  dtype=ctx.dt(out))
        arrays: list = []
    else:
        arrays = list(ctx.ins)
        inner = n // max(prod(ctx.in_shapes[0]), 1)
        kern = render_random_draw(law, n, inner, None, [ctx.dt(r) for r in arrays], ctx.dt(out))
    return [Kernel(kern, grid_for(n, ctx.sm_count), THREADS, (out, *arrays, ctx.new_key()), n)]


@family("multinomial")
def _multinomial(ctx: StepCtx, p: dict) -> list:
    """One thread per draw: rows of ``data``'s last axis, ``prod(shape)`` draws each."""
    n = prod(ctx.out_shapes[0])
    rows = prod(ctx.in_shapes[0][:-1])
    if not n or not rows:
        return []
    kern = render_multinomial(ctx.in_shapes[0][-1], n // rows, [ctx.dt(o) for o in ctx.outs],
                              ctx.dt(ctx.ins[0]))
    return [launch(ctx, kern, (*ctx.outs, ctx.ins[0], ctx.new_key()), n)]


@family("shuffle")
def _shuffle(ctx: StepCtx, p: dict) -> list:
    """A random key per row of the first axis, the permutation that sorts them, the gather of
    the rows in that order (a 0-d array is copied)."""
    shape, (x,), (y,) = ctx.in_shapes[0], ctx.ins, ctx.outs
    size = prod(shape)
    if not size:
        return []
    if len(shape) == 0:
        return [Copy(y, x, ctx.dtype_of(x).itemsize)]
    rows = shape[0]
    keys, perm = ctx.new_array(rows, np.uint64), ctx.new_array(rows, np.int64)
    return [launch(ctx, render_shuffle_keys(), (keys, ctx.new_key()), rows),
            launch(ctx, render_shuffle_rank(rows), (perm, keys), rows),
            launch(ctx, render_shuffle_gather(size // rows, ctx.dt(y)), (y, x, perm), size)]
