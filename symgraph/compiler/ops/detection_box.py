"""MXNet's box utilities of detection models: ``contrib.box_iou``, ``contrib.box_encode``,
``contrib.box_decode``, ``contrib.box_nms`` (alias ``box_non_maximum_suppression``) with its
gradient scatter ``_backward_contrib_box_nms``, and ``contrib.bipartite_matching``.

Boxes are the last axis of 4 coordinates, ``corner`` (xmin, ymin, xmax, ymax) or ``center``
(x, y, width, height). The numpy references follow MXNet 1.9.1's kernels step by step (the order
of comparisons decides ties): NMS keeps, per batch item, the valid boxes (score above
``valid_thresh``, class not ``background_id``) sorted by score, stable, drops those whose IoU
with a kept one of the same class (any class with ``force_suppress``) exceeds
``overlap_thresh``, and writes the survivors first and -1 rows after. Its hidden second
output records each output row's source row (flat over the batch, -1 for none), which the
gradient scatter reads. IoU, matching, encoding and decoding have zero gradients in MXNet
(not differentiable here); the GPU lowerings are ``cuda/lowering_detection.py``.

Example::

    keep = sg.nd.contrib.box_nms(dets, overlap_thresh=0.45, topk=200, id_index=0)
"""
from __future__ import annotations

import numpy as np

from ...core.attrs import Attrs, Param
from ...core.base import ShapeError
from ...core.registry import INJECTIVE, NO_GRADIENT, NOT_DIFFERENTIABLE, OPAQUE, OpDef, RunCtx
from ...core.registry import alias, register
from ._util import check_attr, fmt, forward_shape
from .indexing import typed_like

FORMATS = ("corner", "center")


def to_corner(b: np.ndarray, fmt_: str) -> np.ndarray:
    """Boxes (..., 4) as corners."""
    if fmt_ == "corner":
        return b
    half = b[..., 2:4] / 2
    return np.concatenate([b[..., 0:2] - half, b[..., 0:2] + half], axis=-1)


def box_area(b: np.ndarray) -> np.ndarray:
    """Areas of corner boxes; a negative width or height gives 0 (MXNet's BoxArea)."""
    w, h = b[..., 2] - b[..., 0], b[..., 3] - b[..., 1]
    return np.where((w < 0) | (h < 0), 0.0, w * h)


