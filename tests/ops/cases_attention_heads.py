"""Cases for attention's head-layout ops (``ops/attention_heads.py``). References are
independent float64 numpy: a split operand is transposed to (B, H, rows, cols) by hand and each
(b, h) matrix multiplied on its own."""
from __future__ import annotations

import numpy as np

import symgraph as sg

from .case import Case, normal

S = sg.sym
a, b, y, dy = S.var("a"), S.var("b"), S.var("y"), S.var("dy")
B, H, T, D = 2, 3, 4, 5


def _mat(x: np.ndarray, split: bool, i: int) -> np.ndarray:
    """Matrix i = b*H + h of an operand, read with explicit indices."""
    return x[i // H, :, i % H, :] if split else x[i]


def _heads_ref(a, b, ta=False, tb=False, sa=False, sb=False, so=False, alpha=1.0):
    ms = [alpha * (_mat(a, sa, i).T if ta else _mat(a, sa, i))
          @ (_mat(b, sb, i).T if tb else _mat(b, sb, i)) for i in range(B * H)]
    if not so:
        return np.stack(ms)
    out = np.zeros((B, ms[0].shape[0], H, ms[0].shape[1]))
    for i, m in enumerate(ms):
        out[i // H, :, i % H, :] = m
    return out


def _softmax(v):
    z = np.exp(v - v.max(-1, keepdims=True))
    return z / z.sum(-1, keepdims=True)


def _heads_case(shape_a, shape_b, id, **kw) -> Case:
    attrs = {"transpose_a": kw.get("ta", False), "transpose_b": kw.get("tb", False),
             "split_lhs": kw.get("sa", False), "split_rhs": kw.get("sb", False),
             "split_out": kw.get("so", False), "alpha": kw.get("alpha", 1.0)}
    return Case("_batch_dot_heads", lambda: S._batch_dot_heads(a, b, heads=H, **attrs),
                {"a": normal(*shape_a), "b": normal(*shape_b)},
                lambda a, b: _heads_ref(a, b, **kw), id=id)


CASES = [
    # scores: q (B, T, H, D) . k (B, T, H, D)^T, scaled -> (B*H, T, T)
    _heads_case((B, T, H, D), (B, T, H, D), "batch_dot_heads-qk", sa=True, sb=True, tb=True,
                alpha=0.5),
    # context: probabilities (B*H, T, T) . v (B, T, H, D) -> merged (B, T, H, D)
    _heads_case((B * H, T, T), (B, T, H, D), "batch_dot_heads-av-merged", sb=True, so=True),
    # transposed split lhs, plain rhs (a gradient's form)
    _heads_case((B, T, H, D), (B * H, T, 2), "batch_dot_heads-ta", sa=True, ta=True, so=True),
    Case("_softmax_rows", lambda: S._softmax_rows(a), {"a": normal(2, 3, 6, scale=2.0)},
         lambda a: _softmax(a)),
    # y a softmax row (its gradient's domain); dy free: y * (dy - sum(dy * y))
    Case("_softmax_backward", lambda: S._softmax_backward(S._softmax_rows(a), dy),
         {"a": normal(3, 7), "dy": normal(3, 7)},
         lambda a, dy: _softmax(a) * (dy - (dy * _softmax(a)).sum(-1, keepdims=True))),
    # log=True: y a log_softmax row; dy - exp(y) * sum(dy)
    Case("_softmax_backward", lambda: S._softmax_backward(S.log_softmax(a), dy, log=True),
         {"a": normal(3, 7), "dy": normal(3, 7)},
         lambda a, dy: dy - _softmax(a) * dy.sum(-1, keepdims=True), id="softmax_backward-log"),
]
