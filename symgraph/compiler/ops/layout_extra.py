"""MXNet layout ops added for parity: SwapAxis, broadcast_axis, batch_take, and AMP's casts
(amp_cast, amp_multicast); symgraph's ``_transpose_cast`` (a transpose and a cast as one step)."""
from __future__ import annotations

import numpy as np

from ...core.attrs import Attrs, Param
from ...core.base import AttrError, ShapeError
from ...core.dtypes import is_float
from ...core.registry import (BROADCAST, INJECTIVE, NO_GRADIENT, POSITIONAL, OpDef, RunCtx, alias,
                        register)
from ._util import fmt, forward_shape, like_input, norm_axis, same_shape
from .shape import inverse_axes, transpose_axes, transpose_shape


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
        ax = norm_axis(ax, len(shape))
        if shape[ax] != 1:
            raise ShapeError(f"broadcast_axis: axis {ax} of {fmt(s[0])} must be 1")
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
    return ins, [np.dtype(a["dtype"]) if is_float(ins[0]) else ins[0]]


register(OpDef(
    "amp_cast", {"dtype": Param("dtype")}, ("data",), same_shape,  # both ways, as MXNet
    lambda a, xs, ctx: [xs[0].astype(a["dtype"]) if is_float(xs[0].dtype) else xs[0].copy()],
    lambda c: [c.sym._backward_Cast(c.ograds[0], c.inputs[0])], INJECTIVE,
    infer_type=_amp_type, lowering="cast", cast=True, layout=POSITIONAL,
    doc="Cast floating-point data to dtype (other dtypes pass unchanged), for AMP."))

# float widths for amp_multicast: float16 and bfloat16 are both 1, neither holds the other.
_RANK = {"float16": 1, "bfloat16": 1, "float32": 2, "float64": 3}


def multicast_dtype(cast_narrow: bool, dtypes: list) -> np.dtype | None:
    """The one dtype amp_multicast gives its float inputs (MXNet's AMPMultiCastType): the
    widest of them, or with ``cast_narrow`` the narrowest. float16 with bfloat16 is float32
    when widening (the narrowest float that holds both), the first one given when narrowing."""
    floats = [np.dtype(t) for t in dtypes if is_float(t)]
    if not floats:
        return None
    if cast_narrow:
        return min(floats, key=lambda t: _RANK[t.name])
    top = max(_RANK[t.name] for t in floats)
    widest = {t for t in floats if _RANK[t.name] == top}
    return widest.pop() if len(widest) == 1 else np.dtype(np.float32)


