"""Cases for the sequence ops (``ops/sequence.py``). The references loop over sequences and
steps in float64 (written from MXNet 1.9.1's documented semantics; ``tests/ops/test_sequence.py``
checks the ops against MXNet itself)."""
from __future__ import annotations

import numpy as np

import symgraph as sg

from .case import Case, integers, normal

S = sg.sym
x, n, dy = S.var("x"), S.var("n"), S.var("dy")
T, N = 5, 3


def _tn(x: np.ndarray, axis: int) -> np.ndarray:
    return x if axis == 0 else np.swapaxes(x, 0, 1)


def _ref_mask(x: np.ndarray, n: np.ndarray, value: float, axis: int) -> np.ndarray:
    out = _tn(x, axis).copy()
    for b in range(out.shape[1]):
        for t in range(out.shape[0]):
            if t >= int(n[b]):
                out[t, b] = value
    return _tn(out, axis)


def _ref_reverse(x: np.ndarray, n: np.ndarray) -> np.ndarray:
    out = x.copy()
    for b in range(x.shape[1]):
        k = min(int(n[b]), x.shape[0])
        out[:k, b] = x[:k, b][::-1]
    return out


def _ref_last(x: np.ndarray, n: np.ndarray, axis: int) -> np.ndarray:
    v = _tn(x, axis)
    return np.stack([v[min(int(n[b]), v.shape[0]) - 1, b] for b in range(v.shape[1])])


def _ref_last_backward(dy: np.ndarray, n: np.ndarray, x: np.ndarray, axis: int) -> np.ndarray:
    out = np.zeros_like(_tn(x, axis))
    for b in range(out.shape[1]):
        out[min(int(n[b]), out.shape[0]) - 1, b] = dy[b]
    return _tn(out, axis)


LENS = integers(1, T + 1, N)  # 1..T: every length a sequence can have
CASES: list[Case] = []
for ax in (0, 1):
    shape = (T, N, 2) if ax == 0 else (N, T, 2)
    CASES += [
        Case("SequenceMask", lambda a=ax: S.SequenceMask(x, n, use_sequence_length=True,
                                                         value=-2.5, axis=a),
             {"x": normal(*shape), "n": LENS}, lambda x, n, a=ax: _ref_mask(x, n, -2.5, a),
             grad_nodes=["x"], id=f"SequenceMask-axis{ax}"),
        Case("SequenceLast", lambda a=ax: S.SequenceLast(x, n, use_sequence_length=True,
                                                         axis=a),
             {"x": normal(*shape), "n": LENS}, lambda x, n, a=ax: _ref_last(x, n, a),
             grad_nodes=["x"], id=f"SequenceLast-axis{ax}"),
        Case("_backward_SequenceLast",
             lambda a=ax: S._backward_SequenceLast(dy, n, x, use_sequence_length=True, axis=a),
             {"dy": normal(N, 2), "n": LENS, "x": normal(*shape)},
             lambda dy, n, x, a=ax: _ref_last_backward(dy, n, x, a), grad_nodes=["dy"],
             id=f"_backward_SequenceLast-axis{ax}"),
    ]
CASES += [
    Case("SequenceReverse", lambda: S.SequenceReverse(x, n, use_sequence_length=True),
         {"x": normal(T, N, 2, 2), "n": LENS}, _ref_reverse, grad_nodes=["x"]),
    Case("SequenceReverse", lambda: S.SequenceReverse(x), {"x": normal(T, N)},
         lambda x: x[::-1], id="SequenceReverse-whole"),
    Case("SequenceMask", lambda: S.SequenceMask(x, value=7.0), {"x": normal(T, N)},
         lambda x: x, id="SequenceMask-whole"),
    Case("SequenceLast", lambda: S.SequenceLast(x, axis=1), {"x": normal(N, T, 3)},
         lambda x: x[:, -1], id="SequenceLast-whole"),
]
