"""MXNet's SSD ops: ``contrib.MultiBoxPrior`` (anchors of a feature map),
``contrib.MultiBoxTarget`` (training targets of anchors against padded ground truth) and
``contrib.MultiBoxDetection`` (decoded, per-class suppressed detections).

The numpy references follow MXNet 1.9.1's CPU code step by step, ties included: the target's
greedy matching takes, while some ground truth is unmatched, the (anchor, truth) pair of largest
IoU (first in anchor order, then truth order, on equal IoU); then every other anchor whose best
IoU exceeds ``overlap_threshold`` is positive; with ``negative_mining_ratio > 0`` the negatives
are the anchors of lowest background probability among those whose best IoU is below
``negative_mining_thresh`` (stable order), at most ratio x positives, the rest keep
``ignore_label``. A label row whose first value is -1 ends an item's ground truth. Detection
takes each anchor's best non-background class (a score below ``threshold`` makes it background),
decodes the box with the variances, drops background rows, sorts by score (stable), keeps
``nms_topk`` and suppresses boxes of the same class (any class with ``force_suppress``) whose
IoU with a higher one reaches ``nms_threshold``; suppressed and unused rows have class -1.

All three have zero gradients in MXNet (not differentiable here). The GPU lowerings
(``cuda/lowering_detection.py``) run the prior as a kernel per anchor and the target and the
detection as one block per batch item.

Example::

    anchors = sg.sym.contrib.MultiBoxPrior(feat, sizes=(0.2, 0.27), ratios=(1, 2, 0.5))
    loc_t, loc_m, cls_t = sg.sym.contrib.MultiBoxTarget(anchors, label, cls_pred)
"""
from __future__ import annotations

import math

import numpy as np

from ...core.attrs import Attrs, Param
from ...core.base import ShapeError
from ...core.registry import NOT_DIFFERENTIABLE, OPAQUE, OpDef, RunCtx, register
from ._util import check_attr, fmt, forward_shape
from .detection_box import box_area, intersection
from .indexing import typed_like

_VAR = {"variances": Param("floats", (0.1, 0.1, 0.2, 0.2), doc="scales of the box offsets")}
PRIOR_PARAMS = {
    "sizes": Param("floats", (1.0,), doc="anchor sizes (fractions of the image)"),
    "ratios": Param("floats", (1.0,), doc="anchor aspect ratios"),
    "clip": Param("bool", False, doc="clip anchors into [0, 1]"),
    "steps": Param("floats", (-1.0, -1.0), doc="(y, x) step between centres; -1 for 1/size"),
    "offsets": Param("floats", (0.5, 0.5), doc="(y, x) centre offset within a cell"),
}


def prior_count(a: Attrs) -> int:
    """Anchors per feature-map cell: every size at the first ratio, then the other ratios."""
    return len(a["sizes"]) + len(a["ratios"]) - 1


def _check_prior(a: Attrs) -> None:
    check_attr(len(a["sizes"]) > 0 and len(a["ratios"]) > 0, "sizes", a["sizes"],
               "sizes and ratios must not be empty")
    check_attr(len(a["steps"]) == 2 and len(a["offsets"]) == 2, "steps", a["steps"],
               "steps and offsets are (y, x) pairs")
    check_attr(a["steps"][0] * a["steps"][1] >= 0, "steps", a["steps"],
                "give both steps or neither")


def _prior_shape(a: Attrs, ins: list) -> list:
    _check_prior(a)
    d = tuple(ins[0])
    if len(d) != 4:
        raise ShapeError(f"data must be (N, C, H, W), got {fmt(d)}")
    return [(1, d[2] * d[3] * prior_count(a), 4)]


def prior_steps(a: Attrs, h: int, w: int) -> tuple[float, float]:
    """(step_y, step_x): the given steps, or 1/H and 1/W."""
    sy, sx = a["steps"]
    return (1.0 / h, 1.0 / w) if sy <= 0 or sx <= 0 else (sy, sx)


def prior_half_sizes(a: Attrs, h: int, w: int) -> list[tuple[float, float]]:
    """(half width, half height) of each anchor of a cell, in MXNet's order."""
    pairs = [(s, a["ratios"][0]) for s in a["sizes"]]
    pairs += [(a["sizes"][0], r) for r in a["ratios"][1:]]
    return [(s * h / w * math.sqrt(r) / 2, s / math.sqrt(r) / 2) for s, r in pairs]


