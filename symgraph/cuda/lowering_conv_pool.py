"""Lowering of ``_conv_act_pool`` and ``_backward_conv_act_pool`` (``ops/conv_act_pool.py``):
one generated kernel forward, two for the weight and bias gradients (kernels_conv_pool)."""
from __future__ import annotations

from .codegen import THREADS, grid_for
from .kernels_conv_pool import (ConvPool, chunks_for, filters_per_thread, render_forward,
                                render_param_grad, render_param_grad_sum)
from .actions import Kernel, StepCtx, family
def geometry(ctx: StepCtx, x: tuple) -> ConvPool:
    """The :class:`ConvPool` of a step whose data has shape ``x`` (the op's own shape rules)."""
    from ..ops.conv import geometry as conv_geometry
    a = ctx.attrs
    g = conv_geometry(a)
    oh, ow = g.out(x[2:])
    wh, ww = a["pool_kernel"]
    return ConvPool(*x, *g.kernel, *g.stride, *g.pad, a["num_filter"], oh // wh, ow // ww,
                    wh, ww, a["act_type"], not a["no_bias"], dtype=ctx.dt(ctx.ins[-1]))


@family("conv_act_pool")
def _forward(ctx: StepCtx, p: dict) -> list:
    """Inputs (data, weight[, bias]) -> the pooled map."""
    g = geometry(ctx, ctx.in_shapes[0])
    fpt = filters_per_thread(g, ctx.sm_count)
    n = g.n * g.windows * (g.f // fpt)
    return [Kernel(render_forward(g, fpt), grid_for(n, ctx.sm_count), THREADS,
                   (ctx.outs[0],) + tuple(ctx.ins), n)]


@family("conv_act_pool_backward")
def _backward(ctx: StepCtx, p: dict) -> list:
    """Inputs (ograd, data, weight[, bias]) -> (weight gradient, bias gradient)."""
    g = geometry(ctx, ctx.in_shapes[1])
    chunks = chunks_for(g, ctx.sm_count)
    units, k1 = g.f * chunks, g.field + 1
    part = ctx.new_array(units * k1, "float32")  # partial sums stay in float
    return [Kernel(render_param_grad(g, chunks), units, THREADS, (part,) + tuple(ctx.ins), units),
            Kernel(render_param_grad_sum(g, chunks), grid_for(g.f * k1, ctx.sm_count), THREADS,
                   (ctx.outs[0], ctx.outs[1], part), g.f * k1)]
