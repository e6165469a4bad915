"""Cases for MXNet-parity details: ``where`` with a 1-D condition and the
ops added in that round. References are plain float64 numpy, written from MXNet's documented
semantics (checked against MXNet 1.9.1 where noted)."""
from __future__ import annotations

import numpy as np

import symgraph as sg

from .case import Case, away_from, integers, normal

S = sg.sym
x, y, c = S.var("x"), S.var("y"), S.var("c")


def _rows(cond: np.ndarray, ndim: int) -> np.ndarray:
    """A 1-D condition as a column over the remaining axes (MXNet: it picks whole rows)."""
    return cond.reshape(cond.shape + (1,) * (ndim - 1)) != 0


def _same_pool(x: np.ndarray, k: int, s: int, kind: str) -> np.ndarray:
    """MXNet 1.9.1's 'same' pooling of 1-D data (values checked against it): ceil(n/s)
    windows at i*s, cut at the input's end; an average divides by the cells inside."""
    n = x.shape[2]
    wins = [x[:, :, i * s:min(i * s + k, n)] for i in range(-(-n // s))]
    red = {"max": np.max, "sum": np.sum, "avg": np.mean}[kind]
    return np.stack([red(w, axis=2) for w in wins], axis=2)


def _softmin(x: np.ndarray, axis: int, t: float = 1.0) -> np.ndarray:
    z = np.exp(-(x - x.min(axis=axis, keepdims=True)) / t)
    return z / z.sum(axis=axis, keepdims=True)


def _up(x: np.ndarray, s: int) -> np.ndarray:
    """Nearest-neighbour upsampling by index arithmetic: out[..., i, j] = x[..., i//s, j//s]."""
    h, w = x.shape[2] * s, x.shape[3] * s
    return x[:, :, np.arange(h) // s][:, :, :, np.arange(w) // s]


def _lstm_ref(x: np.ndarray, p: np.ndarray, h: np.ndarray, c: np.ndarray) -> np.ndarray:
    """One LSTM layer written from MXNet's documented formulas (gates i, f, g, o; weights
    W (4H, I), U (4H, H), then biases b, c in the flat vector)."""
    hsz, isz = h.shape[2], x.shape[2]
    w = p[:4 * hsz * isz].reshape(4 * hsz, isz)
    u = p[4 * hsz * isz:4 * hsz * (isz + hsz)].reshape(4 * hsz, hsz)
    b = p[4 * hsz * (isz + hsz):].reshape(2, 4 * hsz).sum(axis=0)
    sig = lambda v: 1 / (1 + np.exp(-v))  # noqa: E731
    hh, cc, out = h[0], c[0], []
    for t in range(x.shape[0]):
        z = x[t] @ w.T + hh @ u.T + b
        i, f, g, o = (z[:, k * hsz:(k + 1) * hsz] for k in range(4))
        cc = sig(f) * cc + sig(i) * np.tanh(g)
        hh = sig(o) * np.tanh(cc)
        out.append(hh)
    return np.stack(out)


CASES: list[Case] = [
    Case("where", lambda: S.where(c, x, y),
         {"c": integers(0, 2, 4), "x": normal(4, 3, 2), "y": normal(4, 3, 2)},
         lambda c, x, y: np.where(_rows(c, 3), x, y), grad_nodes=["x", "y"], id="where-rows"),
    # inside a fusable chain: simplify's rewrite must reach the fused kernel
    Case("where", lambda: S.exp(S.where(c, x * 2.0, S.sin(y))) + 1.0,
         {"c": integers(0, 2, 5), "x": normal(5, 3), "y": normal(5, 3)},
         lambda c, x, y: np.exp(np.where(_rows(c, 2), 2 * x, np.sin(y))) + 1,
         grad_nodes=["x", "y"], id="where-rows-fused"),
    Case("Pooling", lambda: S.Pooling(x, kernel=(3,), stride=(2,), pool_type="max",
                                      pooling_convention="same"),
         {"x": normal(2, 3, 10)}, lambda x: _same_pool(x, 3, 2, "max"), id="Pooling-same-max"),
    Case("Pooling", lambda: S.Pooling(x, kernel=(4,), stride=(3,), pool_type="avg",
                                      pooling_convention="same", pad=(0, 0, 0)),
         {"x": normal(2, 3, 10)}, lambda x: _same_pool(x, 4, 3, "avg"), id="Pooling-same-avg"),
    # PReLU's gamma over the batch and channel axes (MXNet's expand_shape; test_prelu)
    Case("LeakyReLU", lambda: S.LeakyReLU(x, gamma=S.var("g"), act_type="prelu"),
         {"x": away_from((0,), 3, 4, 2, 5), "g": normal(3, 4)},
         lambda x, g: np.where(x > 0, x, g[:, :, None, None] * x), id="LeakyReLU-prelu-NC",
         also_covers=("_prelu_gamma",)),
    Case("LeakyReLU", lambda: S.LeakyReLU(x, gamma=S.var("g"), act_type="prelu"),
         {"x": away_from((0,), 3, 4), "g": normal(1, 4)},
         lambda x, g: np.where(x > 0, x, g * x), id="LeakyReLU-prelu-1C"),
    # fluent list of MXNet 1.9.1 (test_symbol_fluent)
    Case("argmax_channel", lambda: S.argmax_channel(x), {"x": normal(3, 4, 5)},
         lambda x: np.argmax(x, axis=1).astype(np.float64), grad=False),
    Case("argmax_channel", lambda: S.argmax_channel(x), {"x": normal(6)},
         lambda x: np.array([np.argmax(x)], np.float64), grad=False, id="argmax_channel-1d"),
    Case("softmin", lambda: S.softmin(x, axis=1), {"x": normal(3, 4, 2)},
         lambda x: _softmin(x, 1)),
    Case("softmin", lambda: S.softmin(x, axis=0, temperature=2.5), {"x": normal(3, 4)},
         lambda x: _softmin(x, 0, 2.5), id="softmin-temperature"),
    Case("slice_like", lambda: S.slice_like(x, y, axes=(0, -2)),
         {"x": normal(5, 6, 2), "y": normal(3, 4)}, lambda x, y: x[:3, :4],
         grad_nodes=["x"], also_covers=("_backward_slice_like",)),
    Case("slice_like", lambda: S.slice_like(x, y), {"x": normal(5, 6, 3), "y": normal(2, 6, 1)},
         lambda x, y: x[:2, :6, :1], grad_nodes=["x"], id="slice_like-all-axes"),
    Case("broadcast_like", lambda: S.broadcast_like(x, y, lhs_axes=(0, 2), rhs_axes=(1, 0)),
         {"x": normal(1, 4, 1), "y": normal(3, 5)},
         lambda x, y: np.broadcast_to(x, (5, 4, 3)), grad_nodes=["x"], id="broadcast_like-axes"),
    Case("UpSampling", lambda: S.UpSampling(x, scale=2, sample_type="nearest"),
         {"x": normal(2, 3, 3, 4)}, lambda x: _up(x, 2)),
    Case("UpSampling", lambda: S.UpSampling(x, y, scale=2, sample_type="nearest", num_args=2),
         {"x": normal(2, 3, 2, 3), "y": normal(2, 1, 4, 6)},
         lambda x, y: np.concatenate([_up(x, 2), y], axis=1), id="UpSampling-concat"),
    Case("UpSampling", lambda: S.UpSampling(x, y, scale=3, sample_type="nearest", num_args=2,
                                            multi_input_mode="sum"),
         {"x": normal(1, 2, 2, 2), "y": normal(1, 2, 6, 6)},
         lambda x, y: _up(x, 3) + y, id="UpSampling-sum"),
    Case("RNN", lambda: S.RNN(x, S.var("p"), S.var("h"), S.var("c"), state_size=3,
                              num_layers=1, mode="lstm"),
         {"x": normal(4, 2, 3), "p": normal(4 * 3 * (3 + 3) + 2 * 4 * 3, scale=0.5),
          "h": normal(1, 2, 3), "c": normal(1, 2, 3)}, _lstm_ref, also_covers=("_backward_RNN",)),
]
