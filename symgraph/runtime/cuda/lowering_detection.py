"""Lowering families of the detection ops (``ops/detection_*.py``), the op's lowering data
naming the kernel (``kind``):

* ``detection``: one thread per element or box (``kernels_detection``): MultiBoxPrior,
  box_iou, box_encode, box_decode, and box_nms's gradient scatter (after a zero fill);
* ``detection_nms``: a block per batch item (``kernels_detection_nms``,
  ``kernels_multibox``, ``kernels_proposal``): box_nms, bipartite_matching,
  MultiBoxDetection, MultiBoxTarget, Proposal and MultiProposal, with their orders and flags
  in scratch;
* ``roi`` and ``deformable``: one thread per pooled element (``kernels_roi``), the gradients
  zero-filling data's (and trans's) gradient and adding into it.
"""
from __future__ import annotations

from math import prod

from .actions import Fill, Kernel, StepCtx, family, launch
from .kernels_detection import (render_box_decode, render_box_encode, render_box_iou,
                                render_nms_scatter, render_prior)
from .kernels_detection_nms import render_box_nms, render_matching
from .kernels_multibox import TARGET_THREADS, render_detection, render_target
from .kernels_proposal import render_proposal
from .kernels_roi import render_deformable, render_roi
from ...compiler.ops.detection_multibox import prior_half_sizes, prior_steps
from ...compiler.ops.detection_proposal import base_anchors
from ...compiler.ops.detection_roi import channel_map, group_size

BLOCK = 256


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


def _blocks(ctx: StepCtx, kern, items: int, args: tuple, threads: int = BLOCK) -> list:
    grid = max(1, min(items, ctx.sm_count * 8))
    return [Kernel(kern, grid, threads, args, items)]


def _box_nms(ctx: StepCtx) -> list:
    shape = ctx.in_shapes[0]
    items, n, width = prod(shape[:-2]), shape[-2], shape[-1]
    kern = render_box_nms(dict(ctx.attrs), items, n, width, ctx.storage)
    scratch = (ctx.new_array(items * n, "int32"), ctx.new_array(items * n, "int32"))
    return _blocks(ctx, kern, items, (*ctx.outs, ctx.ins[0], *scratch))


def _matching(ctx: StepCtx) -> list:
    shape, a = ctx.in_shapes[0], ctx.attrs
    items, rows, cols = prod(shape[:-2]), shape[-2], shape[-1]
    kern = render_matching(items, rows, cols, a["is_ascend"], a["threshold"], a["topk"],
                           ctx.storage)
    order = ctx.new_array(items * rows * cols, "int32")
    return _blocks(ctx, kern, items, (*ctx.outs, ctx.ins[0], order))


def _multibox_detection(ctx: StepCtx) -> list:
    items, classes, anchors = ctx.in_shapes[0]
    kern = render_detection(dict(ctx.attrs), items, classes, anchors, ctx.storage)
    scratch = tuple(ctx.new_array(items * anchors * 6, "float32") for _ in range(2))
    return _blocks(ctx, kern, items, (ctx.outs[0], *ctx.ins, *scratch))


def _multibox_target(ctx: StepCtx) -> list:
    anchors = ctx.in_shapes[0][1]
    items, labels, width = ctx.in_shapes[1]
    classes = ctx.in_shapes[2][1]
    kern = render_target(dict(ctx.attrs), items, labels, width, classes, anchors, ctx.storage)
    ints = tuple(ctx.new_array(items * count, "int32") for count in (anchors, anchors, labels))
    floats = tuple(ctx.new_array(items * anchors, "float32") for _ in range(2))
    return _blocks(ctx, kern, items, (*ctx.outs, *ctx.ins, *ints, *floats), TARGET_THREADS)


def _proposal(ctx: StepCtx) -> list:
    items, k2, h, w = ctx.in_shapes[0]
    a, k = ctx.attrs, k2 // 2
    kern = render_proposal(dict(a), items, k, h, w, base_anchors(a).tolist(), ctx.storage)
    count = k * h * w
    pre = count if a["rpn_pre_nms_top_n"] <= 0 else min(a["rpn_pre_nms_top_n"], count)
    scratch = (ctx.new_array(items * count * 5, "float32"), ctx.new_array(items * pre, "int32"),
               ctx.new_array(items * a["rpn_post_nms_top_n"], "int32"),
               ctx.new_array(items * pre, "int32"))
    return _blocks(ctx, kern, items, (*ctx.outs, *ctx.ins, *scratch))


