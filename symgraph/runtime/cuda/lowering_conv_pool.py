"""Lowering of ``_conv_act_pool`` and ``_backward_conv_act_pool`` (``ops/conv_act_pool.py``):
one generated kernel forward, two for the weight and bias gradients (kernels_conv_pool). The
geometry is the node's window (``conv_act_pool.cap_window``), passed to the templates as is."""
from __future__ import annotations

from ...compiler.ops.conv_act_pool import cap_window
from .codegen import THREADS, grid_for
from .kernels_conv_pool import (chunks_for, filters_per_thread, render_forward,
                                render_param_grad, render_param_grad_sum)
from .actions import Kernel, StepCtx, family, launch


@family("conv_act_pool")
def _forward(ctx: StepCtx, p: dict) -> list:
    """Inputs (data, weight[, bias]) -> the pooled map."""
    g = cap_window(ctx.attrs, ctx.in_shapes[0])
    fpt = filters_per_thread(g, ctx.sm_count)
    n = g.n * g.windows * (g.filters // fpt)
    return [Kernel(render_forward(g, fpt, ctx.dt(ctx.ins[-1])), grid_for(n, ctx.sm_count),
                   THREADS, (ctx.outs[0],) + tuple(ctx.ins), n)]


@family("conv_act_pool_backward")
def _backward(ctx: StepCtx, p: dict) -> list:
    """Inputs (ograd, data, weight[, bias]) -> (weight gradient, bias gradient)."""
    g = cap_window(ctx.attrs, ctx.in_shapes[1])
    dtype = ctx.dt(ctx.ins[-1])
    chunks = chunks_for(g, ctx.sm_count)
    units, k1 = g.filters * chunks, g.field + 1
    part = ctx.new_array(units * k1, "float32")  # partial sums stay in float
    return [Kernel(render_param_grad(g, chunks, dtype), units, THREADS, (part,) + tuple(ctx.ins),
                   units),
            launch(ctx, render_param_grad_sum(g, chunks, dtype),
                   (ctx.outs[0], ctx.outs[1], part), g.filters * k1)]
