"""``_sample_unique_zipfian``: per batch row, ``num_sampled`` distinct classes drawn from the
approximately log-uniform (Zipfian) law ``P(c) = log((c + 2) / (c + 1)) / log(range_max + 1)``
on ``[0, range_max)``, and the number of draws that took (MXNet 1.9.1's op, used by sampled
softmax).

A draw is ``round(exp(u * log(range_max))) - 1`` for ``u`` uniform on [0, 1), as MXNet's; a
value already in the row is drawn again. The numpy reference draws a block of candidates at a
time and keeps their first occurrences, so it runs no Python loop per draw. The trial count
depends on the values drawn (a rejection loop), so there is no GPU kernel (MXNet has none
either): on the GPU the step runs on the host.

Example::

    >>> import symgraph as sg
    >>> s, tries = sg.nd._internal._sample_unique_zipfian(range_max=100, shape=(2, 5))
    >>> s.shape, tries.shape, s.dtype
    ((2, 5), (2,), dtype('int64'))
"""
from __future__ import annotations

import math

import numpy as np

from ...core.attrs import Attrs, Param
from ...core.base import AttrError, ShapeError
from ...core.registry import NOT_DIFFERENTIABLE, OPAQUE, OpDef, RunCtx, register
from .sampling import generator_of

PARAMS = {
    "range_max": Param("int", doc="Classes are drawn from [0, range_max)."),
    "shape": Param("shape", (), doc="(batch_size, num_sampled): rows and distinct draws per "
                                    "row.")}


def _check(a: Attrs) -> tuple[int, int]:
    shape = tuple(a["shape"])
    if len(shape) != 2:
        raise ShapeError(f"shape must be 2-D (batch_size, num_sampled), got {shape}")
    if a["range_max"] < 1 or shape[1] > a["range_max"]:
        raise AttrError(f"num_sampled={shape[1]} distinct classes cannot be drawn from "
                        f"range_max={a['range_max']} classes")
    return shape[0], shape[1]


def _shape(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    rows, _ = _check(a)
    return ins, [tuple(a["shape"]), (rows,)]


def _types(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    return ins, [np.dtype(np.int64)] * 2


def _row(rng: np.random.Generator, n: int, log_range: float) -> tuple[np.ndarray, int]:
    """``n`` distinct draws in the order first drawn, and how many draws that took."""
    drawn = np.empty(0, np.int64)
    block = max(2 * n, 64)
    while True:
        u = rng.random(block)
        drawn = np.concatenate([drawn, (np.rint(np.exp(u * log_range)) - 1).astype(np.int64)])
        _, first = np.unique(drawn, return_index=True)
        if first.size >= n:
            first = np.sort(first)[:n]
            return drawn[first], int(first[-1]) + 1 if n else 0
        block *= 2


def _compute(a: Attrs, xs: list, ctx: RunCtx) -> list:
    rows, n = _check(a)
    rng, log_range = generator_of(ctx), math.log(a["range_max"])
    samples = np.empty((rows, n), np.int64)
    tries = np.empty((rows,), np.int64)
    for i in range(rows):
        samples[i], tries[i] = _row(rng, n, log_range)
    return [samples, tries]


register(OpDef(
    "_sample_unique_zipfian", PARAMS, (), _shape, _compute, NOT_DIFFERENTIABLE, OPAQUE,
    infer_type=_types, outputs=lambda a: ("samples", "num_tries"), train_dependent=True,
    lowering=("host", {"why": "a rejection loop whose length depends on the values drawn; "
                              "MXNet 1.9.1 has a CPU kernel only"}),
    doc="Distinct classes per row from the log-uniform law on [0, range_max) (sampling "
        "without replacement), and the number of draws each row took."))
