"""Attention's pieces in the layouts a Transformer keeps its heads in, for ``fold_heads``.

A multi-head layer splits (B, T, H*D) projections into heads with reshape (B, T, H, D) ->
transpose (0, 2, 1, 3) -> reshape (B*H, T, D), multiplies with ``batch_dot`` and merges the
result back by the inverse transpose. The transposes only reorder which matrix a batch index
names, so a GEMM can read and write the (B, T, H, D) layout in place:

* ``_batch_dot_heads``: ``batch_dot`` whose operands and output may each be "split": 4-D
  (B, rows, H, cols), read as the (B*H, rows, cols) batch of matrices ``x[b, :, h, :]``
  (batch index b*H + h), times a scale ``alpha`` (the ``* scale`` before a softmax). Its
  gradients are the same op, written in their operands' layouts, so no transpose is left in
  the backward either.
* ``_softmax_rows``: softmax over the last axis whose gradient is ``_softmax_backward``, one
  row op (y * (dy - sum(dy * y)) in one pass over a row) instead of a sum and broadcasts.

Example::

    q = sg.sym.var("q")                  # (B, T, H, D), a projection reshaped
    k = sg.sym.var("k")
    s = sg.sym._batch_dot_heads(q, k, heads=H, split_lhs=True, split_rhs=True,
                                transpose_b=True, alpha=D ** -0.5)   # (B*H, T, T)
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ...core.attrs import Attrs, Param
from ...core.base import ShapeError
from ...core.registry import GEMM, REDUCE, OpDef, RunCtx, register, same_type
from ._util import fmt, norm_axis, same_shape
from .activation import back_to_input, in_dtype, out_dtype

BATCH_DOT_HEADS = "_batch_dot_heads"
SOFTMAX_ROWS = "_softmax_rows"

HEADS_PARAMS = {
    "transpose_a": Param("bool", False), "transpose_b": Param("bool", False),
    "heads": Param("int", 1, doc="H: the number of heads of a split operand or output."),
    "split_lhs": Param("bool", False, doc="lhs is (B, rows, H, cols), not (B*H, rows, cols)."),
    "split_rhs": Param("bool", False, doc="rhs is (B, rows, H, cols), not (B*H, rows, cols)."),
    "split_out": Param("bool", False, doc="the output is (B, M, H, N), not (B*H, M, N)."),
    "alpha": Param("float", 1.0, doc="scale of the product."),
}


def batch_view(shape: tuple, split: bool, heads: int, what: str) -> tuple[int, int, int]:
    """(batch, rows, cols) of the matrices an operand stands for; ShapeError when its rank
    or head count does not fit its layout."""
    if split:
        if len(shape) != 4 or shape[2] != heads:
            raise ShapeError(f"{BATCH_DOT_HEADS}: {what} {fmt(shape)} should be split "
                             f"(B, rows, {heads}, cols) with heads={heads}")
        return shape[0] * heads, shape[1], shape[3]
    if len(shape) != 3:
        raise ShapeError(f"{BATCH_DOT_HEADS}: {what} {fmt(shape)} should be 3-D (B*H, rows, "
                         f"cols)")
    return tuple(shape)


def gemm_sizes(a: Attrs, lhs: tuple, rhs: tuple) -> tuple[int, int, int, int]:
    """(batch, M, N, K) of the product: the operands as their (batch, rows, cols) views,
    transposes applied; ShapeError when they do not multiply."""
    ga, ra, ca = batch_view(lhs, a["split_lhs"], a["heads"], "lhs")
    gb, rb, cb = batch_view(rhs, a["split_rhs"], a["heads"], "rhs")
    m, k = (ca, ra) if a["transpose_a"] else (ra, ca)
    k2, n = (cb, rb) if a["transpose_b"] else (rb, cb)
    if ga != gb or k != k2:
        raise ShapeError(f"{BATCH_DOT_HEADS}: lhs {fmt(lhs)} and rhs {fmt(rhs)} do not "
                         f"multiply (batches {ga}, {gb}; inner sizes {k}, {k2})")
    return ga, m, n, k


def _heads_shape(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    """The output (batch, M, N) of :func:`gemm_sizes` or, split, (batch / H, M, H, N)."""
    lhs, rhs = ins
    if lhs is None or rhs is None:
        return ins, outs
    h = a["heads"]
    if h < 1:
        raise ShapeError(f"{BATCH_DOT_HEADS}: heads={h} (>= 1)")
    ga, m, n, _ = gemm_sizes(a, lhs, rhs)
    if a["split_out"] and ga % h:
        raise ShapeError(f"{BATCH_DOT_HEADS}: batch {ga} does not split into {h} heads")
    out = (ga // h, m, h, n) if a["split_out"] else (ga, m, n)
    return ins, [out]


def matrices(x: np.ndarray, split: bool, heads: int) -> np.ndarray:
    """The (B*H, rows, cols) batch an operand stands for (a copy when split)."""
    if not split:
        return x
    b, r, h, c = x.shape
    return x.transpose(0, 2, 1, 3).reshape(b * h, r, c)


def _heads_compute(a: Attrs, xs: list, ctx: RunCtx) -> list:
    h = a["heads"]
    lhs = matrices(xs[0], a["split_lhs"], h)
    rhs = matrices(xs[1], a["split_rhs"], h)
    lhs = lhs.transpose(0, 2, 1) if a["transpose_a"] else lhs
    rhs = rhs.transpose(0, 2, 1) if a["transpose_b"] else rhs
    y = np.matmul(lhs, rhs)
    if a["alpha"] != 1.0:
        y = (y * a["alpha"]).astype(y.dtype)
    if a["split_out"]:
        g, m, n = y.shape
        y = np.ascontiguousarray(y.reshape(g // h, h, m, n).transpose(0, 2, 1, 3))
    return [y]


def _heads_grad(c: Any) -> list:
    """C = alpha op(A) op(B): dA and dB are the same op on dC, each written in its operand's
    layout (split operands get split gradients)."""
    a = c.attrs
    ta, tb, al = a["transpose_a"], a["transpose_b"], a["alpha"]
    x, y, dy = c.inputs[0], c.inputs[1], c.ograds[0]
    sx, sy, so = a["split_lhs"], a["split_rhs"], a["split_out"]

    def dot(p: Any, q: Any, sp: bool, sq: bool, t1: bool, t2: bool, out: bool) -> Any:
        return c.sym._batch_dot_heads(p, q, transpose_a=t1, transpose_b=t2, heads=a["heads"],
                                      split_lhs=sp, split_rhs=sq, split_out=out, alpha=al)
    dx = dot(y, dy, sy, so, tb, True, sx) if ta else dot(dy, y, so, sy, False, not tb, sx)
    dw = dot(dy, x, so, sx, True, ta, sy) if tb else dot(x, dy, sx, so, not ta, False, sy)
    return [dx, dw]


register(OpDef(
    BATCH_DOT_HEADS, HEADS_PARAMS, ("lhs", "rhs"), _heads_shape, _heads_compute, _heads_grad,
    GEMM, lowering="batch_dot_heads",
    doc="alpha * batch_dot(lhs, rhs) where an operand or the output may be split (B, rows, H, "
        "cols): the batch of matrices x[b, :, h, :], as a GEMM reads it without a transpose."))


def softmax_rows_np(x: np.ndarray) -> np.ndarray:
    z = np.exp(x - x.max(-1, keepdims=True))
    return (z / z.sum(-1, keepdims=True)).astype(x.dtype)


def _rows_shape(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    """Inputs and output of one shape, with a last axis to run along."""
    ins, outs = same_shape(a, ins, outs)
    if outs[0] is not None:
        norm_axis(-1, len(outs[0]))
    return ins, outs


register(OpDef(
    SOFTMAX_ROWS, {"dtype": Param("dtype?", None, doc="the output's dtype (default: the "
                                                      "input's); computed in it")},
    ("data",), _rows_shape, in_dtype(lambda a, xs, ctx: [softmax_rows_np(xs[0])]),
    back_to_input(lambda c: [c.sym._softmax_backward(c.outputs[0], c.ograds[0])]), REDUCE,
    infer_type=out_dtype(same_type), lowering=("softmax", {"axis_from": "last"}),
    extra={"input_cast_attr": "dtype"},  # a widening cast in front is done as it loads
    doc="softmax over the last axis (as softmax(axis=-1)); its gradient is one row op, "
        "_softmax_backward."))


def _backward_type(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    """The output in ``out_dtype``, else prob's dtype; ograd any float (read as float32)."""
    prob, ograd = ins
    own = a.get("out_dtype")
    if own is not None:
        return [prob, ograd if ograd is not None else prob], [np.dtype(own)]
    prob = prob if prob is not None else outs[0]
    return [prob, ograd if ograd is not None else prob], [prob]


