"""Lowering family ``proposal``: Proposal and MultiProposal as a block per batch item
(``kernels_proposal``), anchors decoded, sorted and suppressed in scratch.
"""
from __future__ import annotations

from .actions import StepCtx, family
from .kernels_proposal import render_proposal
from .lowering_detection_nms import blocks
from ...compiler.ops.detection_proposal import base_anchors


@family("proposal")
def _proposal(ctx: StepCtx, p: dict) -> list:
    """Anchors of every position decoded, the best kept before and after suppression."""
    items, k2, h, w = ctx.in_shapes[0]
    a, k = ctx.attrs, k2 // 2
    kern = render_proposal(dict(a), items, k, h, w, base_anchors(a).tolist(), ctx.storage)
    count = k * h * w
    pre = count if a["rpn_pre_nms_top_n"] <= 0 else min(a["rpn_pre_nms_top_n"], count)
    scratch = (ctx.new_array(items * count * 5, "float32"), ctx.new_array(items * pre, "int32"),
               ctx.new_array(items * a["rpn_post_nms_top_n"], "int32"),
               ctx.new_array(items * pre, "int32"))
    return blocks(ctx, kern, items, (*ctx.outs, *ctx.ins, *scratch))
