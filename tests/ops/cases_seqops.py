"""Cases for the classic MXNet indexing, rearranging and math ops (ops/indexing_nd.py,
ops/rearrange.py, ops/math_extra.py). References are float64 numpy written from MXNet's
documented semantics with explicit loops (values checked against MXNet 1.9.1 live in
tests/ops/test_seqops_mxnet.py)."""
from __future__ import annotations

import math
from itertools import product

import numpy as np

import symgraph as sg

from .case import Case, away_from, integers, normal, uniform

S = sg.sym
x, y, i = S.var("x"), S.var("y"), S.var("i")


def const(values: list) -> object:
    return lambda rng: np.array(values, dtype=np.float64)


def _gather_nd(x: np.ndarray, i: np.ndarray) -> np.ndarray:
    m, rows = i.shape[0], i.reshape(i.shape[0], -1).T.astype(int)
    out = [x[tuple(int(v) % x.shape[j] for j, v in enumerate(r))] for r in rows]
    return np.array(out).reshape(i.shape[1:] + x.shape[m:])


def _scatter_nd(x: np.ndarray, i: np.ndarray, shape: tuple, add: bool) -> np.ndarray:
    out = np.zeros(shape)
    m = i.shape[0]
    rows = i.reshape(m, -1).T.astype(int)
    vals = x.reshape((len(rows),) + tuple(shape[m:]))
    for r, v in zip(rows, vals):
        out[tuple(r)] = out[tuple(r)] + v if add else v
    return out


