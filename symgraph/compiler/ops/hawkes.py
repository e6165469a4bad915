"""``contrib.hawkesll`` (``_contrib_hawkesll``): the log likelihood of K independent
exponential-kernel Hawkes processes per sample, MXNet 1.9.1's inputs and outputs.

Inputs: ``lda`` (N, K) background intensities, ``alpha`` (K,) branching ratios, ``beta`` (K,)
decays, ``state`` (N, K) memory at time 0, ``lags`` (N, T) inter-arrival times, ``marks``
(N, T) process ids (int32), ``valid_length`` (N,) points per sample, ``max_time`` (N,) the end
of the observation window. Outputs: the log likelihood (N,) and the memory at ``max_time``
(N, K).

The composition (``ops/_composite.py``) unrolls the T points as elementwise steps masked by
the point's mark and by ``valid_length``, so its gradient (lda, alpha, beta, state, lags,
max_time) comes from autodiff of registered ops; MXNet returns gradients for lda, alpha and
beta only.

Example::

    ll, state = sg.nd.contrib.hawkesll(lda, alpha, beta, state, lags, marks, valid_length,
                                       max_time)
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ...core.attrs import Attrs
from ...core.base import ShapeError
from ...core.registry import OPAQUE, OpDef, RunCtx, register
from ._composite import COMPOSED, composite_gradient, composite_unroll

INPUTS = ("lda", "alpha", "beta", "state", "lags", "marks", "valid_length", "max_time")


def _shape(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    lda, lags = ins[0], ins[4]
    if lda is None or lags is None:
        return ins, outs
    (n, k), t = lda, lags[1]
    want = [(n, k), (k,), (k,), (n, k), (n, t), (n, t), (n,), (n,)]
    for name, got, w in zip(INPUTS, ins, want):
        if got is not None and tuple(got) != w:
            raise ShapeError(f"_contrib_hawkesll: {name} has shape {tuple(got)}, expected {w} "
                             f"from lda {tuple(lda)} and lags {tuple(lags)}")
    return want, [(n,), (n, k)]


def _type(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    d = next((t for t in ins[:5] + ins[6:] + outs if t is not None), None)
    return [d] * 5 + [np.dtype(np.int32)] + [d] * 2, [d, d]


def _compute(a: Attrs, xs: list, ctx: RunCtx) -> list:
    lda, alpha, beta, state, lags, marks, valid, max_time = xs
    dt = lda.dtype
    lda, alpha, beta, state, lags, valid, max_time = (
        np.asarray(v, np.float64) for v in (lda, alpha, beta, state, lags, valid, max_time))
    n, k = lda.shape
    ll, state, last = np.zeros(n), state.copy(), np.zeros((n, k))
    for i in range(n):
        t = 0.0
        for j in range(int(valid[i])):
            c = int(marks[i, j])
            t += lags[i, j]
            d = t - last[i, c]
            ed = np.exp(-beta[c] * d)
            intensity = lda[i, c] + alpha[c] * beta[c] * state[i, c] * ed
            ll[i] += np.log(intensity) - lda[i, c] * d - alpha[c] * state[i, c] * (1 - ed)
            state[i, c] = 1 + state[i, c] * ed
            last[i, c] = t
    d = max_time[:, None] - last  # what is left of the window, each process
    ed = np.exp(-beta * d)
    ll -= (lda * d + alpha * state * (1 - ed)).sum(axis=1)
    return [ll.astype(dt), (state * ed).astype(dt)]


def _expand(S: Any, a: Attrs, xs: list, shapes: list, dtypes: list) -> list:
    lda, alpha, beta, state, lags, marks, valid, max_time = xs
    (n, k), t_len = shapes[0], shapes[4][1]
    marks = S.Cast(marks, dtype=np.dtype(dtypes[0]).name)  # (slices of floats run on the GPU)
    alpha, beta = S.Reshape(alpha, shape=(1, k)), S.Reshape(beta, shape=(1, k))
    t, last, ll = S.zeros_like(S.Reshape(valid, shape=(n, 1))), S.zeros_like(lda), None
    for j in range(t_len):
        live = S.Reshape(valid > float(j), shape=(n, 1))  # (n, 1): point j is valid
        hit = S.broadcast_mul(S.one_hot(S.slice_axis(marks, axis=1, begin=j, end=j + 1),
                                        depth=k, dtype=dtypes[0]).reshape((n, k)), live)
        t = t + S.slice_axis(lags, axis=1, begin=j, end=j + 1) * live
        d = S.broadcast_sub(t, last)
        ed = S.exp(S.broadcast_mul(-beta, d))
        bump = S.broadcast_mul(S.broadcast_mul(alpha, beta), state * ed)
        gain = S.log(lda + bump * hit) - lda * d - S.broadcast_mul(alpha, state) * (1.0 - ed)
        step = S.sum(gain * hit, axis=1)
        ll = step if ll is None else ll + step
        state = S.where(hit, 1.0 + state * ed, state)
        last = S.where(hit, S.broadcast_like(t, last), last)
    d = S.broadcast_sub(S.Reshape(max_time, shape=(n, 1)), last)
    ed = S.exp(S.broadcast_mul(-beta, d))
    rest = S.sum(lda * d + S.broadcast_mul(alpha, state) * (1.0 - ed), axis=1)
    return [(-rest if ll is None else ll - rest), state * ed]


register(OpDef(
    "_contrib_hawkesll", {}, INPUTS, _shape, _compute,
    composite_gradient(_expand, wrt=(0, 1, 2, 3, 4, 7)), OPAQUE, infer_type=_type,
    outputs=("output", "out_state"), lowering=COMPOSED,
    extra={"unroll": composite_unroll(_expand)},
    doc="Log likelihood of K exponential Hawkes processes per sample on (0, max_time], and "
        "their memory at max_time (MXNet's contrib.hawkesll)."))
