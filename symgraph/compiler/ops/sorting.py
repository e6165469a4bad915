"""sort, argsort, topk, pick, and the two axis gather/scatter ops their gradients use.

Indices are floats by default (MXNet's ``dtype='float32'``). Ties keep the earlier element first
in either direction (a stable sort), so numpy references use ``kind='stable'``.
``_gather_axis(data, index)`` is numpy's take_along_axis (indices clipped) and
``_scatter_axis(ograd, index, data)`` its adjoint; each is the other's gradient.
"""
from __future__ import annotations

import numpy as np

from ...core.attrs import Attrs, Param
from ...core.base import ShapeError
from ...core.registry import INJECTIVE, NOT_DIFFERENTIABLE, OPAQUE, OpDef, RunCtx, register
from ._util import fmt, forward_shape, merge_dims
from .indexing import row_indices

AXIS = {"axis": Param("int", -1, doc="the axis to sort along")}
SORT_AXIS = {"axis": Param("int?", -1, doc="the axis to sort along; None: the flattened array")}


def flat(a: Attrs, x: np.ndarray) -> tuple[np.ndarray, Attrs]:
    """``x`` and ``a`` with ``axis=None`` turned into axis 0 of the flattened array."""
    if a["axis"] is not None:
        return x, a
    return x.reshape(-1), Attrs({**a, "axis": 0})


def flat_shape(a: Attrs, shape: tuple) -> tuple[tuple, Attrs]:
    if a["axis"] is not None:
        return tuple(shape), a
    return (int(np.prod(shape)),), Attrs({**a, "axis": 0})


def sort_key(x: np.ndarray, ascend: bool) -> np.ndarray:
    """``x``, or an array whose ascending order is ``x``'s descending one: -x for floats,
    ~x for integers (-x wraps for unsigned ones and for the most negative signed value)."""
    if ascend:
        return x
    return np.invert(x) if x.dtype.kind in "iu" else -x


def order(x: np.ndarray, axis: int, ascend: bool) -> np.ndarray:
    """Stable sorting permutation along ``axis`` (ties keep their order either way)."""
    return np.argsort(sort_key(x, ascend), axis=axis, kind="stable")


def top_order(x: np.ndarray, axis: int, ascend: bool, k: int) -> np.ndarray:
    """The first ``k`` of :func:`order` along ``axis``, equal to it, in linear time per row
    when k is small: select by partition, take ties at the k-th value in index order (what a
    stable sort keeps), and sort only the k chosen."""
    n = x.shape[axis]
    if 8 * k >= n:
        return np.take(order(x, axis, ascend), np.arange(k), axis=axis)
    key = np.moveaxis(sort_key(x, ascend), axis, -1)
    rows = key.reshape(-1, n)
    kth = np.take_along_axis(rows, np.argpartition(rows, k - 1, axis=1)[:, k - 1:k], 1)
    better, tie = rows < kth, rows == kth
    room = k - better.sum(axis=1, keepdims=True)
    chosen = better | (tie & (np.cumsum(tie, axis=1) <= room))
    idx = np.nonzero(chosen)[1].reshape(-1, k)
    idx = np.take_along_axis(idx, np.argsort(np.take_along_axis(rows, idx, 1), axis=1,
                                             kind="stable"), 1)
    return np.moveaxis(idx.reshape(key.shape[:-1] + (k,)), -1, axis)


def _check_axis(a: Attrs, shape: tuple) -> int:
    if not -len(shape) <= a["axis"] < len(shape):
        raise ShapeError(f"axis {a['axis']} out of range for shape {fmt(shape)}")
    return a["axis"] % len(shape)


def _same(a: Attrs, s: list) -> list:
    shape, a = flat_shape(a, s[0])
    _check_axis(a, shape)
    return [shape]


def _sort(a: Attrs, xs: list, ctx: RunCtx) -> list:
    x, a = flat(a, xs[0])
    return [np.take_along_axis(x, order(x, a["axis"], a["is_ascend"]), a["axis"])]


def _argsort(a: Attrs, xs: list, ctx: RunCtx) -> list:
    x, a = flat(a, xs[0])
    return [order(x, a["axis"], a["is_ascend"]).astype(a["dtype"])]


