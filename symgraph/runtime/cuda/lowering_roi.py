"""Lowering families ``roi`` and ``deformable``: one thread per pooled element
(``kernels_roi``); the gradients zero-fill data's (and trans's) gradient and add into it.
"""
from __future__ import annotations

from math import prod

from .actions import Fill, StepCtx, family, launch
from .kernels_roi import render_deformable, render_roi
from ...compiler.ops.detection_roi import channel_map, group_size


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
