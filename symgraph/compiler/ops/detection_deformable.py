"""``contrib.DeformablePSROIPooling`` (Deformable ConvNets' R-FCN head) and its gradient, with
MXNet 1.9.1's names, attributes and CPU semantics.

Bin (i, j) of output channel c of ROI r averages ``sample_per_part``^2 bilinear samples of
data channel ``(c * G + gi) * G + gj`` (G = ``group_size``) over the bin, shifted by the
offsets ``trans[r, 2 * class, part_i, part_j]`` (x) and ``trans[r, 2 * class + 1, ...]`` (y)
times ``trans_std`` times the ROI's size, class = c / (output_dim / classes). The ROI's corners
are rounded (C's ``round``) and moved by -0.5; samples outside [-0.5, size - 0.5] are skipped
and the rest clamped into the map; an empty bin gives 0. With ``no_trans`` there is no
``trans`` input.

The gradient op ``_backward_DeformablePSROIPooling`` gives data's gradient (the bilinear
weights transposed) and trans's (the samples' slopes times ``trans_std`` times the ROI's size),
as MXNet does (at the clamped sample: a clamp's zero slope is not applied). The GPU lowering
is the ``deformable`` family of ``cuda/lowering_detection.py``.

Example::

    y = sg.sym.contrib.DeformablePSROIPooling(feat, rois, offsets, spatial_scale=1 / 16.,
                                              output_dim=10, group_size=7, pooled_size=7,
                                              sample_per_part=4, trans_std=0.1)
"""
from __future__ import annotations

import math
from typing import Iterator

import numpy as np

from ...core.attrs import Attrs, Param
from ...core.base import ShapeError
from ...core.registry import NO_GRADIENT, OPAQUE, OpDef, RunCtx, register
from ._util import fmt
from .detection_roi import round_half_away
from .indexing import typed_like

PARAMS = {
    "spatial_scale": Param("float", doc="feature-map size over image size"),
    "output_dim": Param("int", doc="output channels"),
    "group_size": Param("int", doc="channel groups per side"),
    "pooled_size": Param("int", doc="bins per side"),
    "part_size": Param("int", 0, doc="offset cells per side; 0: pooled_size"),
    "sample_per_part": Param("int", 1, doc="samples per bin side"),
    "trans_std": Param("float", 0.0, doc="scale of the offsets"),
    "no_trans": Param("bool", False, doc="no offsets (no trans input)"),
}


def _inputs(a: Attrs) -> tuple[str, ...]:
    return ("data", "rois") if a["no_trans"] else ("data", "rois", "trans")


def part_size(a: Attrs) -> int:
    return a["part_size"] or a["pooled_size"]


