"""Lowering family of ``_histogram`` (``ops/histogram.py``): a one-block setup kernel (bounds,
edges, zeroed counts) and a counting kernel of 64-bit atomic adds (``kernels_histogram``)."""
from __future__ import annotations

from math import prod

from .actions import Kernel, StepCtx, family, launch
from .codegen import THREADS
from .kernels_histogram import render_histogram_count, render_histogram_setup


@family("histogram")
def _histogram(ctx: StepCtx, p: dict) -> list:
    a, n = ctx.attrs, prod(ctx.in_shapes[0])
    counts, edges = ctx.outs
    bins = ctx.out_shapes[0][0]
    given = a["bin_cnt"] is None
    dt = ctx.dt(ctx.ins[0])
    bounds = ctx.new_array(2, "float64")
    edge_src = ctx.ins[1] if given else ctx.ins[0]  # unread without given edges
    span = tuple(a["range"]) if a["range"] else None
    args = (edges, counts, bounds, ctx.ins[0], edge_src)
    return [Kernel(render_histogram_setup(bins, given, span, dt), 1, THREADS, args, n),
            launch(ctx, render_histogram_count(bins, given, dt), args, n)]
