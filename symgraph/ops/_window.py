"""numpy kernels shared by convolution, deconvolution and pooling: sliding windows over the
spatial axes of NCHW-style arrays (1-D, 2-D or 3-D), im2col and col2im.

Everything here is vectorised over pixels: the only Python loops run over kernel offsets
(at most prod(kernel) iterations), never over output positions.
"""
from __future__ import annotations

from itertools import product
from math import prod
from typing import Optional, Sequence

import numpy as np
from numpy.lib.stride_tricks import as_strided

Shape = tuple[int, ...]


def dilated(kernel: Sequence[int], dilate: Sequence[int]) -> Shape:
    """Extent of each kernel axis once dilated."""
    return tuple(d * (k - 1) + 1 for k, d in zip(kernel, dilate))


def pad_spatial(x: np.ndarray, before: Sequence[int], after: Sequence[int],
                value: float = 0.0) -> np.ndarray:
    """``x`` with its spatial axes (2:) padded by ``value``; ``x`` itself when nothing to pad."""
    if not any(before) and not any(after):
        return x
    shape = x.shape[:2] + tuple(s + b + a for s, b, a in zip(x.shape[2:], before, after))
    out = np.full(shape, value, dtype=x.dtype)
    out[inner(x.shape[2:], before)] = x
    return out


def inner(spatial: Sequence[int], before: Sequence[int]) -> tuple:
    """Index of the unpadded region inside a padded array."""
    return (slice(None), slice(None)) + tuple(slice(b, b + s) for s, b in zip(spatial, before))


def windows(xp: np.ndarray, kernel: Sequence[int], stride: Sequence[int],
            dilate: Sequence[int], out: Sequence[int]) -> np.ndarray:
    """Read-only view of shape ``(N, C, *kernel, *out)``: element ``[n, c, *k, *o]`` is
    ``xp[n, c, *(o * stride + k * dilate)]``. No copy is made."""
    sp = xp.strides[2:]
    strides = (xp.strides[:2] + tuple(s * d for s, d in zip(sp, dilate))
               + tuple(s * st for s, st in zip(sp, stride)))
    return as_strided(xp, xp.shape[:2] + tuple(kernel) + tuple(out), strides, writeable=False)


def offsets(kernel: Sequence[int], stride: Sequence[int], dilate: Sequence[int],
            out: Sequence[int]):
    """For each kernel offset: (offset tuple, index of the input positions it reads)."""
    for k in product(*(range(n) for n in kernel)):
        yield k, (slice(None), slice(None)) + tuple(
            slice(i * d, i * d + s * (o - 1) + 1, s) for i, d, s, o in zip(k, dilate, stride, out))


def im2col(x: np.ndarray, kernel: Sequence[int], stride: Sequence[int], dilate: Sequence[int],
           pad: Sequence[int], out: Sequence[int], groups: int) -> np.ndarray:
    """Columns of shape ``(groups, C/groups * prod(kernel), N * prod(out))`` (one GEMM per
    group multiplies them by the weights)."""
    xp = pad_spatial(x, pad, pad)
    view = windows(xp, kernel, stride, dilate, out)
    nsp = len(kernel)
    order = (1,) + tuple(range(2, 2 + nsp)) + (0,) + tuple(range(2 + nsp, 2 + 2 * nsp))
    cols = np.ascontiguousarray(view.transpose(order))
    return cols.reshape(groups, -1, x.shape[0] * prod(out))


def col2im(cols: np.ndarray, x_shape: Shape, kernel: Sequence[int], stride: Sequence[int],
           dilate: Sequence[int], pad: Sequence[int], out: Sequence[int]) -> np.ndarray:
    """Adjoint of :func:`im2col`: sums every column entry (layout ``(C, *kernel, N, *out)``)
    back onto the input position it was read from; returns an ``x_shape`` array.

    Accumulates channel-first (``(C, N, ...)``) so each add reads its columns contiguously.
    """
    n, c = x_shape[:2]
    padded = (c, n) + tuple(s + 2 * p for s, p in zip(x_shape[2:], pad))
    acc = np.zeros(padded, dtype=cols.dtype)
    cols = cols.reshape((c,) + tuple(kernel) + (n,) + tuple(out))
    for k, index in offsets(kernel, stride, dilate, out):
        acc[index] += cols[(slice(None),) + k]
    acc = acc[inner(x_shape[2:], pad)] if any(pad) else acc
    return np.ascontiguousarray(acc.swapaxes(0, 1))


def _by_group(dy: np.ndarray, groups: int) -> np.ndarray:
    """``dy`` (N, O, *out) as ``(groups, O/groups, N * prod(out))`` (one copy)."""
    n, o = dy.shape[:2]
    return dy.reshape(n, groups, o // groups, -1).transpose(1, 2, 0, 3).reshape(
        groups, o // groups, -1)


def conv_forward(x: np.ndarray, w: np.ndarray, stride: Sequence[int], dilate: Sequence[int],
                 pad: Sequence[int], groups: int, out: Sequence[int],
                 bias: Optional[np.ndarray] = None) -> np.ndarray:
    """Convolution (cross-correlation) of NC... data with O,C/g,... weights (+ bias)."""
    n, o = x.shape[0], w.shape[0]
    kernel = w.shape[2:]
    cols = im2col(x, kernel, stride, dilate, pad, out, groups)
    y = np.matmul(w.reshape(groups, o // groups, -1), cols)  # (g, O/g, N*P)
    result = np.empty((n, o) + tuple(out), dtype=y.dtype)
    # The NCHW copy of the GEMM result and the bias add are one pass.
    y = y.reshape(o, n, -1).transpose(1, 0, 2)
    if bias is None:
        result.reshape(n, o, -1)[...] = y
    else:
        np.add(y, bias.reshape(o, 1), out=result.reshape(n, o, -1))
    return result


def conv_data_grad(dy: np.ndarray, w: np.ndarray, x_shape: Shape, stride: Sequence[int],
                   dilate: Sequence[int], pad: Sequence[int], groups: int) -> np.ndarray:
    """Gradient of :func:`conv_forward` with respect to its data (a transposed convolution)."""
    o = dy.shape[1]
    w3 = w.reshape(groups, o // groups, -1).transpose(0, 2, 1)  # (g, C/g*K, O/g)
    dcols = np.matmul(w3, _by_group(dy, groups))  # (g, C/g*K, N*P)
    return col2im(dcols, x_shape, w.shape[2:], stride, dilate, pad, dy.shape[2:])


def conv_weight_grad(dy: np.ndarray, x: np.ndarray, kernel: Sequence[int],
                     stride: Sequence[int], dilate: Sequence[int], pad: Sequence[int],
                     groups: int) -> np.ndarray:
    """Gradient of :func:`conv_forward` with respect to its weights."""
    o = dy.shape[1]
    cols = im2col(x, kernel, stride, dilate, pad, dy.shape[2:], groups)  # (g, C/g*K, N*P)
    dw = np.matmul(_by_group(dy, groups), cols.transpose(0, 2, 1))  # (g, O/g, C/g*K)
    return dw.reshape((o, x.shape[1] // groups) + tuple(kernel))
