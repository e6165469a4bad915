"""An independent float64 numpy implementation of MXNet's recurrent equations (gate order LSTM
i, f, g, o; GRU r, z, n with ``r * (U_n h + c_n)``), for the gluon.rnn tests: one step per
cell, whole layers (stacked, bidirectional, valid lengths as cuDNN: the state holds past a
sequence's length and its outputs there are 0; LSTMP projection)."""
from __future__ import annotations

from typing import Optional

import numpy as np


def _sig(v: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-v))


def step(mode: str, x: np.ndarray, states: list, p: dict) -> list:
    """New states (the output is the first) of one step; ``p`` holds MXNet's parameter names."""
    zx = x @ p["i2h_weight"].T + p["i2h_bias"]
    zh = states[0] @ p["h2h_weight"].T + p["h2h_bias"]
    if mode == "lstm":
        i, f, g, o = np.split(zx + zh, 4, axis=-1)
        c = _sig(f) * states[1] + _sig(i) * np.tanh(g)
        h = _sig(o) * np.tanh(c)
        if "h2r_weight" in p:
            h = h @ p["h2r_weight"].T
        return [h, c]
    if mode == "gru":
        xr, xz, xn = np.split(zx, 3, axis=-1)
        hr, hz, hn = np.split(zh, 3, axis=-1)
        r, z = _sig(xr + hr), _sig(xz + hz)
        n = np.tanh(xn + r * hn)
        return [(1 - z) * n + z * states[0]]
    a = zx + zh
    return [np.maximum(a, 0) if mode == "rnn_relu" else np.tanh(a)]


def direction(mode: str, xs: np.ndarray, states: list, p: dict, lengths: Optional[np.ndarray],
              reverse: bool) -> tuple[np.ndarray, list]:
    """(T, N, out) outputs and last states of one direction over (T, N, in)."""
    t_len = xs.shape[0]
    lengths = np.full(xs.shape[1], t_len) if lengths is None else lengths
    outs = np.zeros((t_len, xs.shape[1], states[0].shape[1]))
    for t in (range(t_len - 1, -1, -1) if reverse else range(t_len)):
        new = step(mode, xs[t], states, p)
        live = (t < lengths)[:, None]
        states = [np.where(live, n, s) for n, s in zip(new, states)]
        outs[t] = np.where(live, new[0], 0.0)
    return outs, states


def layer(mode: str, x: np.ndarray, states: list, params: dict, layers: int, bidirectional: bool,
          lengths: Optional[np.ndarray] = None) -> tuple[np.ndarray, list]:
    """A gluon.rnn layer in TNC: ``params`` by MXNet's names (``l0_i2h_weight``...);
    ``states`` (L*D, N, size) each. Returns the output and the new states."""
    dirs = "lr"[:2 if bidirectional else 1]
    finals: list = [[] for _ in states]
    for k in range(layers):
        outs = []
        for j, d in enumerate(dirs):
            s = k * len(dirs) + j
            p = {g: v for g_full, v in params.items() if g_full.startswith(f"{d}{k}_")
                 for g in [g_full[len(f"{d}{k}_"):]]}
            out, fin = direction(mode, x, [st[s] for st in states], p, lengths, j == 1)
            outs.append(out)
            for acc, f in zip(finals, fin):
                acc.append(f)
        x = np.concatenate(outs, axis=2)
    return x, [np.stack(f) for f in finals]
