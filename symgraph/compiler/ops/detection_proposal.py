"""Faster R-CNN's region proposal ops: ``contrib.Proposal`` (one image) and
``contrib.MultiProposal`` (a batch), MXNet 1.9.1's names, attributes and CPU semantics.

Per image: anchors of ``feature_stride`` pixels (Faster R-CNN's ratio-then-scale enumeration,
rounded as MXNet does) are shifted over the H x W map (position-major, anchor-minor), moved by
``bbox_pred`` (centre/size deltas with the +1 pixel convention, or corner deltas with
``iou_loss``) and clipped to the image (``im_info`` rows [height, width, scale]); boxes on
positions past the image's real extent, or smaller than ``rpn_min_size * scale`` (which are
also grown by half the minimum on each side, as MXNet does), score -1. The boxes are sorted by
the foreground score (``cls_prob``'s second half of channels; stable), the first
``rpn_pre_nms_top_n`` suppressed greedily at IoU above ``threshold`` until
``rpn_post_nms_top_n`` are kept, and the kept ones repeated cyclically to fill the
``rpn_post_nms_top_n`` output rows [batch index, x1, y1, x2, y2] (and scores with
``output_score``). Not differentiable (MXNet's gradient is zero). GPU: ``detection_nms`` family,
a block per image (``cuda/kernels_proposal.py``).

Example::

    rois = sg.sym.contrib.Proposal(cls_prob, bbox_pred, im_info, feature_stride=16,
                                   scales=(8, 16, 32), ratios=(0.5, 1, 2))
"""
from __future__ import annotations

import math

import numpy as np

from ...core.attrs import Attrs, Param
from ...core.base import ShapeError
from ...core.registry import NOT_DIFFERENTIABLE, OPAQUE, OpDef, RunCtx, register
from ._util import check_attr, fmt, forward_shape

PROPOSAL_PARAMS = {
    "rpn_pre_nms_top_n": Param("int", 6000, doc="boxes kept by score before NMS (<= 0: all)"),
    "rpn_post_nms_top_n": Param("int", 300, doc="boxes kept after NMS (output rows)"),
    "threshold": Param("float", 0.7, doc="IoU above which NMS drops a box"),
    "rpn_min_size": Param("int", 16, doc="minimum box side in image pixels (times scale)"),
    "scales": Param("floats", (4.0, 8.0, 16.0, 32.0), doc="anchor scales"),
    "ratios": Param("floats", (0.5, 1.0, 2.0), doc="anchor aspect ratios"),
    "feature_stride": Param("int", 16, doc="image pixels per feature-map cell"),
    "output_score": Param("bool", False, doc="also output the scores"),
    "iou_loss": Param("bool", False, doc="bbox_pred holds corner deltas"),
}


def base_anchors(a: Attrs) -> np.ndarray:
    """(ratios x scales, 4) anchors of one cell, MXNet's GenerateAnchors."""
    size = float(a["feature_stride"])
    ctr = 0.5 * (size - 1.0)
    out = []
    for r in a["ratios"]:
        for s in a["scales"]:
            w = math.floor(math.sqrt(math.floor(size * size / r)) + 0.5) * s
            h = math.floor(w / s * r + 0.5) * s
            out.append([ctr - 0.5 * (w - 1), ctr - 0.5 * (h - 1),
                        ctr + 0.5 * (w - 1), ctr + 0.5 * (h - 1)])
    return np.asarray(out)


def _proposal_shape(batched: bool):
    def rule(a: Attrs, ins: list) -> list:
        check_attr(a["rpn_post_nms_top_n"] > 0, "rpn_post_nms_top_n", a["rpn_post_nms_top_n"],
                   "must be positive")
        cls, box, info = (tuple(s) for s in ins)
        k = len(a["ratios"]) * len(a["scales"])
        if len(cls) != 4 or cls[1] != 2 * k:
            raise ShapeError(f"cls_prob must be (N, 2 * {k} anchors, H, W), got {fmt(cls)}")
        if box != (cls[0], 4 * k) + cls[2:]:
            raise ShapeError(f"bbox_pred must be {fmt((cls[0], 4 * k) + cls[2:])}, "
                             f"got {fmt(box)}")
        if info != (cls[0], 3):
            raise ShapeError(f"im_info must be ({cls[0]}, 3), got {fmt(info)}")
        if not batched and cls[0] != 1:
            raise ShapeError(f"Proposal takes one image (MultiProposal a batch), got {fmt(cls)}")
        rows = cls[0] * a["rpn_post_nms_top_n"]
        return [(rows, 5), (rows, 1)]
    return rule


