"""The numpy reference of MXNet's fused ``RNN`` op: one step of each cell forward and backward,
and whole layers (both directions) over a sequence. ``ops/rnn.py`` registers the op.

Gates follow MXNet (and cuDNN): LSTM ``i, f, g, o``; GRU ``r, z, n`` with
``n = tanh(W_n x + b_n + r * (U_n h + c_n))``; vanilla ``act(W x + b + U h + c)``.

The pointwise part of each cell, forward and backward, is a table of scalar formulas
(:data:`CELLS`, ``symgraph.expr``): numpy evaluates them here and the CUDA gate kernels
(``cuda/kernels_rnn.py``) print the same formulas as C, so the two cannot drift apart. The
matrix products around them are numpy's ``@`` here and cuBLAS GEMMs on the GPU.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from ...core import expr as E
from ...core.expr import Expr, inp

GATES = {"rnn_relu": 1, "rnn_tanh": 1, "lstm": 4, "gru": 3}


def _sigmoid(v: Expr) -> Expr:
    return 0.5 * (E.call("tanh", 0.5 * v) + 1.0)  # no overflow for large |v|


@dataclass(frozen=True)
class Cell:
    """The pointwise formulas of one cell. ``forward`` reads ``forward_in`` (pre-activations
    already summed with their biases, previous states) and returns ``forward_out``;
    ``backward`` reads ``backward_in`` and returns ``backward_out``: the gradients of the
    pre-activations of the input side (``dzx``: one per gate), of the recurrent side where
    they differ (GRU's n gate), and the gradients reaching the previous state through the cell
    rather than through ``U`` (LSTM's dc, GRU's ``dh * z``)."""

    forward_in: tuple[str, ...]
    forward_out: tuple[str, ...]
    forward: tuple[Expr, ...]
    backward_in: tuple[str, ...]
    backward_out: tuple[str, ...]
    backward: tuple[Expr, ...]


def _lstm() -> Cell:
    ai, af, ag, ao, c = (inp(k) for k in range(5))
    i, f, g, o = _sigmoid(ai), _sigmoid(af), E.call("tanh", ag), _sigmoid(ao)
    c2 = f * c + i * g
    dh, dc, cp, bi, bf, bg, bo, bc = (inp(k) for k in range(8))
    tc = E.call("tanh", bc)
    dct = dc + dh * bo * (1.0 - tc * tc)
    return Cell(("ai", "af", "ag", "ao", "c"), ("i", "f", "g", "o", "c", "h"),
                (i, f, g, o, c2, o * E.call("tanh", c2)),
                ("dh", "dc", "c_prev", "i", "f", "g", "o", "c"),
                ("di", "df", "dg", "do", "dc_prev"),
                (dct * bg * bi * (1.0 - bi), dct * cp * bf * (1.0 - bf),
                 dct * bi * (1.0 - bg * bg), dh * tc * bo * (1.0 - bo), dct * bf))


def _gru() -> Cell:
    ar, au, nx, nh, h = (inp(k) for k in range(5))
    r, u = _sigmoid(ar), _sigmoid(au)
    n = E.call("tanh", nx + r * nh)
    dh, hp, br, bu, bn, bnh = (inp(k) for k in range(6))
    dan = dh * (1.0 - bu) * (1.0 - bn * bn)
    return Cell(("ar", "az", "nx", "nh", "h"), ("r", "z", "n", "nh", "h"),
                (r, u, n, nh, (1.0 - u) * n + u * h),
                ("dh", "h_prev", "r", "z", "n", "nh"),
                ("dr", "dz", "dn", "dnh", "dh_prev"),
                (dan * bnh * br * (1.0 - br), dh * (hp - bn) * bu * (1.0 - bu), dan, dan * br,
                 dh * bu))


def _vanilla(relu: bool) -> Cell:
    a, dh, h = inp(0), inp(0), inp(1)
    act = E.call("max", a, 0.0) if relu else E.call("tanh", a)
    slope = E.call("gt", h, 0.0) if relu else 1.0 - h * h  # h > 0 exactly where a > 0
    return Cell(("a",), ("h",), (act,), ("dh", "h"), ("da",), (dh * slope,))


CELLS: dict[str, Cell] = {"lstm": _lstm(), "gru": _gru(), "rnn_tanh": _vanilla(False),
                          "rnn_relu": _vanilla(True)}


def _eval(roots: tuple, inputs: list) -> list:
    return E.evaluate(roots, inputs, np.result_type(*inputs))


def step(mode: str, zx: np.ndarray, h: np.ndarray, c: Optional[np.ndarray], w: tuple
         ) -> tuple[np.ndarray, Optional[np.ndarray], tuple]:
    """One time step from its input-side pre-activations ``zx`` (``x @ W^T + b``, computed
    for the whole sequence at once by :func:`run`): (h', c', what the backward step needs,
    the previous state first)."""
    wh, bh = w[1], w[3]
    zh = h @ wh.T + bh
    cell = CELLS[mode]
    if mode == "lstm":
        i, f, g, o, c2, h2 = _eval(cell.forward, np.split(zx + zh, 4, axis=1) + [c])
        return h2, c2, (h, c, i, f, g, o, c2)
    if mode == "gru":
        rx, ux, nx = np.split(zx, 3, axis=1)
        rh, uh, nh = np.split(zh, 3, axis=1)
        r, u, n, nh, h2 = _eval(cell.forward, [rx + rh, ux + uh, nx, nh, h])
        return h2, None, (h, r, u, n, nh)
    (h2,) = _eval(cell.forward, [zx + zh])
    return h2, None, (h, h2)


def step_back(mode: str, dh: np.ndarray, dc: Optional[np.ndarray], cache: tuple, w: tuple
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray, Optional[np.ndarray]]:
    """Backward of :func:`step`: (gradient of the input-side pre-activations, of the
    recurrent side's, dh_prev, dc_prev). :func:`run_back` turns the first two into the
    weight and input gradients, for the whole sequence at once."""
    dc_prev, cell, h = None, CELLS[mode], cache[0]
    dh_cell = 0.0
    if mode == "lstm":
        *dz, dc_prev = _eval(cell.backward, [dh, dc] + list(cache[1:]))
        dzx = dzh = np.concatenate(dz, axis=1)
    elif mode == "gru":
        dar, dau, dan, dnh, dh_cell = _eval(cell.backward, [dh, h] + list(cache[1:]))
        dzx = np.concatenate([dar, dau, dan], axis=1)
        dzh = np.concatenate([dar, dau, dnh], axis=1)
    else:
        (dzx,) = _eval(cell.backward, [dh, cache[1]])
        dzh = dzx
    return dzx, dzh, dzh @ w[1] + dh_cell, dc_prev


def _flat(v: np.ndarray) -> np.ndarray:
    """(T, N, k) as (T*N, k)."""
    return v.reshape(-1, v.shape[-1])


def run(mode: str, xs: np.ndarray, h: np.ndarray, c: Optional[np.ndarray], w: tuple,
        reverse: bool) -> tuple[np.ndarray, np.ndarray, Optional[np.ndarray], list]:
    """One direction of one layer over (T, N, in): outputs (T, N, H), last h, last c, caches
    in the order the steps ran. The input side's product is one GEMM over every step (a
    GEMM per step cost more in calls than in arithmetic)."""
    zxs = (_flat(xs) @ w[0].T + w[2]).reshape(xs.shape[:2] + (-1,))
    out = np.empty(xs.shape[:2] + (h.shape[1],), dtype=xs.dtype)
    caches = []
    for t in (range(len(xs) - 1, -1, -1) if reverse else range(len(xs))):
        h, c, cache = step(mode, zxs[t], h, c, w)
        out[t] = h
        caches.append((t, cache))
    return out, h, c, caches


def run_back(mode: str, dout: np.ndarray, dh: np.ndarray, dc: Optional[np.ndarray],
             caches: list, w: tuple, gw: list, xs: np.ndarray, dxs: np.ndarray
             ) -> tuple[np.ndarray, Optional[np.ndarray]]:
    """Backward of :func:`run` over the layer's input ``xs``: adds into ``dxs`` and the
    weight gradients ``gw`` (W, U, b, c: each one GEMM or sum over the sequence); returns
    (dh0, dc0)."""
    dzxs = np.empty(xs.shape[:2] + (w[0].shape[0],), dtype=dout.dtype)
    dzhs = np.empty_like(dzxs) if mode == "gru" else dzxs
    h_prev = np.empty(dout.shape, dtype=dout.dtype)
    for t, cache in reversed(caches):
        dzxs[t], dzhs[t], dh, dc = step_back(mode, dh + dout[t], dc, cache, w)
        h_prev[t] = cache[0]
    gw[0] += _flat(dzxs).T @ _flat(xs)
    gw[1] += _flat(dzhs).T @ _flat(h_prev)
    gw[2] += _flat(dzxs).sum(axis=0)
    gw[3] += _flat(dzhs).sum(axis=0)
    dxs += (_flat(dzxs) @ w[0]).reshape(dxs.shape)
    return dh, dc
