"""Slow, obviously-correct float64 references for window ops: loops over output positions.

Written independently of symgraph's im2col kernels; only for the small shapes of the tests.
"""
from __future__ import annotations

from itertools import product
from math import ceil

import numpy as np


def conv(x, w, b=None, stride=None, pad=None, dilate=None, groups=1):
    """Cross-correlation, NC... data, O,C/g,... weights, one loop iteration per output cell."""
    nsp = x.ndim - 2
    stride, pad, dilate = stride or (1,) * nsp, pad or (0,) * nsp, dilate or (1,) * nsp
    k = w.shape[2:]
    xp = np.pad(x, [(0, 0), (0, 0)] + [(p, p) for p in pad])
    out = [(xp.shape[2 + i] - dilate[i] * (k[i] - 1) - 1) // stride[i] + 1 for i in range(nsp)]
    o, cg = w.shape[0], w.shape[1]
    og = o // groups
    y = np.zeros((x.shape[0], o) + tuple(out))
    for pos in product(*(range(n) for n in out)):
        index = tuple(slice(p * s, p * s + d * (kk - 1) + 1, d)
                      for p, s, d, kk in zip(pos, stride, dilate, k))
        for g in range(groups):
            patch = xp[(slice(None), slice(g * cg, (g + 1) * cg)) + index]  # (N, cg, *k)
            wg = w[g * og:(g + 1) * og]  # (og, cg, *k)
            y[(slice(None), slice(g * og, (g + 1) * og)) + pos] = np.tensordot(
                patch, wg, axes=(list(range(1, 2 + nsp)), list(range(1, 2 + nsp))))
    if b is not None:
        y += b.reshape((1, -1) + (1,) * nsp)
    return y


def deconv(x, w, b=None, stride=None, pad=None, dilate=None, groups=1, adj=None):
    """Transposed convolution by scattering each input cell times the kernel."""
    nsp = x.ndim - 2
    stride, pad, dilate = stride or (1,) * nsp, pad or (0,) * nsp, dilate or (1,) * nsp
    adj = adj or (0,) * nsp
    k = w.shape[2:]
    cin, fg = w.shape[0], w.shape[1]
    cg = cin // groups
    full = [stride[i] * (x.shape[2 + i] - 1) + dilate[i] * (k[i] - 1) + 1 + adj[i]
            for i in range(nsp)]
    y = np.zeros((x.shape[0], fg * groups) + tuple(full))
    for pos in product(*(range(n) for n in x.shape[2:])):
        index = tuple(slice(p * s, p * s + d * (kk - 1) + 1, d)
                      for p, s, d, kk in zip(pos, stride, dilate, k))
        for g in range(groups):
            v = x[(slice(None), slice(g * cg, (g + 1) * cg)) + pos]  # (N, cg)
            contrib = np.tensordot(v, w[g * cg:(g + 1) * cg], axes=(1, 0))  # (N, fg, *k)
            y[(slice(None), slice(g * fg, (g + 1) * fg)) + index] += contrib
    y = y[(slice(None), slice(None)) + tuple(slice(p, n - p) for p, n in zip(pad, full))]
    if b is not None:
        y = y + b.reshape((1, -1) + (1,) * nsp)
    return y


def pool(x, kernel, pool_type="max", stride=None, pad=None, full=False, include_pad=True,
         global_pool=False):
    """Pooling with MXNet's window clipping and avg divisors, one loop per output cell."""
    nsp = x.ndim - 2
    if global_pool:
        kernel, stride, pad = x.shape[2:], (1,) * nsp, (0,) * nsp
    stride, pad = stride or (1,) * nsp, pad or (0,) * nsp
    rnd = ceil if full else int
    out = [int(rnd((x.shape[2 + i] + 2 * pad[i] - kernel[i]) / stride[i])) + 1
           for i in range(nsp)]
    y = np.zeros(x.shape[:2] + tuple(out))
    for pos in product(*(range(n) for n in out)):
        start = [p * s - q for p, s, q in zip(pos, stride, pad)]
        end = [min(a + k, n + q) for a, k, n, q in zip(start, kernel, x.shape[2:], pad)]
        lo = [max(a, 0) for a in start]
        hi = [min(e, n) for e, n in zip(end, x.shape[2:])]
        win = x[(slice(None), slice(None)) + tuple(slice(a, b) for a, b in zip(lo, hi))]
        win = win.reshape(x.shape[:2] + (-1,))
        if pool_type == "max":
            v = win.max(axis=-1)
        elif pool_type == "sum":
            v = win.sum(axis=-1)
        else:
            count = np.prod([e - a for a, e in zip(start, end)]) if include_pad \
                else np.prod([b - a for a, b in zip(lo, hi)])
            v = win.sum(axis=-1) / count
        y[(slice(None), slice(None)) + pos] = v
    return y


def conv_weight_grad(dy, x, kernel, stride=None, pad=None, dilate=None, groups=1):
    """dL/dW of :func:`conv` given dL/dy, one loop iteration per output cell."""
    nsp = x.ndim - 2
    stride, pad, dilate = stride or (1,) * nsp, pad or (0,) * nsp, dilate or (1,) * nsp
    xp = np.pad(x, [(0, 0), (0, 0)] + [(p, p) for p in pad])
    o = dy.shape[1]
    cg, og = x.shape[1] // groups, o // groups
    dw = np.zeros((o, cg) + tuple(kernel))
    for pos in product(*(range(n) for n in dy.shape[2:])):
        index = tuple(slice(p * s, p * s + d * (k - 1) + 1, d)
                      for p, s, d, k in zip(pos, stride, dilate, kernel))
        for g in range(groups):
            patch = xp[(slice(None), slice(g * cg, (g + 1) * cg)) + index]  # (N, cg, *k)
            d = dy[(slice(None), slice(g * og, (g + 1) * og)) + pos]  # (N, og)
            dw[g * og:(g + 1) * og] += np.tensordot(d, patch, axes=(0, 0))
    return dw


def pool_grad(x, dy, kernel, pool_type="max", stride=None, pad=None, full=False,
              include_pad=True):
    """dL/dx of :func:`pool` given dL/dy (max: the first maximum of each window)."""
    nsp = x.ndim - 2
    stride, pad = stride or (1,) * nsp, pad or (0,) * nsp
    dx = np.zeros_like(x)
    for pos in product(*(range(n) for n in dy.shape[2:])):
        start = [p * s - q for p, s, q in zip(pos, stride, pad)]
        end = [min(a + k, n + q) for a, k, n, q in zip(start, kernel, x.shape[2:], pad)]
        lo = [max(a, 0) for a in start]
        hi = [min(e, n) for e, n in zip(end, x.shape[2:])]
        region = tuple(slice(a, b) for a, b in zip(lo, hi))
        g = dy[(slice(None), slice(None)) + pos]
        for n, c in product(range(x.shape[0]), range(x.shape[1])):
            win = x[(n, c) + region]
            if pool_type == "max":
                at = np.unravel_index(np.argmax(win), win.shape)
                dx[(n, c) + tuple(a + i for a, i in zip(lo, at))] += g[n, c]
            elif pool_type == "sum":
                dx[(n, c) + region] += g[n, c]
            else:
                count = np.prod([e - a for a, e in zip(start, end)]) if include_pad \
                    else win.size
                dx[(n, c) + region] += g[n, c] / count
    return dx
