"""``contrib.boolean_mask`` (MXNet 1.9.1): the rows of data (axis 0) whose index is nonzero.

Its output's length depends on the index's *values*, which a static graph does not know. The
op therefore carries that length as the attribute ``num_selected``: ``sg.nd``'s function
(``extra["nd_wrap"]``) reads the index (a sync, as MXNet's own dynamic-shape ops do) and sets
it, so imperative and autograd code runs as in MXNet; a ``sg.sym`` graph without it is refused
at shape inference with a ShapeError saying so, and a run whose index selects a different
count raises DataError.

A composition (``ops/_composite.py``): each selected row's output position is the running
count of selected rows (``cumsum``); the rows are scatter-added there (``_backward_gather_nd``;
unselected rows go to one extra row, then sliced off), so the gradient gathers back.

Example::

    rows = sg.nd.contrib.boolean_mask(data, index)    # data[index != 0]
"""
from __future__ import annotations

import functools
from typing import Any, Callable

import numpy as np

from ...core.attrs import Attrs, Param
from ...core.base import DataError, ShapeError
from ...core.registry import INJECTIVE, OpDef, RunCtx, register
from ._composite import COMPOSED, composite_gradient, composite_unroll
from ._util import check_attr, fmt

PARAMS = {
    "axis": Param("int", 0, doc="The masked axis (MXNet 1.9.1 masks axis 0 only)."),
    "num_selected": Param("int", -1, doc="Rows selected: set by sg.nd's call from the index "
                                         "values; a static graph cannot know it (-1)."),
}


def _shape(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    check_attr(a["axis"] == 0, "axis", a["axis"], "MXNet 1.9.1 masks axis 0 only")
    data, index = ins
    if data is None:
        return ins, outs
    if len(data) < 1 or (index is not None and tuple(index) != (data[0],)):
        raise ShapeError(f"index {fmt(index)}: expected ({data[0] if data else '?'},), one "
                         f"flag per row of data {fmt(data)}")
    if a["num_selected"] < 0:
        raise ShapeError("boolean_mask's output length depends on the values of index, which a "
                         "static graph does not know; call sg.nd.contrib.boolean_mask "
                         "(imperative, autograd included)")
    return [tuple(data), (data[0],)], [(a["num_selected"],) + tuple(data[1:])]


def _compute(a: Attrs, xs: list, ctx: RunCtx) -> list:
    data, index = xs
    keep = index.reshape(-1) != 0
    if int(keep.sum()) != a["num_selected"]:
        raise DataError(f"index selects {int(keep.sum())} rows, the graph was built for "
                        f"num_selected={a['num_selected']}")
    return [data[keep].copy()]


def _expand(S: Any, a: Attrs, xs: list, shapes: list, dtypes: list) -> list:
    n, count = shapes[0][0], a["num_selected"]
    keep = S._not_equal_scalar(S.Cast(xs[1], dtype="float32"), scalar=0.0)
    place = S._minus_scalar(S.cumsum(keep, axis=0), scalar=1.0)
    # unselected rows go to row `count`, past the output, which is then sliced off
    target = place * keep + S._rminus_scalar(keep, scalar=1.0) * float(count)
    rows = S._backward_gather_nd(xs[0], S.Reshape(target, shape=(1, n)),
                                 shape=(count + 1,) + tuple(shapes[0][1:]))
    return [S.slice_axis(rows, axis=0, begin=0, end=count)]


def nd_wrap(fn: Callable) -> Callable:
    """``sg.nd.contrib.boolean_mask``: ``fn`` with num_selected read from the index."""
    @functools.wraps(fn)  # fn's signature and registry documentation
    def boolean_mask(data: Any, index: Any, axis: int = 0, **kwargs: Any) -> Any:
        if kwargs.get("num_selected", -1) < 0:  # (a caller may state it; compute checks it)
            kwargs["num_selected"] = int(np.count_nonzero(index.asnumpy()))
        return fn(data, index, axis=axis, **kwargs)
    return boolean_mask


register(OpDef(
    "_contrib_boolean_mask", PARAMS, ("data", "index"), _shape, _compute,
    composite_gradient(_expand, wrt=(0,)), INJECTIVE, infer_type=lambda a, ins, outs: (
        ins, [ins[0]] if ins[0] is not None else outs),
    lowering=COMPOSED, extra={"unroll": composite_unroll(_expand), "nd_wrap": nd_wrap},
    doc="The rows of data whose index is nonzero (imperative: the count comes from the "
        "index's values)."))