def _multicast_type(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    if any(t is None for t in ins):
        return ins, outs
    to = multicast_dtype(a["cast_narrow"], ins)
    return ins, [to if is_float(t) else t for t in ins]


def _multicast_shape(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    both = [i if i is not None else o for i, o in zip(ins, outs)]
    return both, list(both)


def _multicast(a: Attrs, xs: list, ctx: RunCtx) -> list:
    to = multicast_dtype(a["cast_narrow"], [x.dtype for x in xs])
    return [x.astype(to) if is_float(x.dtype) else x.copy() for x in xs]


register(OpDef(
    "amp_multicast",
    {"num_outputs": Param("int", doc="number of inputs, and of outputs"),
     "cast_narrow": Param("bool", False, doc="cast to the narrowest float type instead")},
    lambda a: tuple(f"data_{i}" for i in range(a["num_outputs"])), _multicast_shape,
    _multicast, lambda c: [c.sym._backward_Cast(g, x) for g, x in zip(c.ograds, c.inputs)],
    INJECTIVE, infer_type=_multicast_type, variadic="num_outputs",
    outputs=lambda a: tuple(f"output{i}" for i in range(a["num_outputs"])),
    lowering=("cast_each", {"dtypes": "any"}), layout=POSITIONAL,
    extra={"casts_each": True},  # output i is input i converted (passes/absorb_casts)
    doc="Cast every floating-point input to the widest float type among them (cast_narrow: "
        "the narrowest); other inputs pass unchanged. Output i is input i, cast; for AMP."))


def _grad_scale_shape(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    if ins[1] is not None and tuple(ins[1]) != (1,):
        raise ShapeError(f"scale must have shape (1,), got {fmt(ins[1])}")
    data = ins[0] if ins[0] is not None else outs[0]
    return [data, (1,)], [data]


register(OpDef(
    "_amp_grad_scale", {}, ("data", "scale"), _grad_scale_shape,
    lambda a, xs, ctx: [xs[0].copy()],
    lambda c: [c.sym.broadcast_mul(c.ograds[0], c.inputs[1]), None], INJECTIVE,
    infer_type=lambda a, ins, outs: ([ins[0] if ins[0] is not None else outs[0], ins[1]],
                                     [ins[0] if ins[0] is not None else outs[0]]),
    lowering="copy",
    doc="Forward: data unchanged; backward: the gradient times scale (a (1,) array). AMP's "
        "dynamic loss scaling puts it on a loss op's input, so a new scale needs no rebind."))


def _transpose_cast(a: Attrs, xs: list, ctx: RunCtx) -> list:
    axes = transpose_axes(a, xs[0].ndim)
    return [np.ascontiguousarray(xs[0].transpose(axes)).astype(a["dtype"])]


register(OpDef(
    "_transpose_cast", {"axes": Param("shape", ()), "dtype": Param("dtype")}, ("data",),
    transpose_shape, _transpose_cast,
    lambda c: [c.sym._backward_Cast(c.sym.transpose(c.ograds[0],
                                                    axes=inverse_axes(c.attrs["axes"])),
                                    c.inputs[0])],
    INJECTIVE, partial_shapes=True,
    infer_type=lambda a, ins, outs: (ins, [np.dtype(a["dtype"])]),
    # GPU: one strided copy converting each element (cuda/lowering_views.py)
    lowering=("gather_views", {
        "views": lambda a, x, s: [x.transpose(transpose_axes(a, x.ndim))]}),
    doc="transpose(data, axes) converted to dtype (as Cast converts), in one step: what "
        "passes/fold_casts makes of a float cast next to a transpose (AMP's weights in "
        "channels-last convolutions)."))


def _each(a: Attrs, n: int) -> list[tuple[tuple[int, ...], str]]:
    """(axes, dtype) of each of the ``n`` inputs; AttrError when the attrs do not give one
    of each per input."""
    axes, dtypes = a["axes"], a["dtypes"]
    if not len(axes) == len(dtypes) == n == a["num_args"]:
        raise AttrError(f"num_args={a['num_args']}, {n} inputs, {len(axes)} axes tuples "
                        f"{axes} and {len(dtypes)} dtypes {dtypes}: one of each per input")
    return list(zip(axes, dtypes))


def _multi_shape(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    done = [transpose_shape({"axes": ax}, [i], [o])
            for (ax, _), i, o in zip(_each(a, len(ins)), ins, outs)]
    return [d[0][0] for d in done], [d[1][0] for d in done]


def _multi_transpose_cast(a: Attrs, xs: list, ctx: RunCtx) -> list:
    return [_transpose_cast({"axes": ax, "dtype": t}, [x], ctx)[0]
            for (ax, t), x in zip(_each(a, len(xs)), xs)]


register(OpDef(
    "_multi_transpose_cast",
    {"num_args": Param("int", doc="number of inputs, and of outputs"),
     "axes": Param("shapes", doc="the permutation of each input (() reverses its axes)"),
     "dtypes": Param("dtypes", doc="the dtype each output is converted to")},
    lambda a: tuple(f"data_{i}" for i in range(a["num_args"])), _multi_shape,
    _multi_transpose_cast, NO_GRADIENT, INJECTIVE, partial_shapes=True,
    infer_type=lambda a, ins, outs: (ins, [np.dtype(t) for _, t in _each(a, len(ins))]),
    variadic="num_args", outputs=lambda a: tuple(f"output{i}" for i in range(a["num_args"])),
    # GPU: one kernel for all of them (cuda/lowering_views.py)
    lowering=("multi_transpose_cast", {"views": lambda a, xs: [
        x.transpose(transpose_axes({"axes": ax}, x.ndim)) for x, ax in zip(xs, a["axes"])]}),
    doc="Output i is ``_transpose_cast(data_i, axes[i], dtypes[i])``: what passes/batch_casts "
        "makes of the weight casts of a training step (all at its start, their gradients' all "
        "at its end), so that the GPU runs one kernel for each batch. Made after autodiff: "
        "no gradient."))
