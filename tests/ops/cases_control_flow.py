"""Registry cases for the control-flow ops (``_foreach``, ``_while_loop``, ``_cond``), traced
through ``sg.sym.contrib``; references are plain float64 Python loops over numpy."""
from __future__ import annotations

import numpy as np

import symgraph as sg

from .case import Case, normal

S = sg.sym
C = S.contrib


def _foreach():
    x, h, w = S.var("x"), S.var("h"), S.var("w")
    outs, (h_end,) = C.foreach(lambda xt, st: (S.tanh(xt * w + st[0]), [S.sin(st[0]) + xt]),
                               x, [h])
    return S.Group([outs, h_end])


def _foreach_ref(x, h, w):
    rows = []
    for t in range(x.shape[0]):
        rows.append(np.tanh(x[t] * w + h))
        h = np.sin(h) + x[t]
    return [np.stack(rows), h]


def _while():
    i, s, w = S.var("i"), S.var("s"), S.var("w")
    outs, (i_end, s_end) = C.while_loop(
        lambda i, s: i < 4, lambda i, s: ([S.sin(s * w)], [i + 1, s * w + 0.5]), [i, s],
        max_iterations=6)
    return S.Group([outs[0], i_end, s_end])


def _while_ref(i, s, w):
    rows = np.zeros((6,) + s.shape)
    t = 0
    while t < 6 and i[0] < 4:
        rows[t] = np.sin(s * w)
        i, s, t = i + 1, s * w + 0.5, t + 1
    return [rows, i, s]


def _cond():
    a, b = S.var("a"), S.var("b")
    return C.cond(S.sum(a) > 0, lambda: S.sin(a) * b, lambda: S.cos(b) - a)


def _cond_ref(a, b):
    return np.sin(a) * b if a.sum() > 0 else np.cos(b) - a


CASES: list[Case] = [
    Case("_foreach", _foreach, {"x": normal(5, 3), "h": normal(3), "w": normal(3)},
         _foreach_ref),
    Case("_while_loop", _while, {"i": lambda rng: np.array([1.0]), "s": normal(2, 3),
                                 "w": normal(2, 3)}, _while_ref, grad_nodes=["s", "w"]),
    Case("_cond", _cond, {"a": lambda rng: rng.uniform(0.1, 1, (2, 3)), "b": normal(2, 3)},
         _cond_ref, id="_cond_then"),
    Case("_cond", _cond, {"a": lambda rng: -rng.uniform(0.1, 1, (2, 3)), "b": normal(2, 3)},
         _cond_ref, id="_cond_else"),
]