def _backward_compute(a: Attrs, xs: list, ctx: RunCtx) -> list:
    y, dy = (v.astype(np.float32) if v.dtype.itemsize < 4 else v for v in xs)
    out = a.get("out_dtype") or xs[0].dtype
    if a.get("log"):  # log_softmax's gradient: log_softmax's numpy order, same bits
        return [(dy - np.exp(y) * dy.sum(-1, keepdims=True)).astype(out)]
    return [(y * (dy - (dy * y).sum(-1, keepdims=True))).astype(out)]


def _backward_grad(c: Any) -> list:
    """r = y * (g - s), s = sum(g * y): dg = _softmax_backward(y, v); dy = v * (g - s) -
    g * sum(v * y) (rows along the last axis). With ``log``, r = g - exp(y) * sum(g):
    dg = v - sum(v * exp(y)); dy = -v * exp(y) * sum(g)."""
    S, y, g, v = c.sym, c.inputs[0], c.inputs[1], c.ograds[0]
    if c.attrs.get("log"):
        ve = v * S.exp(y)
        return [S.negative(S.broadcast_mul(ve, S.sum(g, axis=-1, keepdims=True))),
                S.broadcast_sub(v, S.sum(ve, axis=-1, keepdims=True))]
    s = S.sum(g * y, axis=-1, keepdims=True)
    t = S.sum(v * y, axis=-1, keepdims=True)
    dy = S.broadcast_mul(v, S.broadcast_sub(g, s)) - S.broadcast_mul(g, t)
    return [dy, S._softmax_backward(y, v)]


register(OpDef(
    "_softmax_backward",
    {"out_dtype": Param("dtype?", None, doc="the output's dtype (default: prob's), rounded "
                                            "once from the float32 result"),
     "log": Param("bool", False, doc="prob holds log_softmax's output: dy - exp(y) * "
                                     "sum(dy) per row")},
    ("prob", "ograd"), _rows_shape, _backward_compute, _backward_grad, REDUCE,
    infer_type=_backward_type, lowering="softmax_backward",
    # casts next to it are done as it loads ograd or stores its output (passes/absorb_casts)
    extra={"float_inputs": (1,), "output_cast_attr": "out_dtype"},
    doc="Gradient of softmax over the last axis from its output y and output gradient dy: "
        "y * (dy - sum(dy * y)) per row, summed in float (log=True: log_softmax's, "
        "dy - exp(y) * sum(dy))."))

