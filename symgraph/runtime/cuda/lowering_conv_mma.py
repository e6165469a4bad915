"""The direct tensor-core convolution kernels of a channels-last float16 / bfloat16 call
(templates in ``kernels_conv_mma``): the generated branch of its ``Choice`` where they fit
(``mma_fits``), in place of im2col + GEMM on channels-first copies (``lowering_conv``)."""
from __future__ import annotations

from math import prod
from typing import Optional

from ...compiler.ops.geometry import ConvWindow
from .actions import Kernel, Ref, StepCtx
from .kernels_conv_mma import WARPS, mma_blocks, mma_fits, render_conv_mma
from .kernels_conv_mma_filter import (FILTER_WARPS, SUM_GROUPS, filter_blocks, filter_partials,
                                      render_conv_mma_filter, render_filter_sum)
from .lowering_fused import Epilogue

__all__ = ["direct", "mma_fits"]


def direct(ctx: StepCtx, call: str, g: ConvWindow, a: Ref, b: Ref, out: Ref,
            epi: Optional[Epilogue] = None) -> tuple:
    """The direct tensor-core kernels of a call (``kernels_conv_mma``): one kernel for the
    forward and data calls (applying ``epi``); the weight gradient's partial sums, then their
    sum."""
    dt, pixels = ctx.storage, g.n * g.h * g.w
    if call != "filter":
        data, weight = (a, b) if call == "forward" else (b, a)
        ops = epi.operands if epi is not None else ()
        kern = render_conv_mma(g, dt, call == "data", epi.expr if epi else None, len(ops))
        return (Kernel(kern, mma_blocks(g, ctx.sm_count), 32 * WARPS, (out, data, weight, *ops),
                       pixels),)
    count, blocks = prod(g.weight_shape), filter_blocks(g, ctx.sm_count)
    part = ctx.new_array(filter_partials(g, blocks), "float32")
    return (Kernel(render_conv_mma_filter(g, dt), blocks, 32 * FILTER_WARPS, (part, a, b),
                   pixels),
            Kernel(render_filter_sum(g, blocks, dt), -(-count // 32), 32 * SUM_GROUPS, (out, part),
                   count))
