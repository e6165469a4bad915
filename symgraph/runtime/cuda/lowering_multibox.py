"""Lowering family ``multibox``: MultiBoxDetection and MultiBoxTarget as a block per batch
item (``kernels_multibox``), with their orders and flags in scratch.
"""
from __future__ import annotations

from .actions import StepCtx, family
from .kernels_multibox import TARGET_THREADS, render_detection, render_target
from .lowering_detection_nms import blocks


def _multibox_detection(ctx: StepCtx) -> list:
    items, classes, anchors = ctx.in_shapes[0]
    kern = render_detection(dict(ctx.attrs), items, classes, anchors, ctx.storage)
    scratch = tuple(ctx.new_array(items * anchors * 6, "float32") for _ in range(2))
    return blocks(ctx, kern, items, (ctx.outs[0], *ctx.ins, *scratch))


def _multibox_target(ctx: StepCtx) -> list:
    anchors = ctx.in_shapes[0][1]
    items, labels, width = ctx.in_shapes[1]
    classes = ctx.in_shapes[2][1]
    kern = render_target(dict(ctx.attrs), items, labels, width, classes, anchors, ctx.storage)
    ints = tuple(ctx.new_array(items * count, "int32") for count in (anchors, anchors, labels))
    floats = tuple(ctx.new_array(items * anchors, "float32") for _ in range(2))
    return blocks(ctx, kern, items, (*ctx.outs, *ctx.ins, *ints, *floats), TARGET_THREADS)


_KINDS = {"multibox_detection": _multibox_detection, "multibox_target": _multibox_target}


@family("multibox")
def _multibox(ctx: StepCtx, p: dict) -> list:
    """A block per batch item of the op named by ``p['kind']``."""
    return _KINDS[p["kind"]](ctx)
