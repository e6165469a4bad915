"""N-d indexing ops of MXNet: gather_nd, scatter_nd and gather_nd's gradient
``_backward_gather_nd`` (a scatter-add), ravel_multi_index / unravel_index, index_copy,
index_array, arange_like (the last three as ``sg.sym.contrib.X``) and fill_element_0index;
``choose_element_0index`` is MXNet's alias of ``pick``.

Indices are integer-valued arrays of any dtype (MXNet passes float32), truncated like
``astype(int64)``. gather_nd, scatter_nd and index_copy read a negative index once from the
end of its axis, as MXNet 1.9.1 does; an index still out of range is an IndexDataError (a
DataError and, as MXNet's, an IndexError) on the CPU, and is clamped into range on the GPU,
where a kernel cannot raise.
"""
from __future__ import annotations

from math import prod
from typing import Any

import numpy as np

from ...core.attrs import Attrs, Param
from ...core.base import IndexDataError, ShapeError
from ...core.registry import (INJECTIVE, NO_GRADIENT, NOT_DIFFERENTIABLE, REDUCE, OpDef, RunCtx,
                        alias, register)
from ._util import fmt, forward_shape, known_input_shape, merge_dims, norm_axes, norm_axis
from .indexing import typed_like

Shape = tuple[int, ...]
INDEX_DTYPES = ("int8", "uint8", "int32", "int64")
"""Integer dtypes the index families also lower (as data, not only as indices)."""


def checked_index(idx: np.ndarray, size: int, what: str) -> np.ndarray:
    """``idx`` as int64 with a negative index read from the end; IndexDataError naming ``what``
    and the offending value when one is still outside ``[0, size)``."""
    i = idx.astype(np.int64)
    i = np.where(i < 0, i + size, i)
    bad = (i < 0) | (i >= size)
    if bad.any():
        raise IndexDataError(f"{what}: index {int(idx.reshape(-1)[bad.reshape(-1)][0])} is "
                             f"out of range for an axis of size {size}")
    return i


def nd_positions(data_shape: Shape, idx: np.ndarray, op: str) -> tuple:
    """The index tuple ``idx`` (M, ...) selects in an array of ``data_shape``."""
    return tuple(checked_index(idx[j], data_shape[j], f"{op} (axis {j})")
                 for j in range(idx.shape[0]))


def _nd_prefix(data: Shape, idx: Shape) -> int:
    """M, the number of leading data axes the indices address (indices are (M, Y...))."""
    if not idx or not 1 <= idx[0] <= len(data):
        raise ShapeError(f"indices {fmt(idx)} must be (M, ...) with 1 <= M <= {len(data)}, the "
                         f"data's rank (data {fmt(data)})")
    return idx[0]


def _gather_nd_shape(a: Attrs, s: list) -> list:
    data, idx = s
    return [tuple(idx[1:]) + tuple(data[_nd_prefix(data, idx):])]


def _gather_nd(a: Attrs, xs: list, ctx: RunCtx) -> list:
    data, idx = xs
    return [data[nd_positions(data.shape, idx, "gather_nd")].copy()]


def _gather_nd_grad(c: Any) -> list:
    shape = known_input_shape(c, 0)
    return [c.sym._backward_gather_nd(c.ograds[0], c.inputs[1], shape=shape), None]


register(OpDef(
    "gather_nd", {}, ("data", "indices"), forward_shape(_gather_nd_shape), _gather_nd,
    _gather_nd_grad, INJECTIVE, infer_type=typed_like(0),
    lowering=("nd_index", {"kind": "gather", "dtypes": ("float32", "float16", "bfloat16")
                           + INDEX_DTYPES}),
    doc="output[y..., rest...] = data[indices[0, y...], ..., indices[M-1, y...], rest...] "
        "for indices of shape (M, Y...); the gradient is _backward_gather_nd (a scatter-add)."))

SCATTER_PARAMS = {"shape": Param("shape", doc="the output's shape")}


