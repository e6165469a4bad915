"""Cases for MXNet-parity ops: logical ops, LRN, RNN.
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


def _lrn_ref(x, nsize=3, alpha=1e-2, beta=0.75, knorm=2.0):
    """Loop over channels: the window is clipped at the edges (MXNet pads with zeros)."""
    norm = np.empty_like(x)
    half = nsize // 2
    for ch in range(x.shape[1]):
        lo, hi = max(0, ch - half), min(x.shape[1], ch + half + 1)
        norm[:, ch] = knorm + alpha / nsize * np.sum(x[:, lo:hi] ** 2, axis=1)
    return x * norm ** -beta


CASES += [
    # alpha large enough that the normaliser's gradient term matters
    Case("LRN", lambda: S.LRN(x, nsize=3, alpha=1e-2 * 50, beta=0.75, knorm=2.0),
         {"x": normal(2, 5, 3, 2)}, lambda x: _lrn_ref(x, 3, 0.5)),
    Case("LRN", lambda: S.LRN(x, nsize=5, alpha=0.3, beta=0.5, knorm=1.0),
         {"x": normal(2, 4, 3)}, lambda x: _lrn_ref(x, 5, 0.3, 0.5, 1.0), id="LRN-3d-wide"),
]


def _softmax_length_ref(x, n):
    """Softmax over the first n[i, j] entries of axis 1, 0 beyond (a loop, independently); a
    row of zeros where the length is 0 or less."""
    out = np.zeros_like(x)
    for i in range(x.shape[0]):
        for j in range(x.shape[2]):
            k = int(n[i, j])
            if k <= 0:
                continue
            e = np.exp(x[i, :k, j] - x[i, :k, j].max())
            out[i, :k, j] = e / e.sum()
    return out


CASES.append(Case(
    "softmax", lambda: S.softmax(x, S.var("n"), axis=1, use_length=True),
    {"x": normal(2, 5, 3), "n": lambda rng: rng.integers(1, 6, size=(2, 3))},
    _softmax_length_ref, grad_nodes=["x"], id="softmax-use_length"))
# Lengths past the axis (all of it), zero and negative (zeros), fractional (truncated).
CASES.append(Case(
    "softmax", lambda: S.softmax(x, S.var("n"), axis=1, use_length=True),
    {"x": normal(2, 5, 3), "n": lambda rng: np.array([[7.0, 0.0, -2.0], [2.9, 5.0, 1.0]])},
    _softmax_length_ref, grad_nodes=["x"], id="softmax-use_length-edges"))


def _with_nans(*shape: int):
    def gen(rng):
        v = rng.uniform(0.5, 1.5, size=shape)
        v[rng.random(shape) < 0.25] = np.nan
        return v
    return gen


CASES += [
    Case("nansum", lambda: S.nansum(x, axis=1), {"x": _with_nans(3, 4, 2)},
         lambda x: np.where(np.isnan(x), 0, x).sum(axis=1)),
    Case("nanprod", lambda: S.nanprod(x, axis=(0, 2), keepdims=True), {"x": _with_nans(3, 4, 2)},
         lambda x: np.where(np.isnan(x), 1, x).prod(axis=(0, 2), keepdims=True)),
    Case("sum", lambda: S.sum(x), {"x": normal(2, 3)}, lambda x: np.array([x.sum()]),
         id="sum-all-gives-(1,)"),  # MXNet 1.x: a reduction over every axis has shape (1,)
]
