"""``contrib.fft``, ``contrib.ifft`` and ``contrib.count_sketch`` (MXNet 1.9.1; GPU-only there).

* ``fft``: real (..., d) to its DFT along the last axis, interleaved (..., 2d) as
  [re0, im0, re1, im1, ...]; ``ifft``: interleaved (..., 2d) to the real part of the
  *unnormalised* inverse DFT (..., d), as cuFFT gives and MXNet returns.
* ``count_sketch``: ``out[n, h[j]] += s[j] * data[n, j]``, h (1, in_dim) hash buckets and s
  (1, in_dim) signs given as float arrays; gradient only w.r.t. data, as MXNet.

All three are compositions (``ops/_composite.py``): a GEMM with a constant DFT matrix, or with
the sketch matrix ``one_hot(h) * s``. The DFT as a GEMM costs O(d^2) per row instead of an
FFT's O(d log d): exact to float rounding and fast for the sizes these ops meet (d up to a few
thousand); its matrix is 8 d^2 bytes in float32.

Example::

    y = sg.sym.contrib.fft(sg.sym.var("x"))            # (N, d) -> (N, 2d)
    x = sg.sym.contrib.ifft(y) / d                     # back to (N, d)
"""
from __future__ import annotations

from math import prod
from typing import Any

import numpy as np

from ...core.attrs import Attrs, Param
from ...core.base import DataError, ShapeError
from ...core.registry import GEMM, OpDef, RunCtx, register
from ._composite import COMPOSED, composite_gradient, composite_unroll, constant
from ._util import fmt

FFT_PARAMS = {"compute_size": Param("int", 128, doc="Rows per cuFFT call in MXNet (ignored: "
                                                    "one GEMM runs every row).")}


def _dft(d: int) -> tuple[np.ndarray, np.ndarray]:
    """cos and sin of 2 pi j k / d, (d, d) in float64 (j, k reduced mod d first: exact)."""
    jk = (np.arange(d)[:, None] * np.arange(d)[None, :]) % max(d, 1)
    angle = 2.0 * np.pi * jk / max(d, 1)
    return np.cos(angle), np.sin(angle)


def _fft_matrix(d: int) -> np.ndarray:
    """(d, 2d): x @ W is the interleaved DFT of real rows x."""
    c, s = _dft(d)
    return np.stack([c, -s], axis=2).reshape(d, 2 * d)


def _ifft_matrix(d: int) -> np.ndarray:
    """(2d, d): z @ W is the real part of the unnormalised inverse DFT of interleaved z."""
    c, s = _dft(d)
    return np.stack([c, -s], axis=1).reshape(2 * d, d)


def _rows(shape: tuple, what: str) -> None:
    if len(shape) < 2:
        raise ShapeError(f"{what} {fmt(shape)}: expected (N, d) or (N1, N2, N3, d), at least "
                         f"2 axes")


