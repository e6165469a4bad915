"""Region-of-interest pooling of two-stage detectors: ``ROIPooling`` (max over integer bins),
``contrib.ROIAlign`` (bilinear samples averaged per bin, optionally position-sensitive) and
``contrib.PSROIPooling`` (average over integer bins of position-sensitive channels), each with
its gradient op.

``data`` is (N, C, H, W) and ``rois`` (R, 5) rows [batch index, x1, y1, x2, y2] in image
units, scaled by ``spatial_scale``; the output is (R, C_out, PH, PW). The numpy references
follow MXNet 1.9.1's CPU kernels (rounding of the ROI corners, bin edges, the sampling grid
and the border rule of the bilinear samples); a ROI whose batch index is outside [0, N)
pools to 0 (MXNet's ROIAlign writes a single 0 there and leaves the rest: see
docs/mxnet_parity.md).

ROIAlign and PSROIPooling are linear in ``data``: per ROI a weight matrix maps the H*W
positions of one input channel to the PH*PW bins, and output channel c of bin j reads input
channel ``c * K + channel_of_bin[j]`` (K = 1 without position sensitivity). Their gradients
(``_backward_ROIAlign``, ``_backward_PSROIPooling``) apply the transposed matrices, and the
gradient of those is the forward op again. ROIPooling's gradient recomputes the first maximum
of each bin and adds the output gradient there. No gradient flows to ``rois`` (as in MXNet).
The GPU lowering is the ``roi`` family of ``cuda/lowering_detection.py``.

Example::

    pooled = sg.sym.contrib.ROIAlign(feat, rois, pooled_size=(7, 7), spatial_scale=1 / 16.)
"""
from __future__ import annotations

import itertools
import math

import numpy as np

from ...core.attrs import Attrs, Param
from ...core.base import ShapeError
from ...core.registry import NO_GRADIENT, OPAQUE, OpDef, RunCtx, register
from ._util import check_attr, fmt
from .indexing import typed_like

_POOLED = {"pooled_size": Param("shape", doc="(PH, PW) of each pooled ROI"),
           "spatial_scale": Param("float", doc="feature-map size over image size")}
ROIPOOL_PARAMS = dict(_POOLED)
ROIALIGN_PARAMS = {**_POOLED,
                   "sample_ratio": Param("int", -1, doc="samples per bin side; -1: adaptive"),
                   "position_sensitive": Param("bool", False, doc="bin j reads channel "
                                               "group j (R-FCN)"),
                   "aligned": Param("bool", False, doc="pixel centres at +0.5 (shift by -0.5)")}
RROIALIGN_PARAMS = {**_POOLED, "sampling_ratio": Param("int", -1, doc="samples per bin side; "
                                                                  "-1: adaptive")}
PSROI_PARAMS = {"spatial_scale": Param("float", doc="feature-map size over image size"),
                "output_dim": Param("int", doc="output channels"),
                "pooled_size": Param("int", doc="PH = PW"),
                "group_size": Param("int", 0, doc="channel groups per side; 0: pooled_size")}


def pooled_hw(a: Attrs) -> tuple[int, int]:
    """(PH, PW) of any of the ROI ops."""
    p = a["pooled_size"]
    if isinstance(p, int):
        return p, p
    check_attr(len(p) == 2 and min(p) > 0, "pooled_size", p, "must be two positive sizes")
    return p[0], p[1]


def group_size(a: Attrs) -> int:
    """PSROIPooling's channel groups per side."""
    return a["group_size"] or a["pooled_size"]


def channel_map(kind: str, a: Attrs) -> tuple[int, np.ndarray]:
    """(K, channel_of_bin): output channel c of bin j reads input channel c*K + map[j]."""
    ph, pw = pooled_hw(a)
    if kind == "psroi":
        g = group_size(a)
        gh = np.clip(np.floor(np.arange(ph) * g / ph).astype(int), 0, g - 1)
        gw = np.clip(np.floor(np.arange(pw) * g / pw).astype(int), 0, g - 1)
        return g * g, (gh[:, None] * g + gw[None, :]).reshape(-1)
    if kind == "align" and a["position_sensitive"]:
        return ph * pw, np.arange(ph * pw)
    return 1, np.zeros(ph * pw, dtype=np.int64)


def out_channels(kind: str, a: Attrs, c_in: int) -> int:
    """C_out of data with ``c_in`` channels; ShapeError if the channels do not divide."""
    k, _ = channel_map(kind, a)
    want = a["output_dim"] * k if kind == "psroi" else None
    if (want is not None and c_in != want) or c_in % k:
        raise ShapeError(f"data has {c_in} channels; {'output_dim * group_size^2 = ' if want else ''}"
                         f"{want or f'a multiple of {k}'} needed")
    return c_in // k


