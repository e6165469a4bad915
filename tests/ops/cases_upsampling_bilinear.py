"""Registry cases of bilinear ``UpSampling`` (MXNet's depthwise Deconvolution by ``weight``),
against a direct float64 loop over the transposed convolution's taps."""
from __future__ import annotations

import math

import numpy as np

import symgraph as sg

from .case import Case, normal

S = sg.sym
x, w = S.var("x"), S.var("w")


def _bilinear(x: np.ndarray, w: np.ndarray, s: int) -> np.ndarray:
    """out[n, c, i*s - p + a, j*s - p + b] += x[n, c, i, j] * w[c, 0, a, b]."""
    n, c, h, wd = x.shape
    k, p = 2 * s - s % 2, math.ceil((s - 1) / 2)
    full = np.zeros((n, c, (h - 1) * s + k, (wd - 1) * s + k))
    for i in range(h):
        for j in range(wd):
            full[:, :, i * s:i * s + k, j * s:j * s + k] += \
                x[:, :, i, j][:, :, None, None] * w[None, :, 0]
    return full[:, :, p:p + h * s, p:p + wd * s]


CASES = [
    Case("UpSampling", lambda s=s: S.UpSampling(x, w, scale=s, sample_type="bilinear",
                                                num_filter=3, num_args=2),
         {"x": normal(2, 3, 3, 2), "w": normal(3, 1, 2 * s - s % 2, 2 * s - s % 2)},
         lambda x, w, s=s: _bilinear(x, w, s), id=f"UpSampling-bilinear{s}")
    for s in (2, 3)
]
