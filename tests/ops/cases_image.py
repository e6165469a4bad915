"""Cases for the ``sg.nd.image`` ops (``ops/image*.py``), ``contrib.hawkesll``,
``contrib.BatchNormWithReLU`` and LeakyReLU's rrelu: numpy float64 references written here
(colorsys for the hue, the likelihood's definition for hawkesll); random ops with degenerate
ranges or a property every draw has (a flip keeps the sorted values along its axis)."""
from __future__ import annotations

import colorsys

import numpy as np

import symgraph as sg

from .case import Case, away_from, integers, normal, uniform

S = sg.sym
x = S.var("x")

CASES = [
    Case("_image_flip_left_right", lambda: S.image.flip_left_right(x), {"x": normal(3, 4, 2)},
         lambda x: x[:, ::-1]),
    Case("_image_flip_left_right", lambda: S.image.flip_left_right(x),
         {"x": normal(2, 3, 4, 2)}, lambda x: x[:, :, ::-1], id="flip_left_right_batch"),
    Case("_image_flip_top_bottom", lambda: S.image.flip_top_bottom(x), {"x": normal(3, 4, 2)},
         lambda x: x[::-1]),
    Case("_image_flip_top_bottom", lambda: S.image.flip_top_bottom(x),
         {"x": normal(2, 3, 4, 2)}, lambda x: x[:, ::-1], id="flip_top_bottom_batch"),
]

# -- colour augmentations, resize, hawkesll, BatchNormWithReLU, rrelu (independent references) --


def _bn_relu_ref(x, gamma, beta, eps=1e-3):
    """relu of training BatchNorm over axis 1 (batch statistics)."""
    red = (0, 2)
    mean, var = x.mean(axis=red, keepdims=True), x.var(axis=red, keepdims=True)
    y = (x - mean) / np.sqrt(var + eps) * gamma[None, :, None] + beta[None, :, None]
    return np.maximum(y, 0.0)

LUMA = np.array([0.299, 0.587, 0.114])
# AlexNet's ImageNet PCA: eigenvalues and eigenvectors (columns) as published
EIGVAL = np.array([55.46, 4.794, 1.148])
EIGVEC = np.array([[-0.5675, 0.7192, 0.4009], [-0.5808, -0.0045, -0.8140],
                   [-0.5836, -0.6948, 0.4203]])
img = uniform(4, 5, 3, low=0.0, high=255.0)


def _hue_ref(x, turn):
    """Every pixel through Python's colorsys HLS, hue turned by ``turn``."""
    out = np.empty_like(x)
    for idx in np.ndindex(x.shape[:-1]):
        h, l, s = colorsys.rgb_to_hls(*(x[idx] / 255.0))
        out[idx] = np.array(colorsys.hls_to_rgb((h + turn) % 1.0, l, s)) * 255.0
    return out


def _resize_ref(x, oh, ow):
    """OpenCV's bilinear resize, pixel by pixel: source (o + 0.5) * in / out - 0.5."""
    def src(o, n_in, n_out):
        s = max((o + 0.5) * n_in / n_out - 0.5, 0.0)
        i = min(int(s), n_in - 1)
        return i, min(i + 1, n_in - 1), (s - i if i < n_in - 1 else 0.0)
    out = np.zeros((oh, ow, x.shape[2]))
    for p in range(oh):
        y0, y1, fy = src(p, x.shape[0], oh)
        for q in range(ow):
            x0, x1, fx = src(q, x.shape[1], ow)
            out[p, q] = ((x[y0, x0] * (1 - fx) + x[y0, x1] * fx) * (1 - fy)
                         + (x[y1, x0] * (1 - fx) + x[y1, x1] * fx) * fy)
    return out


def _hawkes_ref(lda, alpha, beta, state, lags, marks, valid, max_time):
    """The log likelihood as its definition sums it: log intensity at each point minus the
    integrated intensity over (0, max_time], per process."""
    n, k = lda.shape
    ll, out = np.zeros(n), np.zeros((n, k))
    for i in range(n):
        times = np.cumsum(lags[i, :int(valid[i])])
        for c in range(k):
            tc = times[marks[i, :int(valid[i])] == c]
            for j, t in enumerate(tc):
                ll[i] += np.log(lda[i, c] + alpha[c] * beta[c] * (
                    state[i, c] * np.exp(-beta[c] * t) + np.exp(-beta[c] * (t - tc[:j])).sum()))
            ll[i] -= lda[i, c] * max_time[i] + alpha[c] * (
                state[i, c] * (1 - np.exp(-beta[c] * max_time[i]))
                + (1 - np.exp(-beta[c] * (max_time[i] - tc))).sum())
            out[i, c] = (state[i, c] * np.exp(-beta[c] * max_time[i])
                         + np.exp(-beta[c] * (max_time[i] - tc)).sum())
    return [ll, out]


