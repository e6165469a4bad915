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

from .geometry import ConvWindow

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


def grouped_matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a[g] @ b[g]`` for each group: one 2-D BLAS GEMM each. (np.matmul on stacked operands
    with a transposed view leaves BLAS and runs many times slower.)"""
    out = np.empty((a.shape[0], a.shape[1], b.shape[2]), dtype=np.result_type(a, b))
    for g in range(a.shape[0]):
        np.matmul(a[g], b[g], out=out[g])
    return out


def _by_group(dy: np.ndarray, groups: int) -> np.ndarray:
    """``dy`` (N, O, *out) as ``(groups, O/groups, N * prod(out))`` (one copy)."""
    n, o = dy.shape[:2]
    return dy.reshape(n, groups, o // groups, -1).transpose(1, 2, 0, 3).reshape(
        groups, o // groups, -1)


CHUNK_ELEMENTS = 1 << 21
"""Column elements per batch chunk (8 MiB of float32): chunks keep im2col columns in cache and
reuse the same small allocations instead of page-faulting one huge array per call."""


def batch_chunks(n: int, per_sample: int) -> list[slice]:
    """Slices of the batch axis holding about CHUNK_ELEMENTS column elements each."""
    step = max(1, CHUNK_ELEMENTS // max(1, per_sample))
    return [slice(i, min(n, i + step)) for i in range(0, n, step)]


def conv_forward(x: np.ndarray, w: np.ndarray, g: ConvWindow,
                 bias: Optional[np.ndarray] = None) -> np.ndarray:
    """Convolution (cross-correlation) of NC... data ``x`` with O,C/g,... weights (+ bias),
    of geometry ``g`` (``x`` has ``g``'s input shape)."""
    n, o, groups, out = x.shape[0], w.shape[0], g.groups, g.out
    w3 = w.reshape(groups, o // groups, -1)
    result = np.empty((n, o) + tuple(out), dtype=np.result_type(x, w))
    # Per-sample column blocks (n, g, C/g*K, P): the GEMMs write NCHW output directly, with
    # no transposed operand and no transposing copy afterwards.
    flat = result.reshape(n, groups, o // groups, -1)
    for part in batch_chunks(n, w3.shape[2] * groups * prod(out)):
        view = windows(pad_spatial(x[part], g.pad, g.pad), g.kernel, g.stride, g.dilate, out)
        cols = np.ascontiguousarray(view).reshape(view.shape[0], groups, w3.shape[2], -1)
        np.matmul(w3, cols, out=flat[part])
    if bias is not None:
        result += bias.reshape((o,) + (1,) * len(out))
    return result


def conv_data_grad(dy: np.ndarray, w: np.ndarray, g: ConvWindow) -> np.ndarray:
    """Gradient of :func:`conv_forward` with respect to its data (a transposed convolution):
    an array of ``g``'s input shape."""
    n, o, groups = dy.shape[0], dy.shape[1], g.groups
    w3 = w.reshape(groups, o // groups, -1).transpose(0, 2, 1)  # (g, C/g*K, O/g)
    dx = np.empty((g.n, g.c) + tuple(g.spatial), dtype=np.result_type(dy, w))
    for part in batch_chunks(n, w3.shape[1] * groups * prod(g.out)):
        dcols = grouped_matmul(w3, _by_group(dy[part], groups))  # (g, C/g*K, n*P)
        dx[part] = col2im(dcols, (dcols.shape[2] // prod(g.out), g.c) + tuple(g.spatial),
                          g.kernel, g.stride, g.dilate, g.pad, g.out)
    return dx


def conv_weight_grad(dy: np.ndarray, x: np.ndarray, g: ConvWindow) -> np.ndarray:
    """Gradient of :func:`conv_forward` with respect to its weights."""
    n, o, groups, kernel = dy.shape[0], dy.shape[1], g.groups, g.kernel
    dw = np.zeros((groups, o // groups, x.shape[1] // groups * prod(kernel)),
                  dtype=np.result_type(dy, x))
    for part in batch_chunks(n, x.shape[1] * prod(kernel) * prod(g.out)):
        cols = im2col(x[part], kernel, g.stride, g.dilate, g.pad, g.out, groups)
        dw += grouped_matmul(_by_group(dy[part], groups), cols.transpose(0, 2, 1))
    return dw.reshape((o, x.shape[1] // groups) + tuple(kernel))
