"""Arrays made from attributes alone (``_zeros``, ``_ones``, ``_full``: MXNet's ``sym.zeros``...)
and from an input's shape (``shape_array``, ``size_array``)."""
from __future__ import annotations

import numpy as np

from ...core.attrs import Attrs, Param
from ...core.base import ShapeError
from ...core.registry import INJECTIVE, NOT_DIFFERENTIABLE, OpDef, RunCtx, register
from ._util import PartialShape, check_attr, fmt, merge_dims


def _made_shape(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    """``shape``, where -1 is a dimension left to the consumers (MXNet's
    ``sym.ones(shape=(-1, 3))``): until they decide it, it is an unknown (0) of a
    ``PartialShape``."""
    shape = tuple(a["shape"])
    if all(d >= 0 for d in shape):
        return ins, [shape]
    check_attr(all(d >= -1 for d in shape), "shape", shape,
               "dimensions must be >= 0, or -1 for one its consumers decide")
    partial = tuple(max(d, 0) for d in shape)
    if outs[0] is not None:
        merged = merge_dims(partial, outs[0])
        if merged is None:
            raise ShapeError(f"shape={shape} cannot be {fmt(outs[0])}")
        partial = merged
    return ins, [PartialShape(partial) if 0 in partial else partial]


def _at_shapes(a: Attrs, out_shapes: list) -> Attrs:
    """The attributes with ``shape`` as inferred (its -1s decided), for the numpy reference."""
    return a if min(a["shape"], default=0) >= 0 else a.replace(shape=tuple(out_shapes[0]))


def _made_type(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    """The given dtype; without one, whatever the consumers need (float32 if nothing says)."""
    if a["dtype"] is not None:
        return ins, [np.dtype(a["dtype"])]
    return ins, outs


CREATED = {"_zeros": 0.0, "_ones": 1.0, "_full": None}
for _name, _fill in CREATED.items():
    _params = {"shape": Param("shape", ()), "dtype": Param("dtype?", None),
               "ctx": Param("str", "", doc="ignored: the executor's context places it")}
    if _fill is None:
        _params["value"] = Param("float", doc="the fill value")
    register(OpDef(
        _name, _params, (), _made_shape,
        lambda a, xs, ctx, f=_fill: [np.full(a["shape"], a["value"] if f is None else f,
                                             dtype=np.dtype(a["dtype"] or np.float32))],
        NOT_DIFFERENTIABLE, INJECTIVE, infer_type=_made_type, partial_shapes=True,
        extra={"at_shapes": _at_shapes},
        lowering=("fill", {"value": (lambda a: a["value"]) if _fill is None else _fill}),
        doc=f"An array of shape `shape` filled with {_fill if _fill is not None else 'value'}."))


def _shape_array(a: Attrs, xs: list, ctx: RunCtx) -> list:
    return [np.array(xs[0].shape, dtype=np.int64)]


def _size_array(a: Attrs, xs: list, ctx: RunCtx) -> list:
    return [np.array([xs[0].size], dtype=np.int64)]


def _int64_out(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    return ins, [np.dtype(np.int64)]


register(OpDef(
    "shape_array", {}, ("data",),
    lambda a, ins, outs: (ins, [(len(ins[0]),)] if ins[0] is not None else outs),
    _shape_array, NOT_DIFFERENTIABLE, INJECTIVE, infer_type=_int64_out,
    lowering=("shape_constant", {"value": lambda shapes: np.array(shapes[0], np.int64)}),
    doc="The shape of data as a 1-D int64 array."))
register(OpDef(
    "size_array", {}, ("data",), lambda a, ins, outs: (ins, [(1,)]),
    _size_array, NOT_DIFFERENTIABLE, INJECTIVE, infer_type=_int64_out,
    lowering=("shape_constant",
              {"value": lambda shapes: np.array([int(np.prod(shapes[0]))], np.int64)}),
    doc="The number of elements of data as a (1,) int64 array."))
