"""MXNet's ``_slice_assign`` and ``_slice_assign_scalar`` (legacy spellings ``_crop_assign``,
``_crop_assign_scalar``): the output is the input with the region ``[begin:end:step]`` (as
``slice`` reads it) replaced by ``rhs``, or by one scalar.

MXNet runs them in place (``out=lhs``); here the output is a new array, and the imperative
front end's ``out=`` rebinds the user's array to it, so the visible result is MXNet's.

Gradients, built from these ops and ``slice``: the input receives the output gradient with the
region zeroed (``_slice_assign_scalar`` of 0), ``rhs`` the region of the output gradient.

GPU: ``_slice_assign`` is ``scatter_views`` (the whole input, then ``rhs`` into the region's
strided view); ``_slice_assign_scalar`` is ``fill_view`` (a copy, then the scalar written
through the same strided view).

Example::

    x = sg.nd.ones((2, 3))
    sg.nd._internal._slice_assign_scalar(x, scalar=5, begin=(0, 1), end=(2, 3), out=x)
    # x is [[1, 5, 5], [1, 5, 5]]
"""
from __future__ import annotations

import numpy as np

from ...core.attrs import Attrs, Param
from ...core.base import ShapeError
from ...core.registry import INJECTIVE, OpDef, RunCtx, register
from ._util import fmt
from .shape import SLICE_PARAMS, slice_index

ASSIGN_SCALAR_PARAMS = {"scalar": Param("float", 0.0, doc="the value written into the region"),
                        **SLICE_PARAMS}


def region_shape(a: Attrs, shape: tuple) -> tuple:
    """Shape of the region ``[begin:end:step]`` of an array of ``shape`` (may hold 0)."""
    index = slice_index(a, shape)
    return (tuple(len(range(*sl.indices(n))) for sl, n in zip(index, shape))
            + tuple(shape[len(index):]))


def _assign_rule(with_rhs: bool):
    """Shape rule: output and input share a shape (either gives the other); ``rhs`` has the
    region's shape."""
    def rule(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
        data = ins[0] if ins[0] is not None else outs[0]
        if data is None:
            return ins, outs
        if len(data) == 0:
            raise ShapeError(f"cannot assign into a slice of a scalar (shape {fmt(data)})")
        region = region_shape(a, data)  # (checks begin, end and step against the data)
        return [data] + ([region] if with_rhs else []), [data]
    return rule


def _slice_assign(a: Attrs, xs: list, ctx: RunCtx) -> list:
    out = xs[0].copy()
    out[slice_index(a, out.shape)] = xs[1]
    return [out]


def _slice_assign_scalar(a: Attrs, xs: list, ctx: RunCtx) -> list:
    out = xs[0].copy()
    out[slice_index(a, out.shape)] = np.asarray(a["scalar"]).astype(out.dtype)
    return [out]


def _zero_region(c) -> object:
    """The output gradient with the assigned region zeroed: the input's gradient."""
    attrs = {k: c.attrs[k] for k in SLICE_PARAMS}
    return c.sym.apply_op("_slice_assign_scalar", [c.ograds[0]], {**attrs, "scalar": 0.0})


def _slice_assign_grad(c) -> list:
    attrs = {k: c.attrs[k] for k in SLICE_PARAMS}
    return [_zero_region(c), c.sym.apply_op("slice", [c.ograds[0]], attrs)]


def _region_views(a: Attrs, x: np.ndarray, shapes: list) -> list:
    return [x, x[slice_index(a, x.shape)]]


register(OpDef(
    "_slice_assign", SLICE_PARAMS, ("lhs", "rhs"), _assign_rule(True), _slice_assign,
    _slice_assign_grad, INJECTIVE,
    lowering=("scatter_views", {"views": _region_views, "inputs": (0, 1)}),
    doc="lhs with its region [begin:end:step] (slice's indexing, None = open end) replaced "
        "by rhs, which has the region's shape."))
register(OpDef(
    "_slice_assign_scalar", ASSIGN_SCALAR_PARAMS, ("data",), _assign_rule(False),
    _slice_assign_scalar, lambda c: [_zero_region(c)], INJECTIVE,
    lowering=("fill_view", {"view": lambda a, x: x[slice_index(a, x.shape)]}),
    doc="data with its region [begin:end:step] (slice's indexing) set to scalar."))
