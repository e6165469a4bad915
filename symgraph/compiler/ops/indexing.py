"""Reductions and indexing beyond the core: prod, norm, argmax/argmin, one_hot, take (and its
scatter gradient ``_backward_take``), Embedding, where, batch_dot."""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ...core import expr as E
from ...core.attrs import Attrs, Param
from ...core.base import DataError, ShapeError
from ...core.registry import (ELEMWISE, GEMM, INJECTIVE, NOT_DIFFERENTIABLE, REDUCE, OpDef, RunCtx,
                        register)
from ._util import (check_attr, checked, expr_compute, fmt, forward_shape, merge_dims,
                    same_shape)
from .tensor import (REDUCE_PARAMS, reduce_compute, unreduce, product_grad, reduce_axes,
                     reduced_shape)


def typed_like(index: int) -> Callable:
    """Dtype rule: the output shares input ``index``'s dtype; other inputs are free
    (integer-valued index inputs may be of any dtype)."""
    def rule(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
        t = ins[index] if ins[index] is not None else outs[0]
        if t is None:
            return ins, outs
        ins = list(ins)
        ins[index] = t
        return ins, [t] * len(outs)
    return rule


# -- prod, norm, argmax, argmin ----------------------------------------------------------------

register(OpDef(
    "prod", REDUCE_PARAMS, ("data",), forward_shape(lambda a, s: [reduced_shape(a, s[0])]),
    reduce_compute(np.prod),
    lambda c: [unreduce(c, c.ograds[0]) * unreduce(c, c.outputs[0]) / c.inputs[0]], REDUCE,
    lowering=("reduce", {"kind": "prod"}),
    doc="Product over axis (None: all); gradient y/x, so defined for nonzero x."))



def _nan_grad(c, value) -> list:
    """Gradient of a NaN-skipping reduction: ``value`` where x is a number, 0 at NaNs."""
    x = c.inputs[0]
    return [c.sym.where(c.sym.broadcast_equal(x, x), value, c.sym.zeros_like(x))]


register(OpDef(
    "nansum", REDUCE_PARAMS, ("data",), forward_shape(lambda a, s: [reduced_shape(a, s[0])]),
    reduce_compute(np.nansum), lambda c: _nan_grad(c, unreduce(c, c.ograds[0])), REDUCE,
    lowering=("reduce", {"kind": "nansum"}),
    doc="Sum over axis (None: all) treating NaN as 0; NaN entries get a zero gradient."))
register(OpDef(
    "nanprod", REDUCE_PARAMS, ("data",), forward_shape(lambda a, s: [reduced_shape(a, s[0])]),
    reduce_compute(np.nanprod),
    lambda c: _nan_grad(c, unreduce(c, c.ograds[0]) * unreduce(c, c.outputs[0])
                        / c.inputs[0]), REDUCE,
    lowering=("reduce", {"kind": "nanprod"}),
    doc="Product over axis (None: all) treating NaN as 1; gradient y/x, 0 at NaN entries."))

NORM_PARAMS = {"ord": Param("int", 2, (1, 2)), "axis": Param("axis", None),
               "out_dtype": Param("dtype?", None, doc="output dtype (default: the input's)"),
               "keepdims": Param("bool", False)}


def _as_reduce(a: Attrs) -> Attrs:
    return Attrs({"axis": a["axis"], "keepdims": a["keepdims"], "exclude": False})


def _norm_compute(a: Attrs, xs: list, ctx: RunCtx) -> list:
    x = xs[0]
    axes = reduce_axes(_as_reduce(a), x.ndim)
    k = a["keepdims"]
    acc = x.astype(np.promote_types(x.dtype, np.float32)) if x.dtype.kind == "f" else x
    out = np.abs(acc).sum(axis=axes, keepdims=k) if a["ord"] == 1 else \
        np.sqrt(np.square(acc).sum(axis=axes, keepdims=k))
    return [np.asarray(out, dtype=a["out_dtype"] or x.dtype)
            .reshape(reduced_shape(_as_reduce(a), x.shape))]


def _norm_type(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    if a["out_dtype"] is None:
        known = ins[0] if ins[0] is not None else outs[0]
        return [known], [known]
    return ins, [np.dtype(a["out_dtype"])]


def _norm_grad(c) -> list:
    S, a = c.sym, c.attrs
    x, dy, y = c.inputs[0], c.ograds[0], c.outputs[0]
    if a["out_dtype"] is not None:  # work in out_dtype, convert the result back to x's
        xc = S.Cast(x, dtype=a["out_dtype"])
        return [S._backward_Cast(_norm_input_grad(S, a, xc, dy, y), x)]
    return [_norm_input_grad(S, a, x, dy, y)]


def _norm_input_grad(S: Any, a: Attrs, x: Any, dy: Any, y: Any) -> Any:
    back = S._reduce_backward(dy if a["ord"] == 1 else dy / y, x, axis=a["axis"],
                              keepdims=a["keepdims"])
    return S.sign(x) * back if a["ord"] == 1 else x * back


register(OpDef(
    "norm", NORM_PARAMS, ("data",),
    forward_shape(lambda a, s: [reduced_shape(_as_reduce(a), s[0])]), _norm_compute,
    _norm_grad, REDUCE, infer_type=_norm_type,
    doc="L1 or L2 norm over axis (None: all), optionally as out_dtype.",
    lowering=("reduce", {"kind": lambda a: f"norm{a['ord']}", "as_reduce": _as_reduce})))

ARG_PARAMS = {"axis": Param("int?", None), "keepdims": Param("bool", False)}


def _arg_shape(a: Attrs, s: list) -> list:
    if a["axis"] is None:
        return [(1,) * len(s[0]) if a["keepdims"] else ()]
    return [reduced_shape(Attrs({"axis": (a["axis"],), "keepdims": a["keepdims"],
                                 "exclude": False}), s[0])]


def _arg_compute(fn: Callable) -> Callable:
    def compute(a: Attrs, xs: list, ctx: RunCtx) -> list:
        x = xs[0]
        out = fn(x, axis=a["axis"], keepdims=a["keepdims"])
        return [np.asarray(out, dtype=x.dtype)]
    return compute


for _name, _fn in (("argmax", np.argmax), ("argmin", np.argmin)):
    register(OpDef(_name, ARG_PARAMS, ("data",), forward_shape(_arg_shape), _arg_compute(_fn),
                   NOT_DIFFERENTIABLE, REDUCE, lowering=("arg_reduce", {"kind": _name[3:]}),
                   doc=f"Index of the first {_name[3:]} along axis (None: flattened), as a "
                       f"float of the input's dtype. Not differentiable."))

def _channel_shape(a: Attrs, s: list) -> list:
    return [(1,) if len(s[0]) < 2 else tuple(s[0][:1]) + tuple(s[0][2:])]


def _argmax_channel(a: Attrs, xs: list, ctx: RunCtx) -> list:
    x = xs[0]
    out = np.argmax(x, axis=1) if x.ndim >= 2 else np.argmax(x).reshape(1)
    return [np.asarray(out, dtype=x.dtype)]


register(OpDef(
    "argmax_channel", {}, ("data",), forward_shape(_channel_shape), _argmax_channel,
    NOT_DIFFERENTIABLE, REDUCE, lowering=("arg_reduce", {"kind": "max", "channel": True}),
    doc="argmax along axis 1 (a 1-D input: over all of it, giving (1,)), as a float of the "
        "input's dtype, as MXNet's argmax_channel. Not differentiable."))

# -- one_hot, take, Embedding --------------------------------------------------------------------


def _dtype_attr(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    return ins, [np.dtype(a["dtype"])]


def _one_hot(a: Attrs, xs: list, ctx: RunCtx) -> list:
    idx = xs[0].astype(np.int64)
    out = np.full(idx.shape + (a["depth"],), a["off_value"], dtype=np.dtype(a["dtype"]))
    ok = (idx >= 0) & (idx < a["depth"])
    out[ok, idx[ok]] = a["on_value"]
    return [out]


register(OpDef(
    "one_hot", {"depth": Param("int"), "on_value": Param("float", 1.0),
                "off_value": Param("float", 0.0), "dtype": Param("dtype", "float32")},
    ("indices",), checked(forward_shape(lambda a, s: [tuple(s[0]) + (a["depth"],)]),
                          lambda a: check_attr(a["depth"] >= 0, "depth", a["depth"],
                                               "must be >= 0")), _one_hot,
    NOT_DIFFERENTIABLE, INJECTIVE, lowering='one_hot', infer_type=_dtype_attr,
    doc="indices.shape + (depth,): on_value at each index, off_value elsewhere (also for "
        "out-of-range indices)."))

TAKE_PARAMS = {"axis": Param("int", 0),
               "mode": Param("str", "clip", ("clip", "wrap", "raise"),
                             doc="out-of-range indices: clipped, wrapped, or a DataError")}


def _indices(a: Attrs, idx: np.ndarray, n: int) -> np.ndarray:
    return row_indices(idx, n, a["mode"])


def row_indices(idx: np.ndarray, n: int, mode: str) -> np.ndarray:
    """The integer rows ``idx`` reads: clipped or wrapped into [0, n), or (``raise``) checked
    as MXNet does, on the value before truncation (2.5 is out of [0, 2], 1.7 reads row 1)."""
    if mode == "raise":
        bad = ~((idx >= 0) & (idx <= n - 1))  # written so that NaN is out of range too
        if bad.any():
            pos = np.unravel_index(int(np.argmax(bad)), idx.shape)
            raise DataError(f"index {idx[pos]} at position {tuple(map(int, pos))} of the "
                            f"indices {fmt(idx.shape)} is outside [0, {n - 1}], the axis of "
                            f"size {n} (mode='raise')")
        return idx.astype(np.int64)
    i = idx.astype(np.int64)
    return np.clip(i, 0, n - 1) if mode == "clip" else np.mod(i, n)


def _take_shape(a: Attrs, s: list) -> list:
    data, idx = s
    ax = a["axis"]
    if not -len(data) <= ax < len(data):
        raise ShapeError(f"axis {ax} out of range for data {fmt(data)}")
    ax %= len(data)
    return [tuple(data[:ax]) + tuple(idx) + tuple(data[ax + 1:])]


def _take(a: Attrs, xs: list, ctx: RunCtx) -> list:
    data, idx = xs
    ax = a["axis"] % data.ndim
    return [np.take(data, _indices(a, idx, data.shape[ax]), axis=ax)]


register(OpDef(
    "take", TAKE_PARAMS, ("a", "indices"), forward_shape(_take_shape), _take,
    lambda c: [c.sym._backward_take(c.ograds[0], c.inputs[1], c.inputs[0], **c.attrs), None],
    INJECTIVE, lowering='take', infer_type=typed_like(0),
    doc="Slices of `a` along axis at `indices` (clipped, wrapped, or raising DataError on "
        "the CPU; the GPU clips where MXNet raises: a kernel cannot raise)."))


def add_rows(grad: np.ndarray, i: np.ndarray, rows: np.ndarray) -> None:
    """``np.add.at(grad, i, rows)`` as one stable sort and one segmented sum (numpy's
    reduction over the rows sharing an index, then one add: equal up to float rounding):
    ``np.add.at`` took 10 ms for the LSTM model's 700 rows of 200 (an Embedding's gradient)."""
    if i.size == 0:
        return
    order = np.argsort(i, kind="stable")
    si = i[order]
    starts = np.flatnonzero(np.concatenate(([True], si[1:] != si[:-1])))
    grad[si[starts]] += np.add.reduceat(rows[order], starts, axis=0)


def _backward_take(a: Attrs, xs: list, ctx: RunCtx) -> list:
    dy, idx, data = xs
    ax = a["axis"] % data.ndim
    n = data.shape[ax]
    i = _indices(a, idx, n).reshape(-1)
    moved = np.moveaxis(dy, list(range(ax, ax + idx.ndim)), list(range(idx.ndim)))
    grad = np.zeros((n,) + moved.shape[idx.ndim:], dtype=dy.dtype)
    add_rows(grad, i, moved.reshape((i.size,) + moved.shape[idx.ndim:]))
    return [np.moveaxis(grad, 0, ax)]


register(OpDef(
    "_backward_take", TAKE_PARAMS, ("ograd", "indices", "data"),
    lambda a, ins, outs: (ins, [ins[2]] if ins[2] is not None else outs), _backward_take,
    lambda c: [c.sym.take(c.ograds[0], c.inputs[1], **c.attrs), None, None], REDUCE,
    lowering='take_backward',
    infer_type=typed_like(0),
    doc="Gradient of take w.r.t. `a`: ograd slices summed into the rows they were read from."))


def _embedding_shape(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    for key in ("input_dim", "output_dim"):
        check_attr(a[key] >= 1, key, a[key], "must be >= 1 (rows and columns of weight)")
    ins = [ins[0], (a["input_dim"], a["output_dim"])]
    if ins[0] is None:
        return ins, outs
    return ins, [tuple(ins[0]) + (a["output_dim"],)]


register(OpDef(
    "Embedding", {"input_dim": Param("int"), "output_dim": Param("int"),
                  "dtype": Param("dtype", "float32"), "sparse_grad": Param("bool", False)},
    ("data", "weight"), _embedding_shape,
    lambda a, xs, ctx: [xs[1][np.clip(xs[0].astype(np.int64), 0, a["input_dim"] - 1)]],
    lambda c: [None, c.sym._backward_take(c.ograds[0], c.inputs[0], c.inputs[1], axis=0)],
    INJECTIVE, lowering=('take', {'data': 1, 'indices': 0}), infer_type=typed_like(1),
    partial_shapes=True,
    doc="Rows of weight (input_dim, output_dim) at the (clipped) integer-valued data."))

# -- where, batch_dot ---------------------------------------------------------------------------

def rows_condition(cond: tuple, data: tuple) -> bool:
    """True when ``where``'s condition picks whole rows: 1-D against data of 2 or more axes
    (MXNet's second form); otherwise condition and data have one shape."""
    return len(cond) == 1 and len(data) >= 2


def _where_shape(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    """x, y and the output share one shape; the condition has it too, or is 1-D with the
    data's first dimension (0 = unknown, as in every partial shape)."""
    cond = ins[0]
    data_ins, data_outs = same_shape(a, ins[1:], outs)
    data = data_outs[0]
    if cond is None or data is None or not rows_condition(cond, data):
        return same_shape(a, ins, outs)
    if cond[0] and data[0] and cond[0] != data[0]:
        raise ShapeError(f"condition {fmt(cond)} picks rows of data {fmt(data)}: its length "
                         f"must be the data's first dimension {data[0]}")
    rows = cond[0] or data[0]
    data = (rows,) + tuple(data[1:])
    return [(rows,), data, data], [data]


def _where_formula(a: Attrs, cond: E.Expr, x: E.Expr, y: E.Expr) -> E.Expr:
    return E.where(cond, x, y)


_where_same_shape = expr_compute(_where_formula)


def _where(a: Attrs, xs: list, ctx: RunCtx) -> list:
    cond, x, y = xs
    if rows_condition(cond.shape, x.shape):
        cond = cond.reshape(cond.shape + (1,) * (x.ndim - 1))
    return _where_same_shape(a, [cond, x, y], ctx)


register(OpDef(
    "where", {}, ("condition", "x", "y"), _where_shape, _where,
    lambda c: [None, c.sym.where(c.inputs[0], c.ograds[0], c.sym.zeros_like(c.ograds[0])),
               c.sym.where(c.inputs[0], c.sym.zeros_like(c.ograds[0]), c.ograds[0])],
    ELEMWISE, expr=_where_formula, lowering="where", partial_shapes=True,
    doc="x where condition is nonzero, else y: x, y and condition of one shape, or a 1-D "
        "condition choosing whole rows (first axis) of x and y. Fusion sees only the first "
        "form: simplify rewrites the second into a condition broadcast to the data's shape."))


def _batch_dot_shape(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    """(B, M, K) x (B, K, N) -> (B, M, N), transposes applied. In partial shapes (0 =
    unknown) the batch sizes merge; an unknown inner size leaves the output unknown (it
    cannot be checked), as in MXNet."""
    lhs, rhs = ins
    if lhs is None or rhs is None:
        return ins, outs
    batch = merge_dims(tuple(lhs[:1]), tuple(rhs[:1]))
    if len(lhs) != 3 or len(rhs) != 3 or batch is None:
        raise ShapeError(f"batch_dot needs 3-D inputs with one batch size, got {fmt(lhs)} "
                         f"and {fmt(rhs)}")
    m, k = (lhs[2], lhs[1]) if a["transpose_a"] else (lhs[1], lhs[2])
    k2, n = (rhs[2], rhs[1]) if a["transpose_b"] else (rhs[1], rhs[2])
    if k != k2 and k and k2:
        raise ShapeError(f"batch_dot: inner dimensions differ: {fmt(lhs)} . {fmt(rhs)}")
    if k != k2:
        return ins, outs
    return ins, [batch + (m, n)]


def _batch_dot(a: Attrs, xs: list, ctx: RunCtx) -> list:
    lhs = xs[0].transpose(0, 2, 1) if a["transpose_a"] else xs[0]
    rhs = xs[1].transpose(0, 2, 1) if a["transpose_b"] else xs[1]
    return [np.matmul(lhs, rhs)]


register(OpDef(
    "batch_dot", {"transpose_a": Param("bool", False), "transpose_b": Param("bool", False)},
    ("lhs", "rhs"), _batch_dot_shape, _batch_dot,
    lambda c: product_grad(c, c.sym.batch_dot), GEMM, lowering='batch_dot', partial_shapes=True,
    doc="Batched matrix product of 3-D arrays (B, M, K) x (B, K, N), optional transposes."))