def _fft_shape(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    if ins[0] is None:
        return ins, outs
    _rows(ins[0], "data")
    return ins, [tuple(ins[0][:-1]) + (2 * ins[0][-1],)]


def _ifft_shape(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    if ins[0] is None:
        return ins, outs
    _rows(ins[0], "data")
    if ins[0][-1] % 2:
        raise ShapeError(f"data {fmt(ins[0])}: the last axis holds (real, imaginary) pairs, "
                         f"so its size must be even")
    return ins, [tuple(ins[0][:-1]) + (ins[0][-1] // 2,)]


def _by_matrix(matrix: Any, width: int) -> Any:
    """Expansion: rows of the last axis times ``matrix(d)`` (d from the input's last axis)."""
    def expand(S: Any, a: Attrs, xs: list, shapes: list, dtypes: list) -> list:
        shape = shapes[0]
        w = matrix(shape[-1] // width)
        flat = S.Reshape(xs[0], shape=(-1, shape[-1]))
        y = S.dot(flat, constant(S, w, dtypes[0]))
        return [S.Reshape(y, shape=tuple(shape[:-1]) + (w.shape[1],))]
    return expand


def _fft_np(a: Attrs, xs: list, ctx: RunCtx) -> list:
    x = xs[0]
    z = np.fft.fft(x.astype(np.float64), axis=-1)
    return [np.stack([z.real, z.imag], axis=-1).reshape(_fft_shape(a, [x.shape], [None])[1][0])
            .astype(x.dtype)]


def _ifft_np(a: Attrs, xs: list, ctx: RunCtx) -> list:
    x = xs[0].astype(np.float64)
    z = x[..., 0::2] + 1j * x[..., 1::2]
    return [(np.fft.ifft(z, axis=-1).real * z.shape[-1]).astype(xs[0].dtype)]


_FFT = _by_matrix(_fft_matrix, 1)
_IFFT = _by_matrix(_ifft_matrix, 2)
register(OpDef(
    "_contrib_fft", FFT_PARAMS, ("data",), _fft_shape, _fft_np, composite_gradient(_FFT), GEMM,
    lowering=COMPOSED, extra={"unroll": composite_unroll(_FFT)},
    doc="DFT of real rows (last axis d) as interleaved (real, imaginary) pairs: (..., 2d)."))
register(OpDef(
    "_contrib_ifft", FFT_PARAMS, ("data",), _ifft_shape, _ifft_np, composite_gradient(_IFFT),
    GEMM, lowering=COMPOSED, extra={"unroll": composite_unroll(_IFFT)},
    doc="Real part of the unnormalised inverse DFT of interleaved (real, imaginary) rows "
        "(..., 2d): (..., d); divide by d for the inverse of fft."))

SKETCH_PARAMS = {
    "out_dim": Param("int", doc="Size of the sketch (number of buckets)."),
    "processing_batch_size": Param("int", 32, doc="Rows per kernel call in MXNet (ignored)."),
}


def _sketch_shape(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    if a["out_dim"] < 1:
        raise ShapeError(f"out_dim={a['out_dim']}: must be >= 1")
    data = ins[0]
    if data is None:
        return ins, outs
    if len(data) < 2:
        raise ShapeError(f"data {fmt(data)}: expected (N, in_dim)")
    vec = (1, data[-1])
    for name, s in zip(("h", "s"), ins[1:]):
        if s is not None and prod(s) != data[-1]:
            raise ShapeError(f"{name} {fmt(s)}: expected {vec}, one entry per input unit of "
                             f"data {fmt(data)}")
    return [tuple(data), ins[1] or vec, ins[2] or vec], [tuple(data[:-1]) + (a["out_dim"],)]


def _sketch_np(a: Attrs, xs: list, ctx: RunCtx) -> list:
    x, h, s = xs
    hi = h.reshape(-1).astype(np.int64)
    if hi.size and (hi.min() < 0 or hi.max() >= a["out_dim"]):
        raise DataError(f"h holds buckets {hi.min()}..{hi.max()}, outside 0..{a['out_dim'] - 1}")
    m = np.zeros((x.shape[-1], a["out_dim"]))
    m[np.arange(x.shape[-1]), hi] = s.reshape(-1)
    return [(x.astype(np.float64) @ m).astype(x.dtype)]


def _sketch_expand(S: Any, a: Attrs, xs: list, shapes: list, dtypes: list) -> list:
    n = shapes[0][-1]
    buckets = S.one_hot(S.Reshape(xs[1], shape=(n,)), depth=a["out_dim"], dtype=dtypes[0].name)
    # the signs are hash data: no gradient flows to them (the op's own rule: data only)
    m = S.broadcast_mul(buckets, S.BlockGrad(S.Reshape(xs[2], shape=(n, 1))))
    y = S.dot(S.Reshape(xs[0], shape=(-1, n)), m)
    return [S.Reshape(y, shape=tuple(shapes[0][:-1]) + (a["out_dim"],))]


register(OpDef(
    "_contrib_count_sketch", SKETCH_PARAMS, ("data", "h", "s"), _sketch_shape, _sketch_np,
    composite_gradient(_sketch_expand, wrt=(0,)), GEMM, lowering=COMPOSED,
    extra={"unroll": composite_unroll(_sketch_expand)},
    doc="Count sketch of the last axis: out[..., h[j]] += s[j] * data[..., j]."))
