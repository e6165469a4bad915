"""Lowering family ``detection`` of the detection ops (``ops/detection_*.py``): one thread per
element or box (``kernels_detection``) for MultiBoxPrior, box_iou, box_encode, box_decode, and
box_nms's gradient scatter (after a zero fill); the op's lowering data names the kernel
(``kind``). The block-per-item ops are in ``lowering_detection_nms``, ``lowering_multibox`` and
``lowering_proposal``, the pooling ones in ``lowering_roi``.
"""
from __future__ import annotations

from math import prod

from .actions import Fill, StepCtx, family, launch
from .kernels_detection import (render_box_decode, render_box_encode, render_box_iou,
                                render_nms_scatter, render_prior)
from ...compiler.ops.detection_multibox import prior_half_sizes, prior_steps


def _prior(ctx: StepCtx) -> list:
    h, w = ctx.in_shapes[0][2:]
    a = ctx.attrs
    kern = render_prior(h, w, prior_half_sizes(a, h, w), prior_steps(a, h, w), a["offsets"],
                        a["clip"], ctx.storage)
    return [launch(ctx, kern, (ctx.outs[0], ctx.ins[0]), prod(ctx.out_shapes[0]) // 4)]


def _box_iou(ctx: StepCtx) -> list:
    right = prod(ctx.in_shapes[1][:-1])
    kern = render_box_iou(right, ctx.attrs["format"] == "center", ctx.storage)
    return [launch(ctx, kern, (ctx.outs[0], *ctx.ins), prod(ctx.out_shapes[0]))]


def _box_decode(ctx: StepCtx) -> list:
    a = ctx.attrs
    kern = render_box_decode(ctx.in_shapes[0][1], [a[f"std{k}"] for k in range(4)], a["clip"],
                             a["format"] == "center", ctx.storage)
    return [launch(ctx, kern, (ctx.outs[0], *ctx.ins), prod(ctx.out_shapes[0]) // 4)]


def _box_encode(ctx: StepCtx) -> list:
    b, n = ctx.in_shapes[0]
    kern = render_box_encode(n, ctx.in_shapes[3][1], [ctx.storage] + [ctx.dt(r) for r in ctx.ins])
    return [launch(ctx, kern, (*ctx.outs, *ctx.ins), b * n)]


def _nms_scatter(ctx: StepCtx) -> list:
    kern = render_nms_scatter(ctx.in_shapes[0][-1], ctx.storage, ctx.dt(ctx.ins[1]))
    return [Fill(ctx.outs[0], 0.0, prod(ctx.out_shapes[0]), ctx.storage),
            launch(ctx, kern, (ctx.outs[0], *ctx.ins), prod(ctx.in_shapes[0]))]


_ELEMENTS = {"prior": _prior, "box_iou": _box_iou, "box_decode": _box_decode,
             "box_encode": _box_encode, "nms_scatter": _nms_scatter}


@family("detection")
def _detection(ctx: StepCtx, p: dict) -> list:
    """One thread per element or box of the op named by ``p['kind']``."""
    return _ELEMENTS[p["kind"]](ctx)
