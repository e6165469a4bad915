"""The numpy reference of MXNet's fused ``RNN`` op: one step of each cell forward and backward,
and whole layers (both directions) over a sequence. ``ops/rnn.py`` registers the op.

Gates follow MXNet (and cuDNN): LSTM ``i, f, g, o``; GRU ``r, z, n`` with
``n = tanh(W_n x + b_n + r * (U_n h + c_n))``; vanilla ``act(W x + b + U h + c)``.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

GATES = {"rnn_relu": 1, "rnn_tanh": 1, "lstm": 4, "gru": 3}


def _sigmoid(v: np.ndarray) -> np.ndarray:
    return 0.5 * (np.tanh(0.5 * v) + 1.0)  # no overflow for large |v|


def step(mode: str, x: np.ndarray, h: np.ndarray, c: Optional[np.ndarray], w: tuple
         ) -> tuple[np.ndarray, Optional[np.ndarray], tuple]:
    """One time step: (h', c', what the backward step needs)."""
    wx, wh, bx, bh = w
    zx, zh = x @ wx.T + bx, h @ wh.T + bh
    if mode == "lstm":
        i, f, g, o = np.split(zx + zh, 4, axis=1)
        i, f, g, o = _sigmoid(i), _sigmoid(f), np.tanh(g), _sigmoid(o)
        c2 = f * c + i * g
        tc = np.tanh(c2)
        return o * tc, c2, (x, h, c, i, f, g, o, tc)
    if mode == "gru":
        rx, ux, nx = np.split(zx, 3, axis=1)
        rh, uh, nh = np.split(zh, 3, axis=1)
        r, u = _sigmoid(rx + rh), _sigmoid(ux + uh)
        n = np.tanh(nx + r * nh)
        return (1.0 - u) * n + u * h, None, (x, h, r, u, n, nh)
    a = zx + zh
    h2 = np.tanh(a) if mode == "rnn_tanh" else np.maximum(a, 0.0)
    return h2, None, (x, h, a, h2)


def step_back(mode: str, dh: np.ndarray, dc: Optional[np.ndarray], cache: tuple, w: tuple,
              gw: list) -> tuple[np.ndarray, np.ndarray, Optional[np.ndarray]]:
    """Backward of :func:`step`: adds into the weight gradients ``gw`` (wx, wh, bx, bh) and
    returns (dx, dh_prev, dc_prev)."""
    wx, wh = w[0], w[1]
    dc_prev = None
    if mode == "lstm":
        x, h, c, i, f, g, o, tc = cache
        dct = dc + dh * o * (1.0 - tc * tc)
        dzx = dzh = np.concatenate([dct * g * i * (1 - i), dct * c * f * (1 - f),
                                    dct * i * (1 - g * g), dh * tc * o * (1 - o)], axis=1)
        dc_prev = dct * f
    elif mode == "gru":
        x, h, r, u, n, nh = cache
        dan = dh * (1.0 - u) * (1.0 - n * n)
        dar = dan * nh * r * (1 - r)
        dau = dh * (h - n) * u * (1 - u)
        dzx = np.concatenate([dar, dau, dan], axis=1)
        dzh = np.concatenate([dar, dau, dan * r], axis=1)
    else:
        x, h, a, h2 = cache
        dzx = dzh = dh * ((1.0 - h2 * h2) if mode == "rnn_tanh" else (a > 0))
    gw[0] += dzx.T @ x
    gw[1] += dzh.T @ h
    gw[2] += dzx.sum(axis=0)
    gw[3] += dzh.sum(axis=0)
    dh_prev = dzh @ wh + (dh * cache[3] if mode == "gru" else 0.0)
    return dzx @ wx, dh_prev, dc_prev


def run(mode: str, xs: np.ndarray, h: np.ndarray, c: Optional[np.ndarray], w: tuple,
        reverse: bool) -> tuple[np.ndarray, np.ndarray, Optional[np.ndarray], list]:
    """One direction of one layer over (T, N, in): outputs (T, N, H), last h, last c, caches
    in the order the steps ran."""
    out = np.empty(xs.shape[:2] + (h.shape[1],), dtype=xs.dtype)
    caches = []
    for t in (range(len(xs) - 1, -1, -1) if reverse else range(len(xs))):
        h, c, cache = step(mode, xs[t], h, c, w)
        out[t] = h
        caches.append((t, cache))
    return out, h, c, caches


def run_back(mode: str, dout: np.ndarray, dh: np.ndarray, dc: Optional[np.ndarray],
             caches: list, w: tuple, gw: list, dxs: np.ndarray
             ) -> tuple[np.ndarray, Optional[np.ndarray]]:
    """Backward of :func:`run`: adds into ``dxs`` and ``gw``; returns (dh0, dc0)."""
    for t, cache in reversed(caches):
        dx, dh, dc = step_back(mode, dh + dout[t], dc, cache, w, gw)
        dxs[t] += dx
    return dh, dc