def intersection(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Intersection areas of corner boxes ``a`` and ``b`` (broadcast)."""
    w = np.maximum(np.minimum(a[..., 2], b[..., 2]) - np.maximum(a[..., 0], b[..., 0]), 0.0)
    h = np.maximum(np.minimum(a[..., 3], b[..., 3]) - np.maximum(a[..., 1], b[..., 1]), 0.0)
    return w * h


def _last_is(shape: tuple, width: int, what: str) -> None:
    if len(shape) < 2 or shape[-1] != width:
        raise ShapeError(f"{what} must be (..., {width}), got {fmt(shape)}")


# --- box_iou ------------------------------------------------------------------------------

def _iou_shape(a: Attrs, ins: list) -> list:
    _last_is(tuple(ins[0]), 4, "lhs")
    _last_is(tuple(ins[1]), 4, "rhs")
    return [tuple(ins[0][:-1]) + tuple(ins[1][:-1])]


def _iou(a: Attrs, xs: list, ctx: RunCtx) -> list:
    lhs = to_corner(xs[0].reshape(-1, 4), a["format"])[:, None, :]
    rhs = to_corner(xs[1].reshape(-1, 4), a["format"])[None, :, :]
    inter = intersection(lhs, rhs)
    union = box_area(lhs) + box_area(rhs) - inter
    safe = np.where(inter > 0, union, 1.0)
    out = np.where(inter > 0, inter / safe, 0.0)
    return [out.astype(xs[0].dtype).reshape(xs[0].shape[:-1] + xs[1].shape[:-1])]


register(OpDef(
    "_contrib_box_iou", {"format": Param("str", "corner", FORMATS, "box encoding")},
    ("lhs", "rhs"), forward_shape(_iou_shape), _iou, NOT_DIFFERENTIABLE, OPAQUE,
    lowering=("detection", {"kind": "box_iou"}),
    doc="IoU of every lhs box (..., 4) with every rhs box (..., 4): shape lhs[:-1] + "
        "rhs[:-1]; 0 where boxes do not overlap."))


# --- box_encode / box_decode --------------------------------------------------------------

def _encode_shape(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    ins = list(ins)
    ins[4], ins[5] = (4,), (4,)
    if any(s is None for s in ins[:4]):
        return ins, outs
    s, m, anc, ref = (tuple(x) for x in ins[:4])
    _last_is(anc, 4, "anchors")
    _last_is(ref, 4, "refs")
    if len(anc) != 3 or s != anc[:2] or m != anc[:2] or ref[0] != anc[0]:
        raise ShapeError(f"samples {fmt(s)} and matches {fmt(m)} must be (B, N), anchors "
                         f"(B, N, 4), refs (B, M, 4); got anchors {fmt(anc)}, refs {fmt(ref)}")
    return ins, [anc, anc]


def _encode(a: Attrs, xs: list, ctx: RunCtx) -> list:
    samples, matches, anchors, refs, means, stds = xs
    m = refs.shape[1]
    idx = np.clip(matches.astype(np.int64), 0, m - 1)  # unmatched rows are masked below
    ref = np.take_along_axis(refs, idx[..., None], axis=1)
    rw, rh = ref[..., 2] - ref[..., 0], ref[..., 3] - ref[..., 1]
    aw, ah = anchors[..., 2] - anchors[..., 0], anchors[..., 3] - anchors[..., 1]
    valid = (samples > 0.5)[..., None]
    with np.errstate(all="ignore"):
        t = np.stack([((ref[..., 0] + rw * 0.5) - (anchors[..., 0] + aw * 0.5)) / aw,
                      ((ref[..., 1] + rh * 0.5) - (anchors[..., 1] + ah * 0.5)) / ah,
                      np.log(rw / aw), np.log(rh / ah)], axis=-1)
        targets = np.where(valid, (t - means) / stds, 0.0)
    mask = np.broadcast_to(valid, targets.shape).astype(anchors.dtype)
    return [targets.astype(anchors.dtype), mask]


register(OpDef(
    "_contrib_box_encode", {}, ("samples", "matches", "anchors", "refs", "means", "stds"),
    _encode_shape, _encode, NOT_DIFFERENTIABLE, OPAQUE, infer_type=typed_like(2),
    outputs=("targets", "masks"), lowering=("detection", {"kind": "box_encode"}),
    doc="Regression targets ((ref centre - anchor centre) / anchor size, log size ratios; "
        "minus means, over stds) of anchors (B, N, 4) toward refs (B, M, 4) picked by matches "
        "(B, N) where samples > 0.5; targets and masks (B, N, 4), 0 elsewhere."))


_DECODE_PARAMS = {**{f"std{k}": Param("float", 1.0, doc=f"scale of encoded value {k}")
                     for k in range(4)},
                  "clip": Param("float", -1.0, doc="upper bound of the log size deltas if > 0"),
                  "format": Param("str", "center", FORMATS, "the anchors' encoding")}


def _decode_shape(a: Attrs, ins: list) -> list:
    data, anc = tuple(ins[0]), tuple(ins[1])
    _last_is(anc, 4, "anchors")
    if len(data) != 3 or data[2] != 4 or len(anc) != 3 or anc[1] != data[1]:
        raise ShapeError(f"data must be (B, N, 4) and anchors (1, N, 4), got {fmt(data)} and "
                         f"{fmt(anc)}")
    return [data]


def _decode(a: Attrs, xs: list, ctx: RunCtx) -> list:
    x, anc = xs[0], xs[1][0]
    if a["format"] == "corner":
        w, h = anc[:, 2] - anc[:, 0], anc[:, 3] - anc[:, 1]
        cx, cy = anc[:, 0] + w * 0.5, anc[:, 1] + h * 0.5
    else:
        cx, cy, w, h = anc[:, 0], anc[:, 1], anc[:, 2], anc[:, 3]
    ox, oy = x[..., 0] * a["std0"] * w + cx, x[..., 1] * a["std1"] * h + cy
    dw, dh = x[..., 2] * a["std2"], x[..., 3] * a["std3"]
    if a["clip"] > 0:
        dw, dh = np.minimum(dw, a["clip"]), np.minimum(dh, a["clip"])
    ow, oh = np.exp(dw) * w * 0.5, np.exp(dh) * h * 0.5
    return [np.stack([ox - ow, oy - oh, ox + ow, oy + oh], axis=-1).astype(x.dtype)]


register(OpDef(
    "_contrib_box_decode", _DECODE_PARAMS, ("data", "anchors"), forward_shape(_decode_shape),
    _decode, NOT_DIFFERENTIABLE, OPAQUE, infer_type=typed_like(0),
    lowering=("detection", {"kind": "box_decode"}),
    doc="Corner boxes (B, N, 4) from regression offsets data (B, N, 4) around anchors "
        "(1, N, 4): the inverse of box_encode with stds std0..std3."))


# --- bipartite_matching -------------------------------------------------------------------

def _matching_shape(a: Attrs, ins: list) -> list:
    d = tuple(ins[0])
    if len(d) < 2:
        raise ShapeError(f"the score matrix must have at least 2 dimensions, got {fmt(d)}")
    return [d[:-1], d[:-2] + d[-1:]]


def _matching(a: Attrs, xs: list, ctx: RunCtx) -> list:
    x = xs[0]
    rows, cols = x.shape[-2:]
    flat = x.reshape(-1, rows * cols)
    rmark = np.full((flat.shape[0], rows), -1.0)
    cmark = np.full((flat.shape[0], cols), -1.0)
    for b, scores in enumerate(flat):
        order = np.argsort(scores if a["is_ascend"] else -scores, kind="stable")
        count = 0
        for j in order:
            r, c = divmod(int(j), cols)
            if rmark[b, r] != -1 or cmark[b, c] != -1:
                continue
            s = scores[j]
            if not (s < a["threshold"] if a["is_ascend"] else s > a["threshold"]):
                break
            rmark[b, r], cmark[b, c] = c, r
            count += 1
            if 0 < a["topk"] < count:  # MXNet stops one match after topk
                break
    return [rmark.reshape(x.shape[:-1]).astype(x.dtype),
            cmark.reshape(x.shape[:-2] + (cols,)).astype(x.dtype)]


register(OpDef(
    "_contrib_bipartite_matching",
    {"is_ascend": Param("bool", False, doc="smaller scores match first"),
     "threshold": Param("float", doc="scores past it (below, or above with is_ascend) stop"),
     "topk": Param("int", -1, doc="limit of matches, -1 for none")},
    ("data",), forward_shape(_matching_shape), _matching, NOT_DIFFERENTIABLE, OPAQUE,
    outputs=("row_marker", "col_marker"), lowering=("detection_nms", {"kind": "matching"}),
    doc="Greedy bipartite matching of a score matrix (..., rows, cols): best pairs first; "
        "each row's matched column and each column's matched row, -1 for none."))


# --- box_nms ------------------------------------------------------------------------------

NMS_PARAMS = {
    "overlap_thresh": Param("float", 0.5, doc="IoU above which the lower box is dropped"),
    "valid_thresh": Param("float", 0.0, doc="scores at or below it are invalid"),
    "topk": Param("int", -1, doc="boxes per item considered, by score; -1 for all"),
    "coord_start": Param("int", 2, doc="index of the first coordinate"),
    "score_index": Param("int", 1, doc="index of the score"),
    "id_index": Param("int", -1, doc="index of the class id, -1 for none"),
    "background_id": Param("int", -1, doc="class id of boxes that are dropped"),
    "force_suppress": Param("bool", False, doc="suppress across classes"),
    "in_format": Param("str", "corner", FORMATS, "encoding of the input boxes"),
    "out_format": Param("str", "corner", FORMATS, "encoding of the output boxes"),
}


def check_nms_columns(a: Attrs, width: int) -> None:
    """The score, id and coordinate columns fit in ``width`` and do not overlap."""
    cs, si, ii = a["coord_start"], a["score_index"], a["id_index"]
    check_attr(width >= (6 if ii >= 0 else 5), "data", width,
               "the last dimension must hold a score and 4 coordinates (and an id)")
    check_attr(0 <= cs and cs + 3 < width, "coord_start", cs, f"coordinates out of 0..{width - 1}")
    check_attr(0 <= si < width and not cs <= si <= cs + 3, "score_index", si,
               "out of range or among the coordinates")
    check_attr(ii < 0 or (ii < width and not cs <= ii <= cs + 3 and ii != si), "id_index", ii,
               "out of range or among the coordinates or the score")


def _nms_shape(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    d = ins[0] if ins[0] is not None else outs[0]
    if d is None:
        return ins, outs
    d = tuple(d)
    if len(d) < 2:
        raise ShapeError(f"data must be (..., num_boxes, width), got {fmt(d)}")
    check_nms_columns(a, d[-1])
    return [d], [d, d[:-1] + (1,)]


def nms_keep(a: Attrs, rows: np.ndarray) -> list[int]:
    """Indices of the rows (num_boxes, width) of one item that NMS keeps, in output order."""
    score = rows[:, a["score_index"]]
    valid = score > a["valid_thresh"]
    if a["id_index"] >= 0:
        valid &= rows[:, a["id_index"]] != a["background_id"]
    cand = [int(i) for i in np.argsort(-score, kind="stable") if valid[i]]
    topk = len(rows) if a["topk"] < 0 else min(len(rows), a["topk"])
    cand = cand[:topk]
    cs = a["coord_start"]
    boxes = to_corner(rows[:, cs:cs + 4], a["in_format"])
    area = box_area(boxes)
    alive = [True] * len(cand)
    for i, ref in enumerate(cand):
        if not alive[i]:
            continue
        for j in range(i + 1, len(cand)):
            pos = cand[j]
            if not alive[j] or (not a["force_suppress"] and a["id_index"] >= 0 and
                                int(rows[ref, a["id_index"]]) != int(rows[pos, a["id_index"]])):
                continue
            inter = intersection(boxes[ref], boxes[pos])
            with np.errstate(all="ignore"):
                if inter / (area[ref] + area[pos] - inter) > a["overlap_thresh"]:
                    alive[j] = False
    return [c for c, ok in zip(cand, alive) if ok]


def _convert_rows(a: Attrs, out: np.ndarray) -> None:
    """MXNet's in-place format change of the output rows (rows starting below 0 are kept)."""
    cs = a["coord_start"]
    c = out[..., cs:cs + 4]
    keep = c[..., 0] < 0
    if a["out_format"] == "center":
        new = np.concatenate([(c[..., 0:2] + c[..., 2:4]) / 2, c[..., 2:4] - c[..., 0:2]], -1)
    else:
        new = to_corner(c, "center")
    out[..., cs:cs + 4] = np.where(keep[..., None], c, new)


def _nms(a: Attrs, xs: list, ctx: RunCtx) -> list:
    x = xs[0]
    n, width = x.shape[-2:]
    flat = x.reshape(-1, n, width)
    out = np.full(flat.shape, -1.0)
    record = np.full(flat.shape[:2] + (1,), -1.0)
    for b, rows in enumerate(flat):
        if a["topk"] == 0:
            out[b], record[b, :, 0] = rows, np.arange(n) + b * n
            continue
        keep = nms_keep(a, rows)
        out[b, :len(keep)] = rows[keep]
        record[b, :len(keep), 0] = np.asarray(keep, dtype=np.int64) + b * n
    if a["in_format"] != a["out_format"]:
        _convert_rows(a, out)
    return [out.reshape(x.shape).astype(x.dtype),
            record.reshape(x.shape[:-1] + (1,)).astype(x.dtype)]


def _nms_backward(a: Attrs, xs: list, ctx: RunCtx) -> list:
    dy, record = xs
    width = dy.shape[-1]
    flat_dy, src = dy.reshape(-1, width), record.reshape(-1).astype(np.int64)
    dx = np.zeros_like(flat_dy)
    ok = src >= 0
    dx[src[ok]] = flat_dy[ok]
    return [dx.reshape(dy.shape)]


def _nms_backward_shape(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    d = ins[0] if ins[0] is not None else outs[0]
    if d is None:
        return ins, outs
    d = tuple(d)
    return [d, d[:-1] + (1,)], [d]


register(OpDef(
    "_contrib_box_nms", NMS_PARAMS, ("data",), _nms_shape, _nms,
    lambda c: [c.sym._backward_contrib_box_nms(c.ograds[0], c.outputs[1], **dict(c.attrs))],
    OPAQUE, outputs=("output", "record"), num_visible=1,
    lowering=("detection_nms", {"kind": "box_nms"}),
    doc="Non-maximum suppression per item of data (..., num_boxes, width): the kept boxes by "
        "descending score first, then rows of -1."))
alias("_contrib_box_non_maximum_suppression", "_contrib_box_nms")
register(OpDef(
    "_backward_contrib_box_nms", NMS_PARAMS, ("ograd", "record"), _nms_backward_shape,
    _nms_backward, NO_GRADIENT, INJECTIVE, infer_type=typed_like(0),
    lowering=("detection", {"kind": "nms_scatter"}),
    doc="Gradient of box_nms: each output row's gradient written back to the input row it "
        "came from (record), 0 for dropped rows."))