_BLOCKS = {"box_nms": _box_nms, "matching": _matching, "proposal": _proposal,
           "multibox_detection": _multibox_detection, "multibox_target": _multibox_target}


@family("detection_nms")
def _detection_nms(ctx: StepCtx, p: dict) -> list:
    """A block per batch item of the op named by ``p['kind']``."""
    return _BLOCKS[p["kind"]](ctx)


def _roi_geometry(ctx: StepCtx, kind: str, data: tuple, out: tuple) -> dict:
    a = ctx.attrs
    # int literals: the kernels mix these sizes with int coordinates in min/max
    geo = {k: str(v) for k, v in zip(("NB", "C", "H", "W", "CO", "PH", "PW"),
                                      tuple(data) + tuple(out[1:]))}
    geo["SCALE"] = float(a["spatial_scale"])
    if kind in ("align", "rotated"):
        k, _ = channel_map(kind, a)
        cin = "(c * PH * PW + ph * PW + pw)" if k > 1 else "c"
        geo = {"CIN": cin, **geo, "OFF": 0.5 if a.get("aligned") else 0.0,
               "RATIO": str(a.get("sample_ratio", a.get("sampling_ratio"))),
               "ALIGNED": bool(a.get("aligned"))}
    elif kind == "psroi":
        geo["G"] = str(group_size(a))
    return geo


@family("deformable")
def _deformable(ctx: StepCtx, p: dict) -> list:
    """DeformablePSROIPooling, or with ``p['backward']`` its gradient (inputs ograd, data,
    rois[, trans]): one thread per output element, the gradient adding atomically."""
    a, back = ctx.attrs, p.get("backward", False)
    ins = ctx.ins[1:] if back else ctx.ins
    data, out = ctx.in_shapes[1 if back else 0], ctx.in_shapes[0] if back else ctx.out_shapes[0]
    trans = ins[2] if len(ins) > 2 else None
    classes = 1 if trans is None else ctx.in_shapes[-1][1] // 2
    geo = {**{k: str(v) for k, v in zip(("NB", "C", "H", "W", "CO", "PH", "PW"),
                                         tuple(data) + tuple(out[1:]))},
           "SCALE": float(a["spatial_scale"]), "G": str(a["group_size"]),
           "K": str(a["part_size"] or a["pooled_size"]), "CLASSES": str(classes),
           "SAMPLES": str(a["sample_per_part"]), "STD": float(a["trans_std"])}
    kern = render_deformable(back, geo, ctx.storage, ctx.dt(ins[1]),
                             None if trans is None else ctx.dt(trans))
    run = launch(ctx, kern, (*ctx.outs, *ctx.ins), prod(out))
    if not back:
        return [run]
    return [Fill(o, 0.0, prod(s), ctx.storage) for o, s in zip(ctx.outs, ctx.out_shapes)] + [run]


@family("roi")
def _roi(ctx: StepCtx, p: dict) -> list:
    """ROIPooling / ROIAlign / PSROIPooling / RROIAlign (``p['kind']``: max, align, psroi,
    rotated), or with
    ``p['backward']`` its data gradient (inputs ograd, data, rois)."""
    kind, back = p["kind"], p.get("backward", False)
    data = ctx.in_shapes[1] if back else ctx.in_shapes[0]
    out = ctx.in_shapes[0] if back else ctx.out_shapes[0]
    rois = ctx.ins[-1]
    kern = render_roi(kind, back, _roi_geometry(ctx, kind, data, out), ctx.storage,
                      ctx.dt(rois), ctx.dt(ctx.ins[1]))
    if not back:
        return [launch(ctx, kern, (ctx.outs[0], ctx.ins[0], rois), prod(out))]
    srcs = (ctx.ins[0], ctx.ins[1]) if kind == "max" else (ctx.ins[0],)
    return [Fill(ctx.outs[0], 0.0, prod(data), ctx.storage),
            launch(ctx, kern, (ctx.outs[0], *srcs, rois), prod(out))]