def _dtype_out(index: int):
    def rule(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
        outs = list(outs)
        outs[index] = np.dtype(a["dtype"])
        if len(outs) > 1 and ins[0] is not None:
            outs[0] = ins[0]
        return ins, outs
    return rule


def _sort_grad(c) -> list:
    return [_scatter_back(c, c.sym.argsort(c.inputs[0], axis=c.attrs["axis"],
                                           is_ascend=c.attrs["is_ascend"]))]


def _scatter_back(c, idx) -> object:
    """ograd 0 put back where ``idx`` took it from (through the flattened input for None)."""
    S, x, axis = c.sym, c.inputs[0], c.attrs["axis"]
    if axis is None:
        return S.reshape_like(S._scatter_axis(c.ograds[0], idx, S.reshape(x, shape=(-1,)),
                                              axis=0), x)
    return S._scatter_axis(c.ograds[0], idx, x, axis=axis)


register(OpDef(
    "sort", {**SORT_AXIS, "is_ascend": Param("bool", True)}, ("data",), forward_shape(_same), _sort,
    _sort_grad, OPAQUE, lowering=("rank_sort", {"mode": "value"}),
    doc="Sorted copy of data along axis (ascending unless is_ascend=False)."))
register(OpDef(
    "argsort", {**SORT_AXIS, "is_ascend": Param("bool", True), "dtype": Param("dtype", "float32")},
    ("data",), forward_shape(_same), _argsort, NOT_DIFFERENTIABLE, OPAQUE,
    infer_type=_dtype_out(0), lowering=("rank_sort", {"mode": "indices"}),
    doc="Indices that sort data along axis."))

RET_TYPES = ("value", "indices", "mask", "both")


def _topk_k(a: Attrs, shape: tuple) -> int:
    n = shape[_check_axis(a, shape)]
    k = n if a["k"] <= 0 else a["k"]
    if k > n:
        raise ShapeError(f"k={a['k']} exceeds the {n} elements along axis {a['axis']}")
    return k


def _topk_shape(a: Attrs, s: list) -> list:
    shape, a = flat_shape(a, s[0])
    if a["ret_typ"] == "mask":
        _check_axis(a, shape)
        return [shape]
    ax, k = _check_axis(a, shape), _topk_k(a, shape)
    out = shape[:ax] + (k,) + shape[ax + 1:]
    return [out, out] if a["ret_typ"] == "both" else [out]


def _topk(a: Attrs, xs: list, ctx: RunCtx) -> list:
    x, a = flat(a, xs[0])
    ax = a["axis"] % x.ndim
    k = _topk_k(a, x.shape)
    idx = top_order(x, ax, a["is_ascend"], k)
    if a["ret_typ"] == "mask":
        mask = np.zeros_like(x)
        np.put_along_axis(mask, idx, 1, ax)
        return [mask.reshape(xs[0].shape)]
    values, indices = np.take_along_axis(x, idx, ax), idx.astype(a["dtype"])
    return {"value": [values], "indices": [indices], "both": [values, indices]}[a["ret_typ"]]


def _topk_outputs(a: Attrs) -> tuple[str, ...]:
    return ("output", "indices") if a["ret_typ"] == "both" else ("output",)


def _topk_type(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    kind = a["ret_typ"]
    if kind == "indices":
        return ins, [np.dtype(a["dtype"])]
    if kind == "both":
        return ins, [ins[0], np.dtype(a["dtype"])]
    return ins, [ins[0]]


def _topk_grad(c) -> list:
    S, a, x = c.sym, c.attrs, c.inputs[0]
    if a["ret_typ"] not in ("value", "both"):
        return [None]
    idx = S.topk(x, axis=a["axis"], k=a["k"], ret_typ="indices", is_ascend=a["is_ascend"])
    return [_scatter_back(c, idx)]


register(OpDef(
    "topk", {**SORT_AXIS, "k": Param("int", 1), "ret_typ": Param("str", "indices", RET_TYPES),
             "is_ascend": Param("bool", False), "dtype": Param("dtype", "float32")},
    ("data",), forward_shape(_topk_shape), _topk, _topk_grad, OPAQUE, outputs=_topk_outputs,
    infer_type=_topk_type, lowering=("rank_sort", {"mode": "topk"}),
    doc="The k largest (smallest with is_ascend) along axis: values, indices, both, or a "
        "0/1 mask; k <= 0 takes all."))


def _gather_shape(a: Attrs, s: list) -> list:
    data, index = s
    ax = _check_axis(a, data)
    if len(index) != len(data) or index[:ax] + index[ax + 1:] != data[:ax] + data[ax + 1:]:
        raise ShapeError(f"index {fmt(index)} must match data {fmt(data)} except on axis {ax}")
    return [index]


def _gather(a: Attrs, xs: list, ctx: RunCtx) -> list:
    data, index = xs
    ax = a["axis"] % data.ndim
    idx = row_indices(index, data.shape[ax], a["mode"])
    return [np.take_along_axis(data, idx, ax)]


def _scatter(a: Attrs, xs: list, ctx: RunCtx) -> list:
    dy, index, data = xs
    ax = a["axis"] % data.ndim
    out = np.zeros(data.shape, dy.dtype)
    idx = row_indices(index, data.shape[ax], a["mode"])
    if idx.shape[ax] == 1:  # one index per row (pick): no two land on one cell, so a store
        np.put_along_axis(out, idx, dy, ax)  # (np.add.at: 2 ms on the LSTM model's logits)
        return [out]
    grid = list(np.indices(idx.shape, sparse=True))
    grid[ax] = idx
    np.add.at(out, tuple(grid), dy)
    return [out]


GATHER = {**AXIS, "mode": Param("str", "clip", ("clip", "wrap", "raise"),
                                 doc="out-of-range indices: clipped, wrapped, or a DataError "
                                     "(the GPU clips: a kernel cannot raise)")}

register(OpDef(
    "_gather_axis", GATHER, ("data", "index"), forward_shape(_gather_shape), _gather,
    lambda c: [c.sym._scatter_axis(c.ograds[0], c.inputs[1], c.inputs[0], **c.attrs), None],
    INJECTIVE, infer_type=lambda a, ins, outs: (ins, [ins[0]]),
    lowering=("axis_gather", {"scatter": False}),
    doc="out[.., j, ..] = data[.., index[.., j, ..], ..] along axis (indices clipped, wrapped "
        "or checked)."))
register(OpDef(
    "_scatter_axis", GATHER, ("ograd", "index", "data"),
    lambda a, ins, outs: (ins, [ins[2]] if ins[2] is not None else outs), _scatter,
    lambda c: [c.sym._gather_axis(c.ograds[0], c.inputs[1], **c.attrs), None, None],
    INJECTIVE, infer_type=lambda a, ins, outs: (ins, [ins[0]]),
    lowering=("axis_gather", {"scatter": True}),
    doc="Adjoint of _gather_axis: zeros shaped like data, ograd added at the indexed places."))


def _pick_shape(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    """MXNet's rule: the index is shaped like data without the axis, or with it kept as 1
    (either way, whatever ``keepdims``: Gluon's loss picks with 1-d labels and keepdims).
    Partial shapes (0 = unknown) merge, and the index's shape fills in from the data's."""
    data, index = ins
    if data is None:
        return ins, outs
    ax = _check_axis(a, data)
    dropped, kept = data[:ax] + data[ax + 1:], data[:ax] + (1,) + data[ax + 1:]
    if index is not None:
        form = dropped if len(index) == len(dropped) else kept
        index = merge_dims(tuple(index), tuple(form)) if len(index) == len(form) else None
        if index is None:
            raise ShapeError(f"index has shape {fmt(ins[1])}, expected {fmt(dropped)} or "
                             f"{fmt(kept)} for data {fmt(data)} along axis {a['axis']}")
    return [data, index], [kept if a["keepdims"] else dropped]


def _pick(a: Attrs, xs: list, ctx: RunCtx) -> list:
    data, index = xs
    ax = a["axis"] % data.ndim
    idx = index if index.ndim == data.ndim else np.expand_dims(index, ax)
    out = _gather(Attrs({"axis": ax, "mode": a["mode"]}), [data, idx], ctx)[0]
    return [out if a["keepdims"] else np.squeeze(out, ax)]


def _pick_grad(c) -> list:
    S, a, (x, index), dy = c.sym, c.attrs, c.inputs, c.ograds[0]
    if not a["keepdims"]:  # a negative axis of x is the same expand_dims axis of dy
        dy = S.expand_dims(dy, axis=a["axis"])
    shapes = [c.types.shape(e) if c.types is not None else None for e in c.node.inputs]
    if None in shapes:  # (types unknown: whichever shape the index has, dy's fits it)
        index = S.reshape_like(index, dy)
    elif len(shapes[1]) < len(shapes[0]):
        index = S.expand_dims(index, axis=a["axis"])
    return [S._scatter_axis(dy, index, x, axis=a["axis"], mode=a["mode"]), None]


register(OpDef(
    "pick", {**GATHER, "keepdims": Param("bool", False)}, ("data", "index"),
    _pick_shape, _pick, _pick_grad, INJECTIVE, partial_shapes=True,
    infer_type=lambda a, ins, outs: (ins, [ins[0]]),
    lowering=("axis_gather", {"scatter": False}),
    doc="data[.., index[..], ..]: one element along axis per position (clip or wrap)."))
