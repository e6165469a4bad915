"""The weight gradient of a direct tensor-core convolution (templates in
``kernels_conv_mma_filter``): partial sums over blocks of pixels, then their sum."""
from __future__ import annotations

from math import prod

from ...compiler.ops.geometry import ConvWindow
from .actions import Kernel, Ref, StepCtx
from .kernels_conv_mma_filter import (FILTER_WARPS, SUM_GROUPS, filter_blocks, filter_partials,
                                      render_conv_mma_filter, render_filter_sum)

__all__ = ["filter_kernels"]


def filter_kernels(ctx: StepCtx, g: ConvWindow, a: Ref, b: Ref, out: Ref) -> tuple:
    """The two launches of the weight gradient ``out`` from ``a`` (the head gradient) and
    ``b`` (the data): float32 partial sums per block of pixels, then their sum in the
    storage dtype."""
    dt, pixels = ctx.storage, g.n * g.h * g.w
    count, blocks = prod(g.weight_shape), filter_blocks(g, ctx.sm_count)
    part = ctx.new_array(filter_partials(g, blocks), "float32")
    return (Kernel(render_conv_mma_filter(g, dt), blocks, 32 * FILTER_WARPS, (part, a, b),
                   pixels),
            Kernel(render_filter_sum(g, blocks, dt), -(-count // 32), 32 * SUM_GROUPS, (out, part),
                   count))
