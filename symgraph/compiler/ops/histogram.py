"""``_histogram`` (MXNet's ``nd.histogram`` / ``sym.histogram``): how many elements of the
data fall in each bin, and the bin edges, as numpy's ``histogram``. Bins are ``bin_cnt``
equal ones over ``range`` (over the data's min and max when no range is given, widened by
0.5 each way when those are equal), or given by the edges of input ``bins``. A bin holds
[left, right), the last one its right edge too; elements outside the bins, and NaN, are not
counted. Counts are int64, edges the data's dtype. Not differentiable (MXNet registers no
gradient either)."""
from __future__ import annotations

import numpy as np

from ...core.attrs import Attrs, Param
from ...core.base import DataError, ShapeError
from ...core.registry import NOT_DIFFERENTIABLE, OPAQUE, OpDef, RunCtx, register
from ._util import check_attr, fmt

HISTOGRAM_PARAMS = {
    "bin_cnt": Param("int?", None, doc="Number of equal bins; None: the edges are input bins."),
    "range": Param("floats", (), doc="(low, high) of the equal bins; (): the data's min, max."),
}


def _inputs(a: Attrs) -> tuple[str, ...]:
    return ("data",) if a["bin_cnt"] is not None else ("data", "bins")


def _check(a: Attrs) -> None:
    if a["bin_cnt"] is not None:
        check_attr(a["bin_cnt"] >= 1, "bin_cnt", a["bin_cnt"], "must be >= 1")
    check_attr(len(a["range"]) in (0, 2) and (not a["range"] or a["range"][0] <= a["range"][1]),
               "range", a["range"], "must be (low, high) with low <= high")


def _histogram_shape(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    _check(a)
    if a["bin_cnt"] is not None:
        n = a["bin_cnt"]
        return ins, [(n,), (n + 1,)]
    bins = ins[1]
    if bins is None:
        return ins, outs
    if len(bins) != 1 or bins[0] < 2:
        raise ShapeError(f"bins has shape {fmt(bins)}; expected (k,) edges, k >= 2")
    return ins, [(bins[0] - 1,), tuple(bins)]


def _histogram_type(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    d = ins[0] if ins[0] is not None else outs[1]
    return [d] * len(ins), [np.dtype(np.int64), d]


def histogram_bounds(a: Attrs, x: np.ndarray) -> tuple[float, float]:
    """(low, high) of the equal bins: ``range``, else the data's min and max (0 and 1 for
    empty data), widened by 0.5 each way when equal (numpy's rule)."""
    if a["range"]:
        lo, hi = a["range"]
    else:
        finite = x[~np.isnan(x)] if x.dtype.kind == "f" else x
        lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
    return (lo - 0.5, hi + 0.5) if lo == hi else (float(lo), float(hi))


def _histogram(a: Attrs, xs: list, ctx: RunCtx) -> list:
    x = xs[0].ravel()
    if a["bin_cnt"] is not None:
        lo, hi = histogram_bounds(a, x)
        edges = np.linspace(lo, hi, a["bin_cnt"] + 1).astype(xs[0].dtype)
    else:
        edges = xs[1]
        if np.any(np.diff(edges.astype(np.float64)) < 0):
            raise DataError(f"bins {edges.tolist()} must increase monotonically")
    x = x[~np.isnan(x)] if x.dtype.kind == "f" else x
    counts, _ = np.histogram(x, bins=edges)
    return [counts.astype(np.int64), edges.copy()]


register(OpDef(
    "_histogram", HISTOGRAM_PARAMS, _inputs, _histogram_shape, _histogram, NOT_DIFFERENTIABLE,
    OPAQUE, infer_type=_histogram_type, outputs=("output0", "output1"),
    lowering=("histogram", {"dtypes": ("float32", "float64", "float16", "bfloat16", "int64")}),
    doc="Counts of the data in bins (int64) and the bin edges, as numpy's histogram: "
        "`bin_cnt` equal bins over `range` (or the data's min and max), or the edges of "
        "input `bins`."))
