"""numba kernels over 2-D sliding windows of NCHW planes: im2col/col2im for the compiled
convolution (``layers.py``) and max pooling forward and backward.

Each kernel takes ``lo, hi`` first, the range of the outer axis (samples, or ``N*C`` planes)
it computes, so the backend's pool splits it over threads (``pool.run_split``). Windows that
run into the padding read zeros (convolution) or skip the cell (max pooling, whose padding is
-inf). Inner loops run over a precomputed valid range of output columns, with no branch, so a
stride-1 row is one shifted copy the compiler vectorises.

The numpy references these match are ``compiler/ops/_window.py`` (im2col, col2im) and
``compiler/ops/pool.py`` (max pooling; the gradient goes to each window's first maximum in
row-major kernel order, as MXNet).

Example::

    >>> import numpy as np
    >>> x = np.arange(16, dtype=np.float32).reshape(1, 4, 4)
    >>> y = np.empty((1, 2, 2), np.float32)
    >>> maxpool_forward(0, 1, x, y, 2, 2, 2, 2, 0, 0)
    >>> y.tolist()
    [[[5.0, 7.0], [13.0, 15.0]]]
"""
from __future__ import annotations

import numba
import numpy as np

JIT = {"nogil": True, "cache": True, "error_model": "numpy"}


@numba.njit(**JIT)
def valid_range(start: int, step: int, size: int, n_out: int) -> tuple:
    """Output positions ``o`` in ``0..n_out`` whose input index ``o * step + start`` lies in
    ``0..size``: a half-open range ``(first, stop)``."""
    first = 0 if start >= 0 else (-start + step - 1) // step
    stop = 0 if size - start <= 0 else (size - start + step - 1) // step
    stop = min(stop, n_out)
    return min(first, stop), stop


@numba.njit(**JIT)
def im2col(lo, hi, x, cols, kh, kw, sh, sw, ph, pw, dh, dw):  # noqa: ANN001 (numba)
    """``cols[s, (c, i, j), (oh, ow)] = x[s, c, oh*sh - ph + i*dh, ow*sw - pw + j*dw]`` (0
    outside ``x``) for samples ``s`` in ``lo..hi``; ``cols`` is 4-D ``(S, C*kh*kw, OH, OW)``
    (any strides: the weight gradient passes a transposed view)."""
    ch, h, w = x.shape[1], x.shape[2], x.shape[3]
    oh_n, ow_n = cols.shape[2], cols.shape[3]
    for s in range(lo, hi):
        for c in range(ch):
            for i in range(kh):
                r0, r1 = valid_range(i * dh - ph, sh, h, oh_n)
                for j in range(kw):
                    row = cols[s, (c * kh + i) * kw + j]
                    q0, q1 = valid_range(j * dw - pw, sw, w, ow_n)
                    row[:r0, :] = 0
                    row[r1:, :] = 0
                    first = q0 * sw + j * dw - pw  # (>= 0: valid_range)
                    for oh in range(r0, r1):
                        src = x[s, c, oh * sh - ph + i * dh, first:]
                        dst = row[oh]
                        dst[:q0] = 0
                        dst[q1:] = 0
                        part = dst[q0:q1]
                        for t in range(q1 - q0):  # indices from 0: no wraparound checks
                            part[t] = src[t * sw]


@numba.njit(**JIT)
def col2im(lo, hi, cols, dx, kh, kw, sh, sw, ph, pw, dh, dw):  # noqa: ANN001 (numba)
    """The adjoint of :func:`im2col`: ``dx[s]`` (zeroed first) is the sum of every column
    entry of ``cols[s]`` (``(S, C*kh*kw, OH, OW)``) on the input cell it was read from."""
    ch, h, w = dx.shape[1], dx.shape[2], dx.shape[3]
    oh_n, ow_n = cols.shape[2], cols.shape[3]
    for s in range(lo, hi):
        dx[s] = 0
        for c in range(ch):
            for i in range(kh):
                r0, r1 = valid_range(i * dh - ph, sh, h, oh_n)
                for j in range(kw):
                    row = cols[s, (c * kh + i) * kw + j]
                    q0, q1 = valid_range(j * dw - pw, sw, w, ow_n)
                    first = q0 * sw + j * dw - pw
                    for oh in range(r0, r1):
                        dst = dx[s, c, oh * sh - ph + i * dh, first:]
                        src = row[oh, q0:q1]
                        for t in range(q1 - q0):
                            dst[t * sw] += src[t]


@numba.njit(**JIT)
def maxpool_forward(lo, hi, x, y, kh, kw, sh, sw, ph, pw):  # noqa: ANN001 (numba)
    """Max pooling of planes ``x[p]`` (``(P, H, W)``) into ``y[p]`` (``(P, OH, OW)``) for
    ``p`` in ``lo..hi``; cells in the padding are skipped."""
    h, w = x.shape[1], x.shape[2]
    oh_n, ow_n = y.shape[1], y.shape[2]
    for p in range(lo, hi):
        for oh in range(oh_n):
            i0, i1 = max(oh * sh - ph, 0), min(oh * sh - ph + kh, h)
            for ow in range(ow_n):
                j0, j1 = max(ow * sw - pw, 0), min(ow * sw - pw + kw, w)
                best = x[p, i0, j0]
                for i in range(i0, i1):
                    for j in range(j0, j1):
                        v = x[p, i, j]
                        if v > best or v != v:  # NaN propagates, as np.maximum
                            best = v
                y[p, oh, ow] = best


@numba.njit(**JIT)
def maxpool_backward(lo, hi, dy, x, y, dx, kh, kw, sh, sw, ph, pw):  # noqa: ANN001 (numba)
    """Gradient of :func:`maxpool_forward`: ``dx[p]`` (zeroed first) gets each ``dy`` at the
    first cell (row-major in the window) equal to the window's output ``y``."""
    h, w = x.shape[1], x.shape[2]
    oh_n, ow_n = y.shape[1], y.shape[2]
    for p in range(lo, hi):
        dx[p] = 0
        for oh in range(oh_n):
            i0, i1 = max(oh * sh - ph, 0), min(oh * sh - ph + kh, h)
            for ow in range(ow_n):
                j0, j1 = max(ow * sw - pw, 0), min(ow * sw - pw + kw, w)
                target = y[p, oh, ow]
                found = False
                for i in range(i0, i1):
                    for j in range(j0, j1):
                        if not found and x[p, i, j] == target:
                            dx[p, i, j] += dy[p, oh, ow]
                            found = True