def _d2s(x: np.ndarray, b: int) -> np.ndarray:
    n, c, h, w = x.shape
    out = np.zeros((n, c // (b * b), h * b, w * b))
    for nn, cc, hh, ww, p, q in product(range(n), range(c // (b * b)), range(h), range(w),
                                        range(b), range(b)):
        out[nn, cc, hh * b + p, ww * b + q] = x[nn, (p * b + q) * (c // (b * b)) + cc, hh, ww]
    return out


def _s2d(x: np.ndarray, b: int) -> np.ndarray:
    n, c, h, w = x.shape
    out = np.zeros((n, c * b * b, h // b, w // b))
    for nn, cc, hh, ww, p, q in product(range(n), range(c), range(h // b), range(w // b),
                                        range(b), range(b)):
        out[nn, (p * b + q) * c + cc, hh, ww] = x[nn, cc, hh * b + p, ww * b + q]
    return out


def _im2col(x: np.ndarray, k: tuple, s: tuple, p: tuple, d: tuple = (1, 1)) -> np.ndarray:
    n, c, h, w = x.shape
    xp = np.zeros((n, c, h + 2 * p[0], w + 2 * p[1]))
    xp[:, :, p[0]:p[0] + h, p[1]:p[1] + w] = x
    oh = (h + 2 * p[0] - d[0] * (k[0] - 1) - 1) // s[0] + 1
    ow = (w + 2 * p[1] - d[1] * (k[1] - 1) - 1) // s[1] + 1
    out = np.zeros((n, c * k[0] * k[1], oh * ow))
    for nn, cc, a, b, u, v in product(range(n), range(c), range(k[0]), range(k[1]),
                                      range(oh), range(ow)):
        out[nn, (cc * k[0] + a) * k[1] + b, u * ow + v] = \
            xp[nn, cc, u * s[0] + a * d[0], v * s[1] + b * d[1]]
    return out


def _col2im(cols: np.ndarray, size: tuple, k: tuple, s: tuple, p: tuple) -> np.ndarray:
    n, ck, _ = cols.shape
    c = ck // (k[0] * k[1])
    h, w = size
    xp = np.zeros((n, c, h + 2 * p[0], w + 2 * p[1]))
    oh, ow = (h + 2 * p[0] - k[0]) // s[0] + 1, (w + 2 * p[1] - k[1]) // s[1] + 1
    for nn, cc, a, b, u, v in product(range(n), range(c), range(k[0]), range(k[1]),
                                      range(oh), range(ow)):
        xp[nn, cc, u * s[0] + a, v * s[1] + b] += cols[nn, (cc * k[0] + a) * k[1] + b, u * ow + v]
    return xp[:, :, p[0]:p[0] + h, p[1]:p[1] + w]


def _cumsum(x: np.ndarray, axis: int) -> np.ndarray:
    moved = np.moveaxis(x, axis, 0).copy()
    for r in range(1, moved.shape[0]):
        moved[r] += moved[r - 1]
    return np.moveaxis(moved, 0, axis)


def _erfinv(x: np.ndarray) -> np.ndarray:
    """Bisection on math.erf (independent of the op's Newton iteration)."""
    def one(t: float) -> float:
        lo, hi = -6.0, 6.0
        for _ in range(200):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if math.erf(mid) < t else (lo, mid)
        return (lo + hi) / 2
    return np.vectorize(one)(x)


def _diag3(x: np.ndarray, k: int) -> np.ndarray:
    """Diagonal k of the (axis 2, axis 0) matrices of 3-D x, on a last axis."""
    rows = [(r, r + k) for r in range(x.shape[2]) if 0 <= r + k < x.shape[0]]
    return np.stack([x[c, :, r] for r, c in rows], axis=-1)


IDX = const([[1, 0, 2, 0], [2, 1, 0, 2]])
CASES: list[Case] = [
    Case("gather_nd", lambda: S.gather_nd(x, i), {"x": normal(3, 4, 2), "i": IDX},
         _gather_nd, grad_nodes=["x"], also_covers=("_backward_gather_nd",)),
    Case("gather_nd", lambda: S.gather_nd(x, i),
         {"x": normal(3, 4), "i": const([[-1, 0], [2, -4]])},
         _gather_nd, grad_nodes=["x"], id="gather_nd-negative"),
    Case("scatter_nd", lambda: S.scatter_nd(x, i, shape=(3, 4, 2)),
         {"x": normal(4, 2), "i": const([[1, 0, 2, 2], [2, 1, 0, 3]])},
         lambda x, i: _scatter_nd(x, i, (3, 4, 2), False), grad_nodes=["x"]),
    Case("_backward_gather_nd", lambda: S._backward_gather_nd(x, i, shape=(3, 4)),
         {"x": normal(4), "i": IDX}, lambda x, i: _scatter_nd(x, i, (3, 4), True),
         grad_nodes=["x"], id="_backward_gather_nd-repeats"),
    Case("ravel_multi_index", lambda: S.ravel_multi_index(x, shape=(3, 4, 5)),
         {"x": const([[2, 0, 1], [3, 1, 0], [4, 0, 2]])},
         lambda x: np.array([r * 20 + s * 5 + t for r, s, t in x.T]), grad=False),
    Case("unravel_index", lambda: S.unravel_index(x, shape=(3, 4, 5)),
         {"x": const([59, 0, 22, 7])},
         lambda x: np.array([[v // 20, v // 5 % 4, v % 5] for v in x]).T, grad=False),
    Case("_contrib_index_copy", lambda: S.contrib.index_copy(x, i, y),
         {"x": normal(5, 3), "i": const([3, 0]), "y": normal(2, 3)},
         lambda x, i, y: np.concatenate([y[1:2], x[1:3], y[0:1], x[4:]]),
         grad_nodes=["x", "y"]),
    Case("_contrib_index_array", lambda: S.contrib.index_array(x, axes=(2, 0)),
         {"x": normal(2, 3, 4)},
         lambda x: np.array([[[[c, a] for c in range(4)] for _ in range(3)] for a in range(2)]),
         grad=False),
    Case("_contrib_arange_like", lambda: S.contrib.arange_like(x, start=1.5, step=-0.5, repeat=2),
         {"x": normal(2, 3)}, lambda x: np.array([[1.5, 1.5, 1], [1, 0.5, 0.5]]), grad=False),
    Case("_contrib_arange_like", lambda: S.contrib.arange_like(x, axis=-1),
         {"x": normal(2, 3)}, lambda x: np.array([0., 1, 2]), grad=False, id="arange_like-axis"),
    # no gradient in MXNet (binding through it raises); BlockGrad keeps autodiff out
    Case("fill_element_0index", lambda: S.BlockGrad(S.fill_element_0index(x, y, i)),
         {"x": normal(3, 4), "y": normal(3), "i": const([3, 0, 1])},
         lambda x, y, i: np.array([[y[r] if c == i[r] else x[r, c] for c in range(4)]
                                   for r in range(3)]), grad=False),
    Case("depth_to_space", lambda: S.depth_to_space(x, block_size=2), {"x": normal(2, 8, 2, 3)},
         lambda x: _d2s(x, 2)),
    Case("space_to_depth", lambda: S.space_to_depth(x, block_size=2), {"x": normal(2, 3, 4, 6)},
         lambda x: _s2d(x, 2)),
    Case("diag", lambda: S.diag(x, k=1), {"x": normal(3, 4)},
         lambda x: np.array([x[r, r + 1] for r in range(3)]), also_covers=("_backward_diag",)),
    Case("diag", lambda: S.diag(x, k=-2), {"x": normal(3)},
         lambda x: np.array([[x[c] if r == c + 2 else 0 for c in range(5)] for r in range(5)]),
         id="diag-vector"),
    Case("diag", lambda: S.diag(x, k=1, axis1=2, axis2=0), {"x": normal(3, 2, 4)},
         lambda x: _diag3(x, 1), id="diag-axes"),
    Case("Crop", lambda: S.Crop(x, offset=(1, 2), h_w=(2, 3), num_args=1),
         {"x": normal(2, 3, 4, 6)}, lambda x: x[:, :, 1:3, 2:5], also_covers=("_backward_Crop",)),
    Case("Crop", lambda: S.Crop(x, y, center_crop=True), {"x": normal(1, 2, 5, 6),
                                                          "y": normal(1, 1, 2, 3)},
         lambda x, y: x[:, :, 1:3, 1:4], grad_nodes=["x"], id="Crop-like-centre"),
    Case("im2col", lambda: S.im2col(x, kernel=(2, 3), stride=(1, 2), pad=(1, 1)),
         {"x": normal(2, 3, 4, 5)}, lambda x: _im2col(x, (2, 3), (1, 2), (1, 1))),
    Case("im2col", lambda: S.im2col(x, kernel=(2, 2), dilate=(2, 1)),
         {"x": normal(1, 2, 5, 4)}, lambda x: _im2col(x, (2, 2), (1, 1), (0, 0), (2, 1)),
         id="im2col-dilate"),
    Case("col2im", lambda: S.col2im(x, output_size=(4, 5), kernel=(2, 3), stride=(1, 2),
                                    pad=(1, 1)),
         {"x": normal(2, 18, 15)}, lambda x: _col2im(x, (4, 5), (2, 3), (1, 2), (1, 1))),
    Case("cumsum", lambda: S.cumsum(x, axis=1), {"x": normal(3, 4, 2)}, lambda x: _cumsum(x, 1)),
    Case("cumsum", lambda: S.cumsum(x), {"x": normal(3, 4)},
         lambda x: _cumsum(x.reshape(-1), 0), id="cumsum-flat"),
    # the output dtype: a float32 sum, so its gradient is checked to float32's precision
    Case("cumsum", lambda: S.cumsum(x, axis=-1, dtype="float32"), {"x": normal(3, 4)},
         lambda x: _cumsum(x, 1), grad_rtol=2e-2, id="cumsum-dtype"),
    Case("hard_sigmoid", lambda: S.hard_sigmoid(x, alpha=0.3, beta=0.4),
         {"x": away_from((-4 / 3, 2.0), 4, 5, low=-3, high=3)},
         lambda x: np.clip(0.3 * x + 0.4, 0, 1)),
    Case("erfinv", lambda: S.erfinv(x), {"x": uniform(3, 4, low=-0.95, high=0.95)}, _erfinv,
         rtol=1e-6),
    Case("_contrib_allclose", lambda: S.contrib.allclose(x, y, rtol=0.1, atol=0.01),
         {"x": const([[1.0, 2.0], [-3.0, 0.0]]), "y": const([[1.09, 2.0], [-3.0, 0.009]])},
         lambda x, y: np.array(1.0), grad=False),
    Case("_contrib_allclose", lambda: S.contrib.allclose(x, y, rtol=0.04),
         {"x": const([1.0, 2.1]), "y": const([1.0, 2.0])}, lambda x, y: np.array(0.0),
         grad=False, id="allclose-not"),
    Case("_contrib_div_sqrt_dim", lambda: S.contrib.div_sqrt_dim(x), {"x": normal(2, 3, 9)},
         lambda x: x / 3.0),
]
