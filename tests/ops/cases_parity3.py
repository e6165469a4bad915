"""Cases for the ops added in the third MXNet-parity round (issue 12): logical ops, LRN, RNN.
References are plain float64 numpy, written from MXNet's documented formulas."""
from __future__ import annotations

import numpy as np

import symgraph as sg

from .case import Case, normal

S = sg.sym
x = S.var("x")
a, b = S.var("a"), S.var("b")


def _ints(*shape: int):
    """Values in {-1, 0, 1, 2}: zeros and non-zeros of both signs."""
    return lambda rng: rng.integers(-1, 3, size=shape).astype(np.float64)


def _t(v):
    return v != 0


CASES: list[Case] = [
    Case("broadcast_logical_and", lambda: S.broadcast_logical_and(a, b),
         {"a": _ints(3, 4), "b": _ints(1, 4)}, lambda a, b: (_t(a) & _t(b)) * 1.0, grad=False),
    Case("broadcast_logical_or", lambda: S.broadcast_logical_or(a, b),
         {"a": _ints(3, 1), "b": _ints(3, 4)}, lambda a, b: (_t(a) | _t(b)) * 1.0, grad=False),
    Case("broadcast_logical_xor", lambda: S.broadcast_logical_xor(a, b),
         {"a": _ints(3, 4), "b": _ints(3, 4)}, lambda a, b: (_t(a) ^ _t(b)) * 1.0, grad=False),
    Case("_logical_and_scalar", lambda: S._logical_and_scalar(x, scalar=2.0),
         {"x": _ints(3, 4)}, lambda x: _t(x) * 1.0, grad=False),
    Case("_logical_or_scalar", lambda: S._logical_or_scalar(x, scalar=0.0),
         {"x": _ints(3, 4)}, lambda x: _t(x) * 1.0, grad=False),
    Case("_logical_xor_scalar", lambda: S._logical_xor_scalar(x, scalar=1.0),
         {"x": _ints(3, 4)}, lambda x: (~_t(x)) * 1.0, grad=False),
    Case("logical_not", lambda: S.logical_not(x), {"x": _ints(3, 4)},
         lambda x: (x == 0) * 1.0, grad=False),
]