def _prior(a: Attrs, xs: list, ctx: RunCtx) -> list:
    h, w = xs[0].shape[2:]
    sy, sx = prior_steps(a, h, w)
    cy = (np.arange(h) + a["offsets"][0]) * sy
    cx = (np.arange(w) + a["offsets"][1]) * sx
    half = np.asarray(prior_half_sizes(a, h, w))  # (k, 2)
    cyx = np.stack(np.meshgrid(cy, cx, indexing="ij"), -1).reshape(-1, 1, 2)
    x0, y0 = cyx[..., 1] - half[:, 0], cyx[..., 0] - half[:, 1]
    x1, y1 = cyx[..., 1] + half[:, 0], cyx[..., 0] + half[:, 1]
    out = np.stack([x0, y0, x1, y1], -1).reshape(1, -1, 4)
    if a["clip"]:
        out = np.clip(out, 0.0, 1.0)
    return [out.astype(xs[0].dtype)]


register(OpDef(
    "_contrib_MultiBoxPrior", PRIOR_PARAMS, ("data",), forward_shape(_prior_shape), _prior,
    NOT_DIFFERENTIABLE, OPAQUE, lowering=("detection", {"kind": "prior"}),
    doc="Anchor boxes (1, H*W*(len(sizes)+len(ratios)-1), 4), corners in [0, 1] image "
        "units, centred on each cell of data (N, C, H, W)."))


# --- MultiBoxTarget -------------------------------------------------------------------------

TARGET_PARAMS = {
    "overlap_threshold": Param("float", 0.5, doc="IoU above which an anchor is positive"),
    "ignore_label": Param("float", -1.0, doc="class target of ignored anchors"),
    "negative_mining_ratio": Param("float", -1.0, doc="negatives per positive; -1: all"),
    "negative_mining_thresh": Param("float", 0.5, doc="IoU below which an anchor may be "
                                                      "a mined negative"),
    "minimum_negative_samples": Param("int", 0, doc="accepted, unused (as in MXNet)"),
    **_VAR,
}


def _check_variances(a: Attrs) -> None:
    check_attr(len(a["variances"]) == 4, "variances", a["variances"], "must be 4 values")


def _target_shape(a: Attrs, ins: list) -> list:
    _check_variances(a)
    anc, lab, pred = (tuple(s) for s in ins)
    if len(anc) != 3 or anc[0] != 1 or anc[2] != 4:
        raise ShapeError(f"anchor must be (1, num_anchors, 4), got {fmt(anc)}")
    if len(lab) != 3 or lab[2] < 5:
        raise ShapeError(f"label must be (batch, num_labels, >=5), got {fmt(lab)}")
    if len(pred) != 3 or pred[2] != anc[1] or pred[0] != lab[0]:
        raise ShapeError(f"cls_pred must be (batch, classes, num_anchors) = (..., {anc[1]}), "
                         f"got {fmt(pred)} with label {fmt(lab)}")
    return [(lab[0], anc[1] * 4), (lab[0], anc[1] * 4), (lab[0], anc[1])]


def overlaps(anchors: np.ndarray, gt: np.ndarray) -> np.ndarray:
    """IoU (anchors, truths) of corner boxes, 0 where the union is not positive."""
    a, g = anchors[:, None, :], gt[None, :, :]
    inter = intersection(a, g)
    union = (a[..., 2] - a[..., 0]) * (a[..., 3] - a[..., 1]) + \
        (g[..., 2] - g[..., 0]) * (g[..., 3] - g[..., 1]) - inter
    return np.where(union != 0, inter / np.where(union != 0, union, 1.0), 0.0)