ROI_ROWS = {"rotated": "[batch, centre x, centre y, width, height, degrees]"}
"""The rows of ``rois`` per kind, when not [batch, x1, y1, x2, y2]."""


def roi_shape(kind: str):
    """Shape rule of a ROI op of ``kind``: data (N, C, H, W), rois (R, width) -> (R, C_out,
    PH, PW)."""
    rows = ROI_ROWS.get(kind, "[batch, x1, y1, x2, y2]")
    width = rows.count(",") + 1

    def rule(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
        ph, pw = pooled_hw(a)
        if ins[1] is not None and (len(ins[1]) != 2 or ins[1][1] != width):
            raise ShapeError(f"rois must be (R, {width}) rows {rows}, got {fmt(ins[1])}")
        if ins[0] is None or ins[1] is None:
            return ins, outs
        if len(ins[0]) != 4:
            raise ShapeError(f"data must be (N, C, H, W), got {fmt(ins[0])}")
        return ins, [(ins[1][0], out_channels(kind, a, ins[0][1]), ph, pw)]
    return rule


def round_half_away(v: float) -> float:
    """C's ``round``: halves away from zero (numpy's ``round`` takes halves to even)."""
    return math.copysign(math.floor(abs(v) + 0.5), v)


def bilinear(h: int, w: int, y: float, x: float) -> list[tuple[int, float]]:
    """(position, weight) of MXNet's bilinear sample at (y, x) on an h x w map."""
    if y < -1.0 or y > h or x < -1.0 or x > w:
        return []
    y, x = max(y, 0.0), max(x, 0.0)
    y0, x0 = int(y), int(x)
    y1, x1 = min(y0 + 1, h - 1), min(x0 + 1, w - 1)
    if y0 >= h - 1:
        y0 = y1 = h - 1
        y = float(y0)
    if x0 >= w - 1:
        x0 = x1 = w - 1
        x = float(x0)
    ly, lx = y - y0, x - x0
    return [(y0 * w + x0, (1 - ly) * (1 - lx)), (y0 * w + x1, (1 - ly) * lx),
            (y1 * w + x0, ly * (1 - lx)), (y1 * w + x1, ly * lx)]


def _grid_weights(a: Attrs, h: int, w: int, start: tuple, size: tuple, ratio: int,
                  turn: tuple = (1.0, 0.0, 0.0, 0.0)) -> np.ndarray:
    """(PH*PW, H*W) averages of bilinear samples on each bin's ratio x ratio grid (adaptive
    for ratio <= 0) over a box of ``size`` (h, w) from ``start`` (y, x); ``turn`` (cos, sin,
    centre y, centre x) rotates the sample points about the centre (RROIAlign)."""
    ph, pw = pooled_hw(a)
    rh, rw = size
    bh, bw = rh / ph, rw / pw
    gh = ratio if ratio > 0 else math.ceil(rh / ph)
    gw = ratio if ratio > 0 else math.ceil(rw / pw)
    cos, sin, cy, cx = turn
    wts = np.zeros((ph * pw, h * w))
    for i, j, iy, ix in itertools.product(range(ph), range(pw), range(gh), range(gw)):
        yy = start[0] + i * bh + (iy + 0.5) * bh / gh
        xx = start[1] + j * bw + (ix + 0.5) * bw / gw
        for pos, wt in bilinear(h, w, yy * cos - xx * sin + cy, xx * cos + yy * sin + cx):
            wts[i * pw + j, pos] += wt / max(gh * gw, 1)
    return wts


def _align_weights(a: Attrs, roi: np.ndarray, h: int, w: int) -> np.ndarray:
    off = 0.5 if a["aligned"] else 0.0
    x0, y0, x1, y1 = (float(v) * a["spatial_scale"] - off for v in roi[1:5])
    rw, rh = x1 - x0, y1 - y0
    if not a["aligned"]:
        rw, rh = max(rw, 1.0), max(rh, 1.0)
    return _grid_weights(a, h, w, (y0, x0), (rh, rw), a["sample_ratio"])


def _rotated_weights(a: Attrs, roi: np.ndarray, h: int, w: int) -> np.ndarray:
    cx, cy, rw, rh = (float(v) * a["spatial_scale"] for v in roi[1:5])
    rw, rh = max(rw, 1.0), max(rh, 1.0)
    theta = float(roi[5]) * math.pi / 180.0
    return _grid_weights(a, h, w, (-rh / 2, -rw / 2), (rh, rw), a["sampling_ratio"],
                         (math.cos(theta), math.sin(theta), cy, cx))


def _psroi_weights(a: Attrs, roi: np.ndarray, h: int, w: int) -> np.ndarray:
    ph = pw = a["pooled_size"]
    s = a["spatial_scale"]
    x0, y0 = round_half_away(roi[1]) * s, round_half_away(roi[2]) * s
    x1, y1 = (round_half_away(roi[3]) + 1.0) * s, (round_half_away(roi[4]) + 1.0) * s
    bh, bw = max(y1 - y0, 0.1) / ph, max(x1 - x0, 0.1) / pw
    wts = np.zeros((ph, pw, h, w))
    for i in range(ph):
        hs = min(max(math.floor(i * bh + y0), 0), h)
        he = min(max(math.ceil((i + 1) * bh + y0), 0), h)
        for j in range(pw):
            ws = min(max(math.floor(j * bw + x0), 0), w)
            we = min(max(math.ceil((j + 1) * bw + x0), 0), w)
            if he > hs and we > ws:
                wts[i, j, hs:he, ws:we] = 1.0 / ((he - hs) * (we - ws))
    return wts.reshape(ph * pw, h * w)


WEIGHTS = {"align": _align_weights, "psroi": _psroi_weights, "rotated": _rotated_weights}


def _linear_plan(kind: str, a: Attrs, data_shape: tuple, rois: np.ndarray):
    """Per ROI: (batch index or None, weights (PH*PW, H*W)); and the channel gather
    (C_out, PH*PW) of input channels."""
    n, c, h, w = data_shape
    k, cmap = channel_map(kind, a)
    chan = np.arange(c // k)[:, None] * k + cmap[None, :]
    plan = []
    for roi in rois:
        b = int(roi[0])
        plan.append((b if 0 <= b < n else None, WEIGHTS[kind](a, roi, h, w)))
    return plan, chan


def linear_forward(kind: str):
    def compute(a: Attrs, xs: list, ctx: RunCtx) -> list:
        data, rois = xs[0], xs[1]
        n, c, h, w = data.shape
        plan, chan = _linear_plan(kind, a, data.shape, rois)
        ph, pw = pooled_hw(a)
        out = np.zeros((len(rois), chan.shape[0], ph * pw))
        flat = data.reshape(n, c, h * w)
        for r, (b, wts) in enumerate(plan):
            if b is not None:
                out[r] = np.einsum("cjp,jp->cj", flat[b][chan], wts)
        return [out.reshape(len(rois), chan.shape[0], ph, pw).astype(data.dtype)]
    return compute


def linear_backward(kind: str):
    def compute(a: Attrs, xs: list, ctx: RunCtx) -> list:
        dy, data, rois = xs
        n, c, h, w = data.shape
        plan, chan = _linear_plan(kind, a, data.shape, rois)
        dx = np.zeros((n, c, h * w))
        g = dy.reshape(len(rois), chan.shape[0], -1)
        for r, (b, wts) in enumerate(plan):
            if b is not None:
                np.add.at(dx[b], chan, g[r][:, :, None] * wts[None])
        return [dx.reshape(data.shape).astype(dy.dtype)]
    return compute


def backward_shape(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    return ins, [ins[1]] if ins[1] is not None else outs


def _max_plan(a: Attrs, roi: np.ndarray, h: int, w: int) -> list:
    """ROIPooling's bins of one ROI: (row slice, column slice) or None when empty."""
    ph, pw = pooled_hw(a)
    x0, y0, x1, y1 = (int(round_half_away(v * a["spatial_scale"])) for v in roi[1:5])
    rh, rw = max(y1 - y0 + 1, 1), max(x1 - x0 + 1, 1)
    bh, bw = rh / ph, rw / pw
    bins = []
    for i in range(ph):
        hs = min(max(math.floor(i * bh) + y0, 0), h)
        he = min(max(math.ceil((i + 1) * bh) + y0, 0), h)
        for j in range(pw):
            ws = min(max(math.floor(j * bw) + x0, 0), w)
            we = min(max(math.ceil((j + 1) * bw) + x0, 0), w)
            bins.append((slice(hs, he), slice(ws, we)) if he > hs and we > ws else None)
    return bins


def roi_argmax(a: Attrs, data: np.ndarray, rois: np.ndarray):
    """Yield (roi, bin, batch, flat H*W positions (C,)) of each non-empty bin's first max."""
    n, c, h, w = data.shape
    for r, roi in enumerate(rois):
        b = int(roi[0])
        if not 0 <= b < n:
            continue
        for j, cell in enumerate(_max_plan(a, roi, h, w)):
            if cell is None:
                continue
            region = data[b][:, cell[0], cell[1]].reshape(c, -1)
            k = region.argmax(1)
            wide = cell[1].stop - cell[1].start
            yield r, j, b, (cell[0].start + k // wide) * w + cell[1].start + k % wide


def _roipool(a: Attrs, xs: list, ctx: RunCtx) -> list:
    data, rois = xs
    n, c, h, w = data.shape
    ph, pw = pooled_hw(a)
    out = np.zeros((len(rois), c, ph * pw))
    flat = data.reshape(n, c, -1)
    for r, j, b, pos in roi_argmax(a, data, rois):
        out[r, :, j] = flat[b, np.arange(c), pos]
    return [out.reshape(len(rois), c, ph, pw).astype(data.dtype)]


def _roipool_backward(a: Attrs, xs: list, ctx: RunCtx) -> list:
    dy, data, rois = xs
    n, c, h, w = data.shape
    dx = np.zeros((n, c, h * w))
    g = dy.reshape(len(rois), c, -1)
    for r, j, b, pos in roi_argmax(a, data, rois):
        np.add.at(dx[b], (np.arange(c), pos), g[r, :, j])
    return [dx.reshape(data.shape).astype(dy.dtype)]


def _attrs(c) -> dict:
    return dict(c.attrs)


register(OpDef(
    "ROIPooling", ROIPOOL_PARAMS, ("data", "rois"), roi_shape("max"), _roipool,
    lambda c: [c.sym._backward_ROIPooling(c.ograds[0], c.inputs[0], c.inputs[1],
                                          **_attrs(c)), None],
    OPAQUE, infer_type=typed_like(0), lowering=("roi", {"kind": "max"}),
    doc="Max pooling of each ROI (R, 5) of data (N, C, H, W) into (R, C, PH, PW) integer "
        "bins (Fast R-CNN); empty bins give 0."))
register(OpDef(
    "_backward_ROIPooling", ROIPOOL_PARAMS, ("ograd", "data", "rois"), backward_shape,
    _roipool_backward, NO_GRADIENT, OPAQUE, infer_type=typed_like(0),
    lowering=("roi", {"kind": "max", "backward": True}),
    doc="Gradient of ROIPooling: each bin's gradient added at its first maximum of data."))
def _register_linear(name: str, kind: str, params: dict, ops: tuple, docs: tuple) -> None:
    """A linear ROI op and its gradient op ``_backward_<name without _contrib_>``; ``ops``:
    (forward, backward) as functions of ``c.sym``: each one's gradient is the other."""
    forward, backward = ops
    register(OpDef(
        name, params, ("data", "rois"), roi_shape(kind), linear_forward(kind),
        lambda c: [backward(c.sym)(c.ograds[0], c.inputs[0], c.inputs[1], **_attrs(c)), None],
        OPAQUE, infer_type=typed_like(0), lowering=("roi", {"kind": kind}), doc=docs[0]))
    register(OpDef(
        "_backward_" + name.replace("_contrib_", ""), params, ("ograd", "data", "rois"),
        backward_shape, linear_backward(kind),
        lambda c: [forward(c.sym)(c.ograds[0], c.inputs[2], **_attrs(c)), None, None],
        OPAQUE, infer_type=typed_like(0), lowering=("roi", {"kind": kind, "backward": True}),
        doc=docs[1]))


_register_linear(
    "_contrib_ROIAlign", "align", ROIALIGN_PARAMS,
    (lambda s: s._contrib_ROIAlign, lambda s: s._backward_ROIAlign),
    ("ROI Align (Mask R-CNN): each bin of each ROI (R, 5) of data (N, C, H, W) averages "
     "bilinear samples on a sample_ratio grid; (R, C, PH, PW), or (R, C/(PH*PW), PH, PW) "
     "position-sensitive.",
     "Gradient of ROIAlign with respect to data: the bilinear weights transposed (data's "
     "values are not read)."))
_register_linear(
    "_contrib_PSROIPooling", "psroi", PSROI_PARAMS,
    (lambda s: s._contrib_PSROIPooling, lambda s: s._backward_PSROIPooling),
    ("Position-sensitive ROI pooling (R-FCN): bin (i, j) of output channel c averages "
     "channel (c * G + gi) * G + gj of data over its integer bin; (R, output_dim, P, P).",
     "Gradient of PSROIPooling with respect to data: each bin's gradient spread evenly over "
     "its integer bin (data's values are not read)."))
register(OpDef(
    "_contrib_RROIAlign", RROIALIGN_PARAMS, ("data", "rois"), roi_shape("rotated"),
    linear_forward("rotated"), NO_GRADIENT, OPAQUE, infer_type=typed_like(0),
    lowering=("roi", {"kind": "rotated"}),
    doc="Rotated ROI Align: each bin of each rotated ROI (R, 6) [batch, centre x, centre y, "
        "width, height, degrees counter-clockwise] of data (N, C, H, W) averages bilinear "
        "samples; (R, C, PH, PW). No gradient (as in MXNet)."))
