"""The compiled CPU backend's reductions: a sum (or mean) over an array's leading axes as one
BLAS matrix-vector product.

That is the bias gradient of a channels-last convolution (``dy`` summed over N, H, W): numpy
reduces a non-innermost axis by adding whole rows one at a time, 0.81 ms over the seed CNN's
conv1 gradient (64x28x28x32 float32), where ``ones @ dy.reshape(-1, 32)`` took 0.14 ms. Like
numpy's, the sum runs in the array's own dtype. Every other reduction runs numpy's.

Example::

    >>> import numpy as np
    >>> from symgraph.core.attrs import parse_attrs
    >>> from symgraph.core.registry import get_op
    >>> a = parse_attrs(get_op("sum").params, {"axis": (0, 1)}, "")
    >>> sum_leading(a, [np.ones((2, 3, 4), np.float32)], None)[0].tolist()
    [6.0, 6.0, 6.0, 6.0]
"""
from __future__ import annotations

from math import prod
from typing import Optional, Sequence

import numpy as np

from ...compiler.ops.tensor import reduce_axes, reduced_shape
from ...core.attrs import Attrs
from ...core.registry import RunCtx

MIN_ROWS = 64
"""Fewer rows than this: numpy's row adds cost no more than the call."""


def why_not_reduce(kind: str, a: Attrs, shapes: Sequence[tuple], dtype: np.dtype) -> str:
    """Why reduction ``kind`` (``sum``, ``mean``, ...) of attrs ``a`` over data of
    ``shapes[0]`` and ``dtype`` runs numpy's ('' where :func:`sum_leading` takes it)."""
    if np.dtype(dtype).name not in ("float32", "float64"):
        return f"numpy's reduction in {np.dtype(dtype).name} (compiled: float32, float64)"
    shape = tuple(shapes[0])
    axes = reduce_axes(a, len(shape)) if kind in ("sum", "mean") else ()
    if not axes or axes != tuple(range(len(axes))) or len(axes) == len(shape):
        return "numpy's reduction (compiled: a sum or mean over leading axes only)"
    if prod(shape[:len(axes)]) < MIN_ROWS or 0 in shape:
        return f"fewer than {MIN_ROWS} rows (numpy's row adds are as fast)"
    return ""


def sum_leading(a: Attrs, xs: list, ctx: Optional[RunCtx], mean: bool = False) -> list:
    """The sum (``mean``: average) of ``xs[0]`` over its leading axes ``a`` names, as
    ``ones @ x.reshape(rows, rest)``."""
    x = np.ascontiguousarray(xs[0])
    n_axes = len(reduce_axes(a, x.ndim))
    rows = prod(x.shape[:n_axes])
    out = np.ones(rows, x.dtype) @ x.reshape(rows, -1)
    if mean:
        out /= x.dtype.type(rows)
    return [out.reshape(reduced_shape(a, x.shape))]


def mean_leading(a: Attrs, xs: list, ctx: Optional[RunCtx]) -> list:
    """:func:`sum_leading`'s average."""
    return sum_leading(a, xs, ctx, mean=True)


LEADING = {"sum": sum_leading, "mean": mean_leading}