def _scatter_shape(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    """Output ``shape``; data (Y..., shape[M:]) from indices (M, Y...), in both directions."""
    out = tuple(a["shape"])
    data, idx = ins
    if idx is None:
        return ins, [out]
    want = tuple(idx[1:]) + out[_nd_prefix(out, idx):]
    if data is not None and merge_dims(tuple(data), want) is None:
        raise ShapeError(f"data has shape {fmt(data)}, inferred {fmt(want)} from indices "
                         f"{fmt(idx)} and shape {fmt(out)}")
    return [want, idx], [out]


def _scatter_compute(add: bool, op: str) -> Any:
    def compute(a: Attrs, xs: list, ctx: RunCtx) -> list:
        data, idx = xs
        out = np.zeros(a["shape"], dtype=data.dtype)
        where = nd_positions(out.shape, idx, op)
        if add:  # duplicates sum: the adjoint of gather_nd
            np.add.at(out, where, data)
        else:  # duplicates: the last one written stays (MXNet's CPU order)
            out[where] = data
        return [out]
    return compute


def _gather_back(c: Any) -> list:
    return [c.sym.gather_nd(c.ograds[0], c.inputs[1]), None]


register(OpDef(
    "scatter_nd", SCATTER_PARAMS, ("data", "indices"), _scatter_shape,
    _scatter_compute(False, "scatter_nd"), _gather_back, INJECTIVE, infer_type=typed_like(0),
    lowering=("nd_index", {"kind": "scatter", "dtypes": ("float32", "float16", "bfloat16")
                           + INDEX_DTYPES}),
    doc="zeros(shape) with data[y..., rest...] written at indices[:, y...] (gather_nd's "
        "inverse); with repeated indices one of the values is kept (the last on the CPU)."))
register(OpDef(
    "_backward_gather_nd", SCATTER_PARAMS, ("data", "indices"), _scatter_shape,
    _scatter_compute(True, "_backward_gather_nd"), _gather_back, REDUCE,
    infer_type=typed_like(0),
    lowering=("nd_index", {"kind": "add", "dtypes": ("float32", "float16", "bfloat16",
                                                     "int32", "int64")}),
    doc="Gradient of gather_nd: zeros(shape) with data[y...] added at indices[:, y...] "
        "(repeated indices sum)."))

# -- ravel_multi_index, unravel_index -----------------------------------------------------------

RAVEL_PARAMS = {"shape": Param("shape", doc="the shape the (multi-)indices address")}


def _ravel_shape(a: Attrs, s: list) -> list:
    if not s[0] or s[0][0] != len(a["shape"]):
        raise ShapeError(f"data {fmt(s[0])} must be (M, ...) with M = {len(a['shape'])}, the "
                         f"rank of shape={a['shape']}")
    return [tuple(s[0][1:])]


def _row_strides(shape: Shape) -> np.ndarray:
    return np.array([prod(shape[j + 1:]) for j in range(len(shape))], dtype=np.int64)


def _ravel(a: Attrs, xs: list, ctx: RunCtx) -> list:
    idx = xs[0].astype(np.int64)
    flat = np.tensordot(_row_strides(a["shape"]), idx, axes=1)
    return [flat.astype(xs[0].dtype)]


def _unravel(a: Attrs, xs: list, ctx: RunCtx) -> list:
    # MXNet's arithmetic, C's truncating / and %: an index past the end grows the first
    # coordinate, a negative one gives negative coordinates (numpy would raise).
    rest, out = xs[0].astype(np.int64), []
    for d in reversed(a["shape"][1:]):
        out.append(np.fmod(rest, d))
        rest = (rest - out[-1]) // d
    return [np.stack([rest] + out[::-1]).astype(xs[0].dtype)]


register(OpDef(
    "ravel_multi_index", RAVEL_PARAMS, ("data",), forward_shape(_ravel_shape), _ravel,
    NOT_DIFFERENTIABLE, INJECTIVE, lowering=("ravel", {"dtypes": ("float32", "float16",
                                                                  "bfloat16", "int32",
                                                                  "int64")}),
    doc="Flat indices into an array of `shape` of the multi-indices data (M, ...): "
        "sum_j data[j] * prod(shape[j+1:]) (not range-checked, as MXNet)."))
register(OpDef(
    "unravel_index", RAVEL_PARAMS, ("data",),
    forward_shape(lambda a, s: [(len(a["shape"]),) + tuple(s[0])]), _unravel,
    NOT_DIFFERENTIABLE, INJECTIVE, lowering=("unravel", {"dtypes": ("float32", "float16",
                                                                    "bfloat16", "int32",
                                                                    "int64")}),
    doc="Multi-indices (len(shape), ...) of the flat indices data in an array of `shape`; "
        "the first coordinate is not wrapped (an index past the end gives one past its axis)."))

# -- index_copy, fill_element_0index -------------------------------------------------------------


def _index_copy_shape(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    """old and the output share a shape; new is (len(index), old[1:]) (both directions)."""
    old = ins[0] if ins[0] is not None else outs[0]
    index, new = ins[1], ins[2]
    if index is not None and len(index) != 1:
        raise ShapeError(f"index_vector must be 1-D, got {fmt(index)}")
    if old is None:
        return ins, outs
    if index is not None:
        want = (index[0],) + tuple(old[1:])
        if new is not None and tuple(new) != want:
            raise ShapeError(f"new_tensor has shape {fmt(new)}, inferred {fmt(want)} from "
                             f"old_tensor {fmt(old)} and index_vector {fmt(index)}")
        new = want
    return [old, index, new], [old]


def _index_copy(a: Attrs, xs: list, ctx: RunCtx) -> list:
    old, index, new = xs
    out = old.copy()
    out[checked_index(index, old.shape[0], "index_copy")] = new
    return [out]


def _index_copy_grad(c: Any) -> list:
    S, dy, index, new = c.sym, c.ograds[0], c.inputs[1], c.inputs[2]
    return [S._contrib_index_copy(dy, index, S.zeros_like(new)), None,
            S.take(dy, index, axis=0)]


def _data_type(data: int, index: int) -> Any:
    """Dtype rule: every input but ``index`` (an index input of any dtype) shares the output's."""
    def rule(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
        known = next((t for k, t in enumerate(list(ins) + list(outs))
                      if t is not None and k != index), None)
        if known is None:
            return ins, outs
        ins = [t if k == index else known for k, t in enumerate(ins)]
        return ins, [known]
    return rule


register(OpDef(
    "_contrib_index_copy", {}, ("old_tensor", "index_vector", "new_tensor"), _index_copy_shape,
    _index_copy, _index_copy_grad, INJECTIVE, infer_type=_data_type(0, 1),
    lowering=("index_copy", {"dtypes": ("float32", "float16", "bfloat16") + INDEX_DTYPES}),
    doc="old_tensor with its rows index_vector[j] replaced by new_tensor[j] "
        "(sg.sym.contrib.index_copy)."))


def _fill_shape(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    """lhs (R, C) and the output share a shape; mhs and rhs are (R,)."""
    lhs = ins[0] if ins[0] is not None else outs[0]
    if lhs is None:
        return ins, outs
    if len(lhs) != 2:
        raise ShapeError(f"lhs must be 2-D, got {fmt(lhs)}")
    for k, s in ((1, ins[1]), (2, ins[2])):
        if s is not None and tuple(s) != (lhs[0],):
            raise ShapeError(f"{('mhs', 'rhs')[k - 1]} has shape {fmt(s)}, inferred "
                             f"{fmt((lhs[0],))} from lhs {fmt(lhs)}")
    return [lhs, (lhs[0],), (lhs[0],)], [lhs]


def _fill_element(a: Attrs, xs: list, ctx: RunCtx) -> list:
    lhs, mhs, rhs = xs
    out = lhs.copy()
    col = checked_index(rhs, lhs.shape[1], "fill_element_0index")
    out[np.arange(lhs.shape[0]), col] = mhs
    return [out]


register(OpDef(
    "fill_element_0index", {}, ("lhs", "mhs", "rhs"), _fill_shape, _fill_element,
    NO_GRADIENT, INJECTIVE, infer_type=_data_type(0, 2),
    lowering=("fill_element", {"dtypes": ("float32", "float16", "bfloat16") + INDEX_DTYPES}),
    doc="lhs (R, C) with lhs[r, rhs[r]] set to mhs[r]; MXNet registers no gradient."))
alias("choose_element_0index", "pick")

# -- index_array, arange_like ---------------------------------------------------------------------


def _index_axes(a: Attrs, ndim: int) -> tuple[int, ...]:
    return tuple(range(ndim)) if a["axes"] is None else norm_axes(a["axes"], ndim, "axes")


def _index_array(a: Attrs, xs: list, ctx: RunCtx) -> list:
    shape = xs[0].shape
    grids = np.indices(shape, dtype=np.int64)
    axes = _index_axes(a, len(shape))
    if not axes:  # 0-d data (or axes=()): no coordinate to give
        return [np.zeros(shape + (0,), np.int64)]
    return [np.stack([grids[k] for k in axes], axis=-1)]


register(OpDef(
    "_contrib_index_array", {"axes": Param("shape?", None)}, ("data",),
    forward_shape(lambda a, s: [tuple(s[0]) + (len(_index_axes(a, len(s[0]))),)]),
    _index_array, NOT_DIFFERENTIABLE, INJECTIVE,
    infer_type=lambda a, ins, outs: (ins, [np.dtype(np.int64)]),
    lowering=("index_array", {"dtypes": "any"}),
    doc="int64 array data.shape + (len(axes),): each element's coordinates on `axes` (all "
        "axes when None) (sg.sym.contrib.index_array)."))

ARANGE_PARAMS = {"start": Param("float", 0.0, doc="First value."), "step": Param("float", 1.0),
                 "repeat": Param("int", 1, doc="How many times each value repeats."),
                 "ctx": Param("str", "", doc="Accepted for MXNet compatibility; the result "
                                             "is on the input's device."),
                 "axis": Param("int?", None)}


def _arange_shape(a: Attrs, s: list) -> list:
    if a["repeat"] < 1:
        raise ShapeError(f"repeat={a['repeat']} must be >= 1")
    if a["axis"] is None:
        return [tuple(s[0])]
    return [(s[0][norm_axis(a["axis"], len(s[0]))],)]


def _arange_like(a: Attrs, xs: list, ctx: RunCtx) -> list:
    n = prod(_arange_shape(a, [xs[0].shape])[0])
    values = a["start"] + a["step"] * (np.arange(n) // a["repeat"])
    return [values.astype(xs[0].dtype).reshape(_arange_shape(a, [xs[0].shape])[0])]


register(OpDef(
    "_contrib_arange_like", ARANGE_PARAMS, ("data",), forward_shape(_arange_shape), _arange_like,
    NOT_DIFFERENTIABLE, INJECTIVE,
    lowering=("arange", {"dtypes": ("float32", "float16", "bfloat16") + INDEX_DTYPES}),
    doc="start + step * (i // repeat) over data's shape (or data.shape[axis],), in data's "
        "dtype (sg.sym.contrib.arange_like)."))
