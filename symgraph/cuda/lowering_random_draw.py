"""The samplers' GPU lowering (family ``random_draw``): ``_random_uniform``/``_random_normal``
and their ``_like`` forms (parameters from attributes) and ``_sample_uniform``/
``_sample_normal`` (parameters from arrays, one per ``inner`` samples), one Philox kernel each
(``kernels_random_draw``). The key is refreshed from ``RunCtx.rng`` before every run, as
Dropout's, so ``sg.random.seed`` repeats the draws (the GPU's, not numpy's)."""
from __future__ import annotations

from math import prod

from .actions import Kernel, StepCtx, family
from .codegen import THREADS, grid_for
from .kernels_random_draw import render_random_draw

ATTRS = {"uniform": ("low", "high"), "normal": ("loc", "scale")}


@family("random_draw")
def _random_draw(ctx: StepCtx, p: dict) -> list:
    """``p``: ``law`` and ``source`` ("attrs": parameters from attributes; "inputs": from the
    parameter arrays, the data input of a ``_like`` op not being one)."""
    law, out = p["law"], ctx.outs[0]
    n = prod(ctx.out_shapes[0])
    if not n:
        return []
    if p["source"] == "attrs":
        params: list = [float(ctx.attrs[k]) for k in ATTRS[law]]
        arrays: list = []
        inner = 1
    else:
        params, arrays = [0, 1], list(ctx.ins)
        inner = n // max(prod(ctx.in_shapes[0]), 1)
    kern = render_random_draw(law, n, inner, params, ctx.dt(out))
    return [Kernel(kern, grid_for(n, ctx.sm_count), THREADS,
                   (out, *arrays, ctx.new_key()), n)]