hk = [S.var(v) for v in ("lda", "alpha", "beta", "state", "lags", "marks", "valid", "tmax")]
bnr = S.var("bn_gamma"), S.var("bn_beta"), S.var("bn_moving_mean"), S.var("bn_moving_var")

CASES += [
    Case("_image_adjust_lighting", lambda: S.image.adjust_lighting(x, alpha=(0.1, -0.2, 0.3)),
         {"x": img}, lambda x: x + EIGVEC @ (EIGVAL * [0.1, -0.2, 0.3])),
    Case("_image_random_brightness",
         lambda: S.image.random_brightness(x, min_factor=1.3, max_factor=1.3), {"x": img},
         lambda x: x * 1.3, grad=False),
    Case("_image_random_contrast",
         lambda: S.image.random_contrast(x, min_factor=0.6, max_factor=0.6), {"x": img},
         lambda x: x * 0.6 + 0.4 * (x @ LUMA).mean(), grad=False),
    Case("_image_random_saturation",
         lambda: S.image.random_saturation(x, min_factor=0.6, max_factor=0.6), {"x": img},
         lambda x: x * 0.6 + 0.4 * (x @ LUMA)[..., None], grad=False),
    Case("_image_random_hue", lambda: S.image.random_hue(x, min_factor=0.3, max_factor=0.3),
         {"x": img}, lambda x: _hue_ref(x, 0.3), grad=False),
    Case("_image_random_lighting", lambda: S.image.random_lighting(x, alpha_std=0.0),
         {"x": img}, lambda x: x, grad=False),
    Case("_image_random_color_jitter",
         lambda: S.image.random_color_jitter(x, brightness=0, contrast=0, saturation=0, hue=0),
         {"x": img}, lambda x: x, grad=False),
    # a flip leaves the sorted values along its axis unchanged
    Case("_image_random_flip_left_right",
         lambda: S.sort(S.image.random_flip_left_right(x), axis=2), {"x": normal(2, 3, 4, 3)},
         lambda x: np.sort(x, axis=2), grad=False),
    Case("_image_random_flip_top_bottom",
         lambda: S.sort(S.image.random_flip_top_bottom(x), axis=0), {"x": normal(3, 4, 3)},
         lambda x: np.sort(x, axis=0), grad=False),
    Case("_image_resize", lambda: S.image.resize(x, size=(7, 3)), {"x": normal(4, 5, 2)},
         lambda x: _resize_ref(x, 3, 7)),
    Case("_contrib_hawkesll", lambda: S.contrib.hawkesll(*hk[:5], S.Cast(hk[5], dtype="int32"),
                                                         *hk[6:])[0] * 1.0,
         {"lda": uniform(2, 2, low=0.5, high=2.0), "alpha": uniform(2, low=0.1, high=0.5),
          "beta": uniform(2, low=0.5, high=2.0), "state": uniform(2, 2, low=0.0, high=1.0),
          "lags": uniform(2, 3, low=0.1, high=1.0), "marks": integers(0, 2, 2, 3),
          "valid": lambda rng: np.array([2.0, 3.0]), "tmax": lambda rng: np.array([5.0, 4.0])},
         lambda lda, alpha, beta, state, lags, marks, valid, tmax: _hawkes_ref(
             lda, alpha, beta, state, lags, marks.astype(int), valid, tmax)[0],
         grad_nodes=["lda", "alpha", "beta", "state", "lags", "tmax"]),
    Case("_contrib_BatchNormWithReLU",
         lambda: S.contrib.BatchNormWithReLU(x, *bnr, fix_gamma=False, name="bn"),
         {"x": normal(3, 2, 4), "bn_gamma": uniform(2, low=0.5, high=1.5),
          "bn_beta": normal(2)},
         lambda x, bn_gamma, bn_beta, bn_moving_mean, bn_moving_var: _bn_relu_ref(
             x, bn_gamma, bn_beta),
         aux={"bn_moving_mean": normal(2), "bn_moving_var": uniform(2, low=0.5, high=2.0)},
         is_train=True, grad_nodes=["x", "bn_gamma", "bn_beta"]),
    # one slope in [0.3, 0.3]: training draws are certain, so gradients can be checked
    Case("LeakyReLU", lambda: S.LeakyReLU(x, act_type="rrelu", lower_bound=0.3,
                                          upper_bound=0.3)[0],
         {"x": away_from((0.0,), 3, 4)}, lambda x: np.where(x > 0, x, 0.3 * x),
         is_train=True, id="LeakyReLU-rrelu-train"),
]
