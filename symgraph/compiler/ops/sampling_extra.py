"""``_sample_multinomial`` (draws category indices from rows of probabilities) and ``_shuffle``
(a random permutation of the first axis): samplers that are not a law of ``_random_laws``.
Both draw from ``RunCtx.rng`` and are ``train_dependent`` like the samplers of ``sampling.py``;
on the GPU they draw from Philox (``cuda/lowering_random_draw``).
"""
from __future__ import annotations

import numpy as np

from ...core.attrs import Attrs, Param
from ...core.base import AttrError, ShapeError
from ...core.registry import NOT_DIFFERENTIABLE, OPAQUE, OpDef, RunCtx, register, alias as _alias
from ._util import fmt
from .sampling import generator_of

MULTINOMIAL_PARAMS = {
    "shape": Param("shape", (), doc="draws per row"),
    "get_prob": Param("bool", False, doc="also return the log-probability of each draw"),
    "dtype": Param("dtype", "int32", ("float16", "float32", "float64", "int32", "uint8"),
                   doc="dtype of the indices")}


def _multinomial_shape(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    """data (..., K) -> draws of shape data[:-1] + shape ((1,) when that is empty, as MXNet)."""
    data = ins[0]
    if data is None:
        return ins, outs
    if len(data) < 1 or data[-1] < 1:
        raise ShapeError(f"data has shape {fmt(data)}; it needs a last axis of categories")
    out = tuple(data[:-1]) + tuple(a["shape"]) or (1,)
    return ins, [out] * len(outs)


def _multinomial_type(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    data = ins[0] if ins[0] is not None else np.dtype(np.float32)
    return [data], [np.dtype(a["dtype"])] + [data] * (len(outs) - 1)


def _multinomial_compute(a: Attrs, xs: list, ctx: RunCtx) -> list:
    p = xs[0].astype(np.float64)
    if np.any(p < 0) or not np.all(np.isfinite(p)):
        raise AttrError(f"sample_multinomial: probabilities must be finite and >= 0, got "
                        f"{p[(p < 0) | ~np.isfinite(p)].ravel()[0]!r}")
    rows = p.reshape(-1, p.shape[-1])
    n = int(np.prod(a["shape"], dtype=np.int64))
    u = generator_of(ctx).random((rows.shape[0], n)) * rows.sum(axis=1, keepdims=True)
    cdf = np.cumsum(rows, axis=1)
    # index of the first category whose cumulative probability exceeds u
    idx = np.minimum((cdf[:, None, :] <= u[:, :, None]).sum(axis=2), rows.shape[1] - 1)
    shape = tuple(xs[0].shape[:-1]) + tuple(a["shape"]) or (1,)
    out = [idx.reshape(shape).astype(a["dtype"])]
    if a["get_prob"]:
        logp = np.log(np.take_along_axis(rows, idx, axis=1))
        out.append(logp.reshape(shape).astype(xs[0].dtype))
    return out


register(OpDef(
    "_sample_multinomial", MULTINOMIAL_PARAMS, ("data",), _multinomial_shape,
    _multinomial_compute, NOT_DIFFERENTIABLE, OPAQUE, infer_type=_multinomial_type,
    outputs=lambda a: ("output", "prob") if a["get_prob"] else ("output",),
    train_dependent=True,
    lowering=("multinomial", {"dtypes": ("float32", "float16", "bfloat16", "int32", "uint8")}),
    doc="Category indices drawn from each row of probabilities data (..., K), `shape` draws "
        "per row; with get_prob also their log-probabilities."))
_alias("sample_multinomial", "_sample_multinomial")


def _shuffle_shape(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    known = ins[0] if ins[0] is not None else outs[0]
    return [known], [known]


def _shuffle_compute(a: Attrs, xs: list, ctx: RunCtx) -> list:
    x = xs[0]
    if x.ndim == 0:
        return [x.copy()]
    return [x[generator_of(ctx).permutation(x.shape[0])]]


register(OpDef(
    "_shuffle", {}, ("data",), _shuffle_shape, _shuffle_compute, NOT_DIFFERENTIABLE, OPAQUE,
    train_dependent=True, lowering=("shuffle", {"dtypes": "any"}),
    doc="data with its first axis randomly permuted."))
_alias("shuffle", "_shuffle")