def _greedy(iou: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(flags, best IoU, best truth) per anchor after the greedy matching and thresholding
    preparation: flags 1 for the greedy matches, -1 otherwise."""
    n_anchor, n_gt = iou.shape
    flags = np.full(n_anchor, -1)
    best = np.full(n_anchor, -1.0)
    match = np.full(n_anchor, -1)
    gt_done = np.zeros(n_gt, bool)
    while not gt_done.all():
        masked = np.where((flags[:, None] == 1) | gt_done[None, :], -np.inf, iou)
        j, k = np.unravel_index(np.argmax(masked), masked.shape)  # first max, row-major
        if not masked[j, k] > 1e-6:
            break
        best[j], match[j], flags[j], gt_done[k] = masked[j, k], k, 1, True
    return flags, best, match


def target_flags(a: Attrs, iou: np.ndarray, pred: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(flags, matched truth) per anchor of one item: 1 positive, 0 negative, -1 ignored."""
    flags, best, match = _greedy(iou)
    free = flags != 1
    best = np.where(free, iou.max(1), best)
    match = np.where(free, iou.argmax(1), match)
    n_pos = int((flags == 1).sum())
    if a["overlap_threshold"] > 0:
        pos = free & (best > a["overlap_threshold"])
        flags[pos] = 1
        n_pos += int(pos.sum())
    if a["negative_mining_ratio"] <= 0:
        flags[flags != 1] = 0
        return flags, match
    n_neg = min(int(n_pos * a["negative_mining_ratio"]), len(flags) - n_pos)
    if n_neg > 0:
        cand = np.nonzero((flags == -1) & (best < a["negative_mining_thresh"]))[0]
        logits = pred[:, cand]
        e = np.exp(logits - logits.max(0))
        background = e[0] / e.sum(0)
        order = np.argsort(background, kind="stable")  # MXNet sorts -prob descending
        flags[cand[order[:n_neg]]] = 0
    return flags, match


def encode_targets(anchors: np.ndarray, gt: np.ndarray, var: tuple) -> np.ndarray:
    """SSD's box regression targets of anchors toward truths (both corner boxes)."""
    aw, ah = anchors[:, 2] - anchors[:, 0], anchors[:, 3] - anchors[:, 1]
    ax, ay = (anchors[:, 0] + anchors[:, 2]) / 2, (anchors[:, 1] + anchors[:, 3]) / 2
    gw, gh = gt[:, 2] - gt[:, 0], gt[:, 3] - gt[:, 1]
    gx, gy = (gt[:, 0] + gt[:, 2]) / 2, (gt[:, 1] + gt[:, 3]) / 2
    with np.errstate(all="ignore"):
        return np.stack([(gx - ax) / aw / var[0], (gy - ay) / ah / var[1],
                         np.log(gw / aw) / var[2], np.log(gh / ah) / var[3]], -1)


def _target(a: Attrs, xs: list, ctx: RunCtx) -> list:
    anchors, labels, preds = xs[0][0], xs[1], xs[2]
    b, n = labels.shape[0], anchors.shape[0]
    loc = np.zeros((b, n, 4))
    mask = np.zeros((b, n, 4))
    cls = np.full((b, n), a["ignore_label"])
    for i in range(b):
        ends = np.nonzero(labels[i, :, 0] == -1)[0]
        gt = labels[i, :ends[0] if len(ends) else len(labels[i])]
        if len(gt) == 0:
            continue
        flags, match = target_flags(a, overlaps(anchors, gt[:, 1:5]), preds[i])
        pos, neg = flags == 1, flags == 0
        cls[i, neg] = 0
        cls[i, pos] = gt[match[pos], 0] + 1
        mask[i, pos] = 1
        loc[i, pos] = encode_targets(anchors[pos], gt[match[pos], 1:5], a["variances"])
    dt = xs[0].dtype
    return [loc.reshape(b, -1).astype(dt), mask.reshape(b, -1).astype(dt), cls.astype(dt)]


register(OpDef(
    "_contrib_MultiBoxTarget", TARGET_PARAMS, ("anchor", "label", "cls_pred"),
    forward_shape(_target_shape), _target, NOT_DIFFERENTIABLE, OPAQUE,
    infer_type=typed_like(0), outputs=("loc_target", "loc_mask", "cls_target"),
    lowering=("multibox", {"kind": "multibox_target"}),
    doc="SSD training targets of anchors (1, A, 4) for labels (B, L, 5+) [class, xmin, "
        "ymin, xmax, ymax] padded with -1 rows and predictions (B, classes, A): box targets "
        "and masks (B, A*4), class targets (B, A) (0 background, class + 1 positive)."))


# --- MultiBoxDetection ----------------------------------------------------------------------

DETECTION_PARAMS = {
    "clip": Param("bool", True, doc="clip boxes into [0, 1]"),
    "threshold": Param("float", 0.01, doc="scores below it make an anchor background"),
    "background_id": Param("int", 0, doc="background class (class 0, as MXNet assumes)"),
    "nms_threshold": Param("float", 0.5, doc="IoU at which a box is suppressed"),
    "force_suppress": Param("bool", False, doc="suppress across classes"),
    **_VAR,
    "nms_topk": Param("int", -1, doc="boxes kept before suppression, -1 for all"),
}


def _detection_shape(a: Attrs, ins: list) -> list:
    _check_variances(a)
    prob, loc, anc = (tuple(s) for s in ins)
    if len(prob) != 3 or len(loc) != 2 or len(anc) != 3 or anc[2] != 4:
        raise ShapeError(f"cls_prob must be (B, classes, A), loc_pred (B, A*4), anchor "
                         f"(1, A, 4); got {fmt(prob)}, {fmt(loc)}, {fmt(anc)}")
    if prob[2] != anc[1] or loc[1] != 4 * anc[1]:
        raise ShapeError(f"anchor counts differ: cls_prob {fmt(prob)}, loc_pred {fmt(loc)}, "
                         f"anchor {fmt(anc)}")
    return [(prob[0], anc[1], 6)]


def decode_boxes(a: Attrs, anchors: np.ndarray, loc: np.ndarray) -> np.ndarray:
    """SSD's decoding of offsets ``loc`` (A, 4) around corner anchors (A, 4)."""
    v = a["variances"]
    aw, ah = anchors[:, 2] - anchors[:, 0], anchors[:, 3] - anchors[:, 1]
    ax, ay = (anchors[:, 0] + anchors[:, 2]) / 2, (anchors[:, 1] + anchors[:, 3]) / 2
    ox, oy = loc[:, 0] * v[0] * aw + ax, loc[:, 1] * v[1] * ah + ay
    ow, oh = np.exp(loc[:, 2] * v[2]) * aw / 2, np.exp(loc[:, 3] * v[3]) * ah / 2
    out = np.stack([ox - ow, oy - oh, ox + ow, oy + oh], -1)
    return np.clip(out, 0.0, 1.0) if a["clip"] else out


def detect_item(a: Attrs, prob: np.ndarray, loc: np.ndarray, anchors: np.ndarray) -> np.ndarray:
    """The (A, 6) detections [class, score, xmin, ymin, xmax, ymax] of one item."""
    n = prob.shape[1]
    out = np.full((n, 6), -1.0)
    cls = prob[1:].argmax(0) + 1 if prob.shape[0] > 1 else np.zeros(n, np.int64)
    score = prob[1:].max(0) if prob.shape[0] > 1 else np.full(n, -1.0)
    cls = np.where(score < a["threshold"], 0, cls)
    rows = np.concatenate([(cls - 1)[:, None], score[:, None],
                           decode_boxes(a, anchors, loc.reshape(n, 4))], 1)
    rows = rows[rows[:, 0] >= 0]
    out[:len(rows)] = rows
    if len(rows) == 0 or not 0 < a["nms_threshold"] <= 1:
        return out
    order = np.argsort(-rows[:, 1], kind="stable")
    keep = len(order) if not 0 < a["nms_topk"] < len(order) else a["nms_topk"]
    out[keep:len(rows), 0] = -1
    out[:keep] = rows[order[:keep]]
    area = box_area(out[:keep, 2:])
    for i in range(keep):
        if out[i, 0] < 0:
            continue
        for j in range(i + 1, keep):
            if out[j, 0] < 0 or not (a["force_suppress"] or out[i, 0] == out[j, 0]):
                continue
            inter = intersection(out[i, 2:], out[j, 2:])
            union = area[i] + area[j] - inter
            if (inter / union if union > 0 else 0.0) >= a["nms_threshold"]:
                out[j, 0] = -1
    return out


def _detection(a: Attrs, xs: list, ctx: RunCtx) -> list:
    prob, loc, anchors = xs
    out = np.stack([detect_item(a, prob[i], loc[i], anchors[0]) for i in range(len(prob))])
    return [out.astype(prob.dtype)]


register(OpDef(
    "_contrib_MultiBoxDetection", DETECTION_PARAMS, ("cls_prob", "loc_pred", "anchor"),
    forward_shape(_detection_shape), _detection, NOT_DIFFERENTIABLE, OPAQUE,
    lowering=("multibox", {"kind": "multibox_detection"}),
    doc="SSD detections (B, A, 6) [class, score, xmin, ymin, xmax, ymax] from class "
        "probabilities (B, classes, A), offsets (B, A*4) and anchors (1, A, 4); class -1 "
        "marks dropped rows."))
