"""MXNet 1.9.1's interleaved multi-head attention matmuls (``sg.sym.contrib.interleaved_*``).

Projections arrive interleaved per head, sequence first: self attention packs queries, keys
and values as (seq, batch, heads * 3 * head_dim) laid out (seq, batch, heads, 3, head_dim);
encoder-decoder attention has queries (seq_q, batch, heads * head_dim) and keys/values
(seq_k, batch, heads * 2 * head_dim). Scores are (batch * heads, seq_q, seq_k) with queries
scaled by 1/sqrt(head_dim); attended values come back as (seq_q, batch, heads * head_dim).

Each op is a composition (``ops/_composite.py``): views, transposes and one batch_dot, which
is what a kernel of its own would run; gradient and GPU lowering follow from it.

Example::

    qkv = sg.sym.var("qkv")                                   # (seq, batch, heads*3*dim)
    att = sg.sym.softmax(sg.sym.contrib.interleaved_matmul_selfatt_qk(qkv, heads=8))
    out = sg.sym.contrib.interleaved_matmul_selfatt_valatt(qkv, att, heads=8)
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ...core.attrs import Attrs, Param
from ...core.base import ShapeError
from ...core.registry import GEMM, OpDef, register
from ._composite import COMPOSED, composite_gradient, composite_unroll
from ._util import fmt, forward_shape

HEADS = {"heads": Param("int", doc="Number of attention heads.")}


def _split(shape: tuple, heads: int, parts: int, what: str) -> int:
    """head_dim of a (seq, batch, heads * parts * head_dim) input; ShapeError otherwise."""
    if heads is None or heads < 1:
        raise ShapeError(f"heads={heads!r}: give the number of heads (>= 1)")
    if len(shape) != 3 or shape[2] % (heads * parts):
        raise ShapeError(f"{what} {fmt(shape)}: expected (seq, batch, heads*{parts}*head_dim) "
                         f"with heads={heads}")
    return shape[2] // (heads * parts)


def _heads_first(S: Any, x: Any, shape: tuple, heads: int, parts: int, part: int) -> Any:
    """Projection ``part`` of ``x`` as (batch * heads, seq, head_dim)."""
    seq, batch, _ = shape
    dim = _split(shape, heads, parts, "input")
    x = S.Reshape(x, shape=(seq, batch, heads, parts, dim))
    x = S.Reshape(S.slice_axis(x, axis=3, begin=part, end=part + 1),
                  shape=(seq, batch, heads, dim))
    return S.Reshape(S.transpose(x, axes=(1, 2, 0, 3)), shape=(batch * heads, seq, dim))


def _seq_first(S: Any, y: Any, seq: int, batch: int, heads: int, dim: int) -> Any:
    """(batch * heads, seq, dim) back to (seq, batch, heads * dim)."""
    y = S.transpose(S.Reshape(y, shape=(batch, heads, seq, dim)), axes=(2, 0, 1, 3))
    return S.Reshape(y, shape=(seq, batch, heads * dim))


def _scores(S: Any, a: Attrs, q: Any, qshape: tuple, qparts: int, k: Any, kshape: tuple,
            kparts: int) -> Any:
    """(batch * heads, seq_q, seq_k): scaled queries times keys."""
    h = a["heads"]
    scale = 1.0 / float(np.sqrt(_split(qshape, h, qparts, "queries")))
    qp = S._mul_scalar(_heads_first(S, q, qshape, h, qparts, 0), scalar=scale)
    kp = _heads_first(S, k, kshape, h, kparts, 1 if kparts == 3 else 0)  # keys: part 1 of 3
    return S.batch_dot(qp, kp, transpose_b=True)


def _attend(S: Any, a: Attrs, kv: Any, shape: tuple, parts: int, att: Any,
            att_shape: tuple) -> Any:
    """(seq_q, batch, heads * head_dim): attention rows times values (the last part)."""
    h = a["heads"]
    dim = _split(shape, h, parts, "keys_values")
    if tuple(att_shape) != (shape[1] * h, att_shape[1], shape[0]):
        raise ShapeError(f"attention {fmt(att_shape)}: expected (batch*heads, seq_q, seq_k) = "
                         f"({shape[1] * h}, seq_q, {shape[0]})")
    y = S.batch_dot(att, _heads_first(S, kv, shape, h, parts, parts - 1))
    return _seq_first(S, y, att_shape[1], shape[1], h, dim)


def _np_heads_first(x: np.ndarray, heads: int, parts: int, part: int) -> np.ndarray:
    seq, batch, width = x.shape
    dim = width // (heads * parts)
    p = x.reshape(seq, batch, heads, parts, dim)[:, :, :, part, :]
    return p.transpose(1, 2, 0, 3).reshape(batch * heads, seq, dim)


def _np_scores(q: np.ndarray, qparts: int, k: np.ndarray, kparts: int, heads: int) -> list:
    qp = _np_heads_first(q.astype(np.float64), heads, qparts, 0)
    kp = _np_heads_first(k.astype(np.float64), heads, kparts, 1 if kparts == 3 else 0)
    out = qp @ kp.transpose(0, 2, 1) / np.sqrt(qp.shape[2])
    return [out.astype(q.dtype)]


def _np_attend(kv: np.ndarray, parts: int, att: np.ndarray, heads: int) -> list:
    v = _np_heads_first(kv.astype(np.float64), heads, parts, parts - 1)
    y = att.astype(np.float64) @ v
    batch = kv.shape[1]
    out = y.reshape(batch, heads, y.shape[1], y.shape[2]).transpose(2, 0, 1, 3)
    return [out.reshape(y.shape[1], batch, -1).astype(kv.dtype)]


def _qk_self_shape(a: Attrs, s: list) -> tuple:
    seq, batch, _ = s[0]
    _split(s[0], a["heads"], 3, "queries_keys_values")
    return (batch * a["heads"], seq, seq)


def _qk_encdec_shape(a: Attrs, s: list) -> tuple:
    _split(s[0], a["heads"], 1, "queries")
    _split(s[1], a["heads"], 2, "keys_values")
    if s[0][1] != s[1][1]:
        raise ShapeError(f"queries {fmt(s[0])} and keys_values {fmt(s[1])}: batch differs")
    return (s[0][1] * a["heads"], s[0][0], s[1][0])


def _valatt_shape(parts: int) -> Any:
    def out(a: Attrs, s: list) -> tuple:
        seq, batch, _ = s[0]
        dim = _split(s[0], a["heads"], parts, "keys_values")
        if len(s[1]) != 3 or s[1][0] != batch * a["heads"] or s[1][2] != seq:
            raise ShapeError(f"attention {fmt(s[1])}: expected (batch*heads, seq_q, seq_k) = "
                             f"({batch * a['heads']}, seq_q, {seq})")
        return (s[1][1], batch, a["heads"] * dim)
    return out


def _register(name: str, inputs: tuple, shape: Any, compute: Any, expand: Any, doc: str) -> None:
    """One interleaved op; ``expand(S, attrs, xs, shapes)`` builds it from registered ops."""
    def composed(S: Any, a: Attrs, xs: list, shapes: list, dtypes: list) -> list:
        return [expand(S, a, xs, shapes)]
    register(OpDef(
        f"_contrib_interleaved_matmul_{name}", HEADS, inputs,
        forward_shape(lambda a, s: [shape(a, [tuple(d) for d in s])]),
        lambda a, xs, ctx: compute(a, xs), composite_gradient(composed), GEMM,
        lowering=COMPOSED, extra={"unroll": composite_unroll(composed)}, doc=doc))


# name, inputs, output shape, numpy reference, expansion (parts: q/k/v interleaved 3, k/v 2)
_register("selfatt_qk", ("queries_keys_values",), _qk_self_shape,
          lambda a, xs: _np_scores(xs[0], 3, xs[0], 3, a["heads"]),
          lambda S, a, xs, sh: _scores(S, a, xs[0], sh[0], 3, xs[0], sh[0], 3),
          "Self-attention scores (batch*heads, seq, seq) from interleaved (seq, batch, "
          "heads*3*head_dim) projections; queries scaled by 1/sqrt(head_dim).")
_register("selfatt_valatt", ("queries_keys_values", "attention"), _valatt_shape(3),
          lambda a, xs: _np_attend(xs[0], 3, xs[1], a["heads"]),
          lambda S, a, xs, sh: _attend(S, a, xs[0], sh[0], 3, xs[1], sh[1]),
          "Attention (batch*heads, seq, seq) times the interleaved values: (seq, batch, "
          "heads*head_dim).")
_register("encdec_qk", ("queries", "keys_values"), _qk_encdec_shape,
          lambda a, xs: _np_scores(xs[0], 1, xs[1], 2, a["heads"]),
          lambda S, a, xs, sh: _scores(S, a, xs[0], sh[0], 1, xs[1], sh[1], 2),
          "Encoder-decoder scores (batch*heads, seq_q, seq_k) from queries (seq_q, batch, "
          "heads*head_dim) and interleaved keys/values (seq_k, batch, heads*2*head_dim).")
_register("encdec_valatt", ("keys_values", "attention"), _valatt_shape(2),
          lambda a, xs: _np_attend(xs[0], 2, xs[1], a["heads"]),
          lambda S, a, xs, sh: _attend(S, a, xs[0], sh[0], 2, xs[1], sh[1]),
          "Attention (batch*heads, seq_q, seq_k) times the interleaved values of keys_values: "
          "(seq_q, batch, heads*head_dim).")
