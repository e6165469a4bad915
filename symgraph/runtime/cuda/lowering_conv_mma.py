"""The direct tensor-core convolution kernels of a channels-last float16 / bfloat16 call
(templates in ``kernels_conv_mma``): the generated branch of its ``Choice`` where they fit
(``mma_fits``), in place of im2col + GEMM on channels-first copies (``lowering_conv``)."""
from __future__ import annotations

from typing import Optional

from ...compiler.ops.geometry import ConvWindow
from .actions import Kernel, Ref, StepCtx
from .kernels_conv_mma import WARPS, mma_blocks, mma_fits, render_conv_mma
from .lowering_conv_mma_filter import filter_kernels
from .lowering_fused import Epilogue

__all__ = ["direct", "mma_fits"]


def direct(ctx: StepCtx, call: str, g: ConvWindow, a: Ref, b: Ref, out: Ref,
            epi: Optional[Epilogue] = None) -> tuple:
    """The direct tensor-core kernels of a call (``kernels_conv_mma``): one kernel for the
    forward and data calls (applying ``epi``); the weight gradient's two
    (``lowering_conv_mma_filter``)."""
    if call != "filter":
        dt, pixels = ctx.storage, g.n * g.h * g.w
        data, weight = (a, b) if call == "forward" else (b, a)
        ops = epi.operands if epi is not None else ()
        kern = render_conv_mma(g, dt, call == "data", epi.expr if epi else None, len(ops))
        return (Kernel(kern, mma_blocks(g, ctx.sm_count), 32 * WARPS, (out, data, weight, *ops),
                       pixels),)
    return filter_kernels(ctx, g, a, b, out)