def _decode(a: Attrs, anchors: np.ndarray, deltas: np.ndarray, info: np.ndarray) -> np.ndarray:
    if a["iou_loss"]:
        box = anchors + deltas
    else:
        w, h = anchors[:, 2] - anchors[:, 0] + 1, anchors[:, 3] - anchors[:, 1] + 1
        cx, cy = anchors[:, 0] + 0.5 * (w - 1), anchors[:, 1] + 0.5 * (h - 1)
        px, py = deltas[:, 0] * w + cx, deltas[:, 1] * h + cy
        pw, ph = np.exp(deltas[:, 2]) * w, np.exp(deltas[:, 3]) * h
        box = np.stack([px - 0.5 * (pw - 1), py - 0.5 * (ph - 1),
                        px + 0.5 * (pw - 1), py + 0.5 * (ph - 1)], 1)
    limit = np.array([info[1], info[0], info[1], info[0]]) - 1.0
    return np.maximum(np.minimum(box, limit), 0.0)


def propose(a: Attrs, score: np.ndarray, deltas: np.ndarray, info: np.ndarray) -> np.ndarray:
    """(rpn_post_nms_top_n, 5) rows [x1, y1, x2, y2, score] of one image: score (A, H, W),
    deltas (4A, H, W), info [height, width, scale]."""
    k, h, w = score.shape
    stride = a["feature_stride"]
    shift = np.stack(np.meshgrid(np.arange(w), np.arange(h)), -1).reshape(-1, 1, 2) * stride
    anchors = (base_anchors(a)[None] + np.tile(shift, 2)).reshape(-1, 4)  # (h*w*k, 4)
    d = deltas.reshape(k, 4, h, w).transpose(2, 3, 0, 1).reshape(-1, 4)
    box = _decode(a, anchors, d, info)
    s = score.transpose(1, 2, 0).reshape(-1).copy()
    cell = np.repeat(np.arange(h * w), k)
    s[(cell // w >= int(info[0] / stride)) | (cell % w >= int(info[1] / stride))] = -1.0
    min_size = a["rpn_min_size"] * info[2]
    small = ((box[:, 2] - box[:, 0] + 1) < min_size) | ((box[:, 3] - box[:, 1] + 1) < min_size)
    box[small] += np.array([-1, -1, 1, 1]) * (min_size / 2)
    s[small] = -1.0
    pre = len(s) if a["rpn_pre_nms_top_n"] <= 0 else min(a["rpn_pre_nms_top_n"], len(s))
    order = np.argsort(-s, kind="stable")[:pre]
    dets = np.concatenate([box[order], s[order, None]], 1)
    keep = nms_plus_one(dets, a["threshold"], min(a["rpn_post_nms_top_n"], pre))
    rows = np.arange(a["rpn_post_nms_top_n"]) % len(keep)
    return dets[np.asarray(keep)[rows]]


def nms_plus_one(dets: np.ndarray, thresh: float, limit: int) -> list[int]:
    """Greedy NMS of score-sorted boxes with pixel (+1) areas, up to ``limit`` kept."""
    area = (dets[:, 2] - dets[:, 0] + 1) * (dets[:, 3] - dets[:, 1] + 1)
    gone = np.zeros(len(dets), bool)
    keep: list[int] = []
    for i in range(len(dets)):
        if len(keep) >= limit:
            break
        if gone[i]:
            continue
        keep.append(i)
        w = np.maximum(0.0, np.minimum(dets[i, 2], dets[i + 1:, 2])
                       - np.maximum(dets[i, 0], dets[i + 1:, 0]) + 1)
        h = np.maximum(0.0, np.minimum(dets[i, 3], dets[i + 1:, 3])
                       - np.maximum(dets[i, 1], dets[i + 1:, 1]) + 1)
        inter = w * h
        gone[i + 1:] |= inter / (area[i] + area[i + 1:] - inter) > thresh
    return keep


def _proposal(a: Attrs, xs: list, ctx: RunCtx) -> list:
    cls, deltas, info = xs
    k = cls.shape[1] // 2
    rows = []
    for b in range(cls.shape[0]):
        dets = propose(a, cls[b, k:], deltas[b], info[b])
        rows.append(np.concatenate([np.full((len(dets), 1), float(b)), dets], 1))
    out = np.concatenate(rows)
    return [out[:, :5].astype(cls.dtype), out[:, 5:].astype(cls.dtype)]


for _name, _batched in (("_contrib_Proposal", False), ("_contrib_MultiProposal", True)):
    register(OpDef(
        _name, PROPOSAL_PARAMS, ("cls_prob", "bbox_pred", "im_info"),
        forward_shape(_proposal_shape(_batched)), _proposal, NOT_DIFFERENTIABLE, OPAQUE,
        outputs=("output", "score"), num_visible=lambda a: 2 if a["output_score"] else 1,
        lowering=("proposal", {}),
        doc=("Region proposals of a batch of images" if _batched else
             "Region proposals of one image") + ": (N * rpn_post_nms_top_n, 5) rows [batch "
        "index, x1, y1, x2, y2] from RPN scores (N, 2A, H, W), box deltas (N, 4A, H, W) and "
        "im_info (N, 3); with output_score also their scores."))
