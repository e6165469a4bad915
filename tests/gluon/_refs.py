"""float64 numpy references for the gluon layer tests (independent of symgraph's ops)."""
from __future__ import annotations

import itertools

import numpy as np


def conv_nd(x: np.ndarray, w: np.ndarray, b, stride, pad, dilate, groups: int) -> np.ndarray:
    """Cross-correlation over NC(spatial) data, weights (O, C/groups, k...)."""
    nd_ = x.ndim - 2
    x = np.pad(x, [(0, 0), (0, 0)] + [(p, p) for p in pad])
    n, c = x.shape[:2]
    o, cg = w.shape[:2]
    k = w.shape[2:]
    out_sp = [(x.shape[2 + i] - dilate[i] * (k[i] - 1) - 1) // stride[i] + 1
              for i in range(nd_)]
    out = np.zeros((n, o) + tuple(out_sp))
    og = o // groups
    for pos in itertools.product(*[range(s) for s in out_sp]):
        sl = tuple(slice(pos[i] * stride[i], pos[i] * stride[i] + dilate[i] * (k[i] - 1) + 1,
                         dilate[i]) for i in range(nd_))
        patch = x[(slice(None), slice(None)) + sl]  # (n, c, k...)
        for g in range(groups):
            pg = patch[:, g * cg:(g + 1) * cg].reshape(n, -1)
            wg = w[g * og:(g + 1) * og].reshape(og, -1)
            out[(slice(None), slice(g * og, (g + 1) * og)) + pos] = pg @ wg.T
    if b is not None:
        out += b.reshape((1, -1) + (1,) * nd_)
    return out


def deconv_2d(x: np.ndarray, w: np.ndarray, b, stride, pad, adj=(0, 0)) -> np.ndarray:
    """Transposed convolution: weights (C_in, C_out, kh, kw)."""
    n, c, h, wd = x.shape
    _, o, kh, kw = w.shape
    oh = (h - 1) * stride[0] - 2 * pad[0] + kh + adj[0]
    ow = (wd - 1) * stride[1] - 2 * pad[1] + kw + adj[1]
    full = np.zeros((n, o, oh + 2 * pad[0] + kh, ow + 2 * pad[1] + kw))
    for i in range(h):
        for j in range(wd):
            full[:, :, i * stride[0]:i * stride[0] + kh, j * stride[1]:j * stride[1] + kw] += \
                np.einsum("nc,cokl->nokl", x[:, :, i, j], w)
    out = full[:, :, pad[0]:pad[0] + oh, pad[1]:pad[1] + ow]
    if b is not None:
        out = out + b.reshape(1, -1, 1, 1)
    return out


def pool_nd(x: np.ndarray, kernel, stride, pad, kind: str,
            count_include_pad: bool = True) -> np.ndarray:
    nd_ = x.ndim - 2
    fill = -np.inf if kind == "max" else 0.0
    xp = np.pad(x, [(0, 0), (0, 0)] + [(p, p) for p in pad], constant_values=fill)
    ones = np.pad(np.ones(x.shape[2:]), [(p, p) for p in pad])
    out_sp = [(xp.shape[2 + i] - kernel[i]) // stride[i] + 1 for i in range(nd_)]
    out = np.zeros(x.shape[:2] + tuple(out_sp))
    for pos in itertools.product(*[range(s) for s in out_sp]):
        sl = tuple(slice(pos[i] * stride[i], pos[i] * stride[i] + kernel[i])
                   for i in range(nd_))
        win = xp[(slice(None), slice(None)) + sl].reshape(x.shape[:2] + (-1,))
        if kind == "max":
            out[(slice(None), slice(None)) + pos] = win.max(-1)
        else:
            denom = np.prod(kernel) if count_include_pad else ones[sl].sum()
            out[(slice(None), slice(None)) + pos] = win.sum(-1) / denom
    return out


def log_softmax(x: np.ndarray, axis: int) -> np.ndarray:
    m = x.max(axis=axis, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=axis, keepdims=True))


def mean_but_batch(loss: np.ndarray, batch_axis: int = 0) -> np.ndarray:
    axes = tuple(i for i in range(loss.ndim) if i != batch_axis)
    return loss.mean(axis=axes) if axes else loss
