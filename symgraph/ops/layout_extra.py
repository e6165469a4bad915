"""MXNet layout ops added for parity: SwapAxis, broadcast_axis, batch_take, amp_cast."""
from __future__ import annotations

import numpy as np

from ..attrs import Attrs, Param
from ..base import ShapeError
from ..registry import BROADCAST, INJECTIVE, NO_GRADIENT, OpDef, RunCtx, alias, register
from ._util import fmt, forward_shape, like_input


def _swap(a: Attrs, ndim: int) -> tuple[int, ...]:
    d1, d2 = a["dim1"], a["dim2"]
    if not (-ndim <= d1 < ndim and -ndim <= d2 < ndim):
        raise ShapeError(f"SwapAxis: dims ({d1}, {d2}) out of range for {ndim} axes")
    axes = list(range(ndim))
    axes[d1 % ndim], axes[d2 % ndim] = axes[d2 % ndim], axes[d1 % ndim]
    return tuple(axes)


register(OpDef(
    "SwapAxis", {"dim1": Param("int", 0), "dim2": Param("int", 0)}, ("data",),
    forward_shape(lambda a, s: [tuple(s[0][i] for i in _swap(a, len(s[0])))]),
    lambda a, xs, ctx: [np.ascontiguousarray(xs[0].transpose(_swap(a, xs[0].ndim)))],
    lambda c: [c.sym.SwapAxis(c.ograds[0], **c.attrs)], INJECTIVE,
    lowering=("gather_views", {"views": lambda a, x, s: [x.transpose(_swap(a, x.ndim))]}),
    doc="Interchange axes dim1 and dim2."))
alias("swapaxes", "SwapAxis")


def _broadcast_axis_shape(a: Attrs, s: list) -> list:
    shape = list(s[0])
    if len(a["axis"]) != len(a["size"]):
        raise ShapeError(f"broadcast_axis: axis {a['axis']} and size {a['size']} differ in "
                         f"length")
    for ax, size in zip(a["axis"], a["size"]):
        if not -len(shape) <= ax < len(shape) or shape[ax] != 1:
            raise ShapeError(f"broadcast_axis: axis {ax} of {fmt(s[0])} must exist and be 1")
        shape[ax] = size
    return [tuple(shape)]


register(OpDef(
    "broadcast_axis", {"axis": Param("shape", ()), "size": Param("shape", ())}, ("data",),
    forward_shape(_broadcast_axis_shape),
    lambda a, xs, ctx: [np.broadcast_to(xs[0], _broadcast_axis_shape(a, [xs[0].shape])[0])
                        .copy()],
    lambda c: [c.ograds[0]], BROADCAST, lowering="broadcast_to",
    doc="Broadcast axes of size 1 to the given sizes."))
alias("broadcast_axes", "broadcast_axis")


def _batch_take(a: Attrs, xs: list, ctx: RunCtx) -> list:
    data, idx = xs
    k = np.clip(idx.astype(np.int64), 0, data.shape[1] - 1)
    return [data[np.arange(data.shape[0]), k]]


def _batch_take_shape(a: Attrs, s: list) -> list:
    data, idx = s
    if len(data) != 2 or tuple(idx) != (data[0],):
        raise ShapeError(f"batch_take: needs a (N, M) array and (N,) indices, got "
                         f"{fmt(data)} and {fmt(idx)}")
    return [(data[0],)]


register(OpDef(
    "batch_take", {}, ("a", "indices"), forward_shape(_batch_take_shape), _batch_take,
    NO_GRADIENT, INJECTIVE, infer_type=lambda a, ins, outs: (ins, [ins[0]]),
    lowering=("axis_gather", {"scatter": False, "axis": 1, "mode": "clip"}),
    doc="out[i] = a[i, indices[i]] (indices clipped); no gradient, as in MXNet."))


def _amp_type(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    if ins[0] is None:
        return ins, outs
    return ins, [np.dtype(a["dtype"]) if np.dtype(ins[0]).kind == "f" else ins[0]]


register(OpDef(
    "amp_cast", {"dtype": Param("dtype")}, ("data",), like_input(0),
    lambda a, xs, ctx: [xs[0].astype(a["dtype"]) if xs[0].dtype.kind == "f" else xs[0].copy()],
    lambda c: [c.sym._backward_Cast(c.ograds[0], c.inputs[0])], INJECTIVE,
    infer_type=_amp_type, lowering="cast",
    doc="Cast floating-point data to dtype (other dtypes pass unchanged), for AMP."))