def _shape(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    if any(s is None for s in ins):
        return ins, outs
    data, rois = tuple(ins[0]), tuple(ins[1])
    g, p = a["group_size"], a["pooled_size"]
    if len(data) != 4 or data[1] != a["output_dim"] * g * g:
        raise ShapeError(f"data must be (N, output_dim * group_size^2 = "
                         f"{a['output_dim'] * g * g}, H, W), got {fmt(data)}")
    if len(rois) != 2 or rois[1] != 5:
        raise ShapeError(f"rois must be (R, 5) rows [batch, x1, y1, x2, y2], got {fmt(rois)}")
    if not a["no_trans"]:
        t = tuple(ins[2])
        k = part_size(a)
        if len(t) != 4 or t[0] != rois[0] or t[1] % 2 or t[2:] != (k, k) or \
                a["output_dim"] % max(t[1] // 2, 1):
            raise ShapeError(f"trans must be (R, 2 * classes, {k}, {k}) with classes dividing "
                             f"output_dim, got {fmt(t)} for rois {fmt(rois)}")
    return ins, [(rois[0], a["output_dim"], p, p)]


def samples(a: Attrs, shapes: tuple, rois: np.ndarray, trans) -> Iterator[tuple]:
    """Per output element (r, c, i, j): (flat output index, batch, data channel, offset index
    or None, roi size (w, h), valid samples [(h, w)] as clamped positions)."""
    (n, _, height, width), p, g = shapes, a["pooled_size"], a["group_size"]
    k, s, dim = part_size(a), a["sample_per_part"], a["output_dim"]
    classes = 1 if trans is None else trans.shape[1] // 2
    for r, roi in enumerate(rois):
        b = int(roi[0])
        x0, y0 = (round_half_away(v) * a["spatial_scale"] - 0.5 for v in roi[1:3])
        x1, y1 = ((round_half_away(v) + 1.0) * a["spatial_scale"] - 0.5 for v in roi[3:5])
        rw, rh = max(x1 - x0, 0.1), max(y1 - y0, 0.1)
        bw, bh = rw / p, rh / p
        for c, i, j in np.ndindex(dim, p, p):
            pi, pj = math.floor(i / p * k), math.floor(j / p * k)
            at = None if trans is None else (r, 2 * (c // (dim // classes)), pi, pj)
            tx = 0.0 if at is None else trans[at] * a["trans_std"]
            ty = 0.0 if at is None else trans[at[0], at[1] + 1, pi, pj] * a["trans_std"]
            ws, hs = j * bw + x0 + tx * rw, i * bh + y0 + ty * rh
            gi = min(max(math.floor(i * g / p), 0), g - 1)
            gj = min(max(math.floor(j * g / p), 0), g - 1)
            pts = [(hs + u * bh / s, ws + v * bw / s) for u in range(s) for v in range(s)]
            pts = [(min(max(y, 0.0), height - 1.0), min(max(x, 0.0), width - 1.0))
                   for y, x in pts if -0.5 <= x <= width - 0.5 and -0.5 <= y <= height - 0.5
                   and 0 <= b < n]  # a ROI of no image pools to 0
            yield ((r * dim + c) * p + i) * p + j, b, (c * g + gi) * g + gj, at, (rw, rh), pts


def corners(y: float, x: float) -> tuple[int, int, int, int, float, float]:
    """(y0, y1, x0, x1, dy, dx): floor and ceil of the sample and its fractions."""
    return (math.floor(y), math.ceil(y), math.floor(x), math.ceil(x), y - math.floor(y),
            x - math.floor(x))


def _forward(a: Attrs, xs: list, ctx: RunCtx) -> list:
    data, rois = xs[0], xs[1]
    p = a["pooled_size"]
    out = np.zeros(len(rois) * a["output_dim"] * p * p)
    for at, b, c, _, _, pts in samples(a, data.shape, rois, xs[2] if len(xs) > 2 else None):
        vals = []
        for y, x in pts:
            img = data[b, c]
            y0, y1, x0, x1, dy, dx = corners(y, x)
            vals.append((1 - dx) * (1 - dy) * img[y0, x0] + (1 - dx) * dy * img[y1, x0]
                        + dx * (1 - dy) * img[y0, x1] + dx * dy * img[y1, x1])
        out[at] = sum(vals) / len(vals) if vals else 0.0
    return [out.reshape(len(rois), a["output_dim"], p, p).astype(data.dtype)]


def _backward(a: Attrs, xs: list, ctx: RunCtx) -> list:
    dy_all, data, rois = xs[0].reshape(-1), xs[1], xs[2]
    trans = xs[3] if len(xs) > 3 else None
    ddata = np.zeros(data.shape)
    dtrans = None if trans is None else np.zeros(trans.shape)
    for at, b, c, t, (rw, rh), pts in samples(a, data.shape, rois, trans):
        if not pts:
            continue
        g, img = dy_all[at] / len(pts), data[b, c]
        for y, x in pts:
            y0, y1, x0, x1, fy, fx = corners(y, x)
            for yy, xx, wt in ((y0, x0, (1 - fx) * (1 - fy)), (y1, x0, (1 - fx) * fy),
                               (y0, x1, fx * (1 - fy)), (y1, x1, fx * fy)):
                ddata[b, c, yy, xx] += wt * g
            if t is None:
                continue
            slope_x = (img[y1, x1] - img[y1, x0]) * fy + (img[y0, x1] - img[y0, x0]) * (1 - fy)
            slope_y = (img[y1, x1] - img[y0, x1]) * fx + (img[y1, x0] - img[y0, x0]) * (1 - fx)
            dtrans[t] += slope_x * a["trans_std"] * g * rw
            dtrans[t[0], t[1] + 1, t[2], t[3]] += slope_y * a["trans_std"] * g * rh
    dt = xs[0].dtype
    return [ddata.astype(dt)] + ([] if dtrans is None else [dtrans.astype(dt)])


def _backward_shape(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    if ins[1] is None or (not a["no_trans"] and ins[3] is None):
        return ins, outs
    return ins, [ins[1]] + ([] if a["no_trans"] else [ins[3]])


def _gradient(c) -> list:
    grads = c.sym._backward_DeformablePSROIPooling(c.ograds[0], *c.inputs, **dict(c.attrs))
    if c.attrs["no_trans"]:
        return [grads, None]
    return [grads[0], None, grads[1]]


register(OpDef(
    "_contrib_DeformablePSROIPooling", PARAMS, _inputs, _shape, _forward, _gradient, OPAQUE,
    infer_type=typed_like(0), lowering=("deformable", {}),
    doc="Deformable position-sensitive ROI pooling: (R, output_dim, P, P) averages of "
        "bilinear samples of each bin, moved by the learned offsets trans (R, 2 * classes, "
        "part, part) times trans_std."))
register(OpDef(
    "_backward_DeformablePSROIPooling", PARAMS,
    lambda a: ("ograd",) + _inputs(a), _backward_shape, _backward, NO_GRADIENT, OPAQUE,
    infer_type=typed_like(0),
    outputs=lambda a: ("data_grad",) if a["no_trans"] else ("data_grad", "trans_grad"),
    lowering=("deformable", {"backward": True}),
    doc="Gradient of DeformablePSROIPooling: data's and (unless no_trans) trans's."))
