"""Shape manipulation: transpose, expand_dims, squeeze, Concat, SliceChannel/split, slice,
slice_axis, broadcast_to, tile, repeat, pad, reverse, Cast.

Ops whose gradient needs the input's shape get a registered backward op that takes the input as
a shape-only argument (``_backward_Concat``, ``_backward_slice``...); each backward op's own
gradient is the forward op again, so they differentiate twice.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from ...core.attrs import Attrs, Param
from ...core.base import ShapeError
from ...core.registry import INJECTIVE, OpDef, PartialShape, RunCtx, alias, register
from ._util import check_attr, fmt, forward_shape, like_input, merge_dims, norm_axes
from .norm import check_axis
from .tensor import lhs_type

Shape = tuple[int, ...]


def _reshape_back(c) -> list:
    return [c.sym.reshape_like(c.ograds[0], c.inputs[0])]


def transpose_axes(a: Attrs, ndim: int) -> tuple[int, ...]:
    axes = tuple(a["axes"]) or tuple(reversed(range(ndim)))
    if len(axes) != ndim:
        raise ShapeError(f"axes {axes} is not a permutation of {ndim} axes")
    return norm_axes(axes, ndim, "axes")


def inverse_axes(axes: tuple[int, ...]) -> tuple[int, ...]:
    """The inverse permutation (axes may be negative; given axes name every axis)."""
    return tuple(np.argsort([ax % len(axes) for ax in axes]).tolist())


def transpose_shape(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    """Both directions, partial shapes (0 = unknown) included: out[j] = data[axes[j]]."""
    src, dst = ins[0], outs[0]
    known = src if src is not None else dst
    if known is None:
        return ins, outs
    axes = transpose_axes(a, len(known))
    back = tuple(np.argsort(axes).tolist())
    fwd = tuple(src[i] for i in axes) if src is not None else dst
    if src is not None and dst is not None:
        fwd = merge_dims(fwd, dst)
        if fwd is None:
            raise ShapeError(f"data {fmt(src)} transposed by axes {axes} is not {fmt(dst)}")
    return [tuple(fwd[j] for j in back)], [fwd]


register(OpDef(
    "transpose", {"axes": Param("shape", ())}, ("data",), transpose_shape,
    lambda a, xs, ctx: [np.ascontiguousarray(xs[0].transpose(transpose_axes(a, xs[0].ndim)))],
    lambda c: [c.sym.transpose(c.ograds[0], axes=inverse_axes(c.attrs["axes"]))],
    INJECTIVE, doc="Permute axes (default: reverse them).", partial_shapes=True,
    # GPU: one strided copy of the input viewed with permuted strides (cuda/lowering_views.py)
    lowering=("gather_views", {
        "views": lambda a, x, s: [x.transpose(transpose_axes(a, x.ndim))]})))


def _expand_shape(a: Attrs, s: list) -> list:
    shape = s[0]
    ax = check_axis(a["axis"], len(shape) + 1)
    return [tuple(shape[:ax]) + (1,) + tuple(shape[ax:])]


def _squeeze_shape(a: Attrs, s: list) -> list:
    shape = s[0]
    axes = range(len(shape)) if a["axis"] is None else \
        [check_axis(ax, len(shape)) for ax in a["axis"]]
    drop = {i for i in axes if shape[i] == 1}
    if a["axis"] is not None and len(drop) != len(set(axes)):
        raise ShapeError(f"cannot squeeze axes {a['axis']} of {fmt(shape)}: size is not 1")
    return [tuple(d for i, d in enumerate(shape) if i not in drop) or (1,)]


for _name, _params, _rule, _doc in (
        ("expand_dims", {"axis": Param("int")}, _expand_shape, "Insert a size-1 axis."),
        ("squeeze", {"axis": Param("axis", None)}, _squeeze_shape,
         "Remove size-1 axes (all, or the given ones)."),
):
    register(OpDef(_name, _params, ("data",), forward_shape(_rule),
                   lambda a, xs, ctx, r=_rule: [xs[0].reshape(r(a, [xs[0].shape])[0])],
                   _reshape_back, INJECTIVE, view=True, lowering="copy", doc=_doc))

# -- Concat and SliceChannel -----------------------------------------------------------------------


def _concat_shape(a: Attrs, s: list) -> list:
    first = s[0]
    ax = check_axis(a["dim"], len(first))
    for other in s[1:]:
        if len(other) != len(first) or any(o != f for i, (o, f) in enumerate(zip(other, first))
                                           if i != ax):
            raise ShapeError(f"inputs {fmt(first)} and {fmt(other)} differ outside dim {ax}")
    return [tuple(first[:ax]) + (sum(x[ax] for x in s),) + tuple(first[ax + 1:])]


def _concat_grad(c) -> list:
    n = c.attrs["num_args"]
    parts = c.sym._backward_Concat(c.ograds[0], *c.inputs, num_args=n, dim=c.attrs["dim"])
    return [parts[i] for i in range(n)]


def _concat_rule(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    """Concat's shape rule; with partial shapes (0 = unknown) the other dimensions are shared
    by every input and the output, and one unknown input size along dim comes from the
    output's."""
    known = [s for s in list(ins) + list(outs) if s is not None]
    # (a known output with one input unknown also decides that input: a gluon RNN layer's
    # flat parameters, whose first weight's width comes from the data)
    one_missing = outs[0] is not None and [s is None for s in ins].count(True) == 1
    if not known or not any(0 in s and isinstance(s, PartialShape) for s in known) \
            and not one_missing:
        return forward_shape(_concat_shape)(a, ins, outs)
    n = len(known[0])
    ax = check_axis(a["dim"], n)
    common = [0] * n
    for s in known:
        if len(s) != n:
            raise ShapeError(f"inputs of ranks {sorted({len(k) for k in known})}")
        for k in range(n):
            if k != ax and s[k]:
                if common[k] and common[k] != s[k]:
                    raise ShapeError(f"shapes {fmt(s)} and {fmt(tuple(common))} differ "
                                     f"outside dim {ax}")
                common[k] = s[k]
    sizes = [s[ax] if s is not None else 0 for s in ins]
    total = outs[0][ax] if outs[0] is not None else 0
    if total and sizes.count(0) == 1:
        sizes[sizes.index(0)] = total - sum(sizes)
    if 0 not in sizes:
        total = sum(sizes)
    shape = lambda d: tuple(d if k == ax else common[k] for k in range(n))  # noqa: E731
    return [shape(d) for d in sizes], [shape(total)]


CONCAT_PARAMS = {"num_args": Param("int"), "dim": Param("int", 1)}
register(OpDef(
    "Concat", CONCAT_PARAMS, lambda a: tuple(f"arg{i}" for i in range(a["num_args"])),
    _concat_rule,
    lambda a, xs, ctx: [np.concatenate(xs, axis=a["dim"])], _concat_grad, INJECTIVE,
    variadic="num_args", doc="Join arrays along dim.", partial_shapes=True,
    lowering=("scatter_views", {"views": lambda a, x, s: pieces(x, a["dim"] % x.ndim, s)})))
alias("concat", "Concat")


def pieces(x: np.ndarray, dim: int, shapes: list) -> list:
    """``x`` cut along ``dim`` into pieces of the given shapes (Concat's inputs)."""
    cuts = np.cumsum([s[dim] for s in shapes])[:-1]
    return np.split(x, cuts, axis=dim)


def _split_back(a: Attrs, xs: list, ctx: RunCtx) -> list:
    return [np.ascontiguousarray(p) for p in pieces(xs[0], a["dim"], [p.shape for p in xs[1:]])]


register(OpDef(
    "_backward_Concat", CONCAT_PARAMS,
    lambda a: ("ograd",) + tuple(f"arg{i}" for i in range(a["num_args"])),
    lambda a, ins, outs: (ins, [s for s in ins[1:]]), _split_back,
    lambda c: [c.sym.Concat(*c.ograds, dim=c.attrs["dim"])] + [None] * c.attrs["num_args"],
    INJECTIVE, outputs=lambda a: tuple(f"output{i}" for i in range(a["num_args"])),
    doc="Gradient of Concat: ograd cut into pieces shaped like the inputs.",
    lowering=("gather_views", {"views": lambda a, x, s: pieces(x, a["dim"] % x.ndim, s[1:])})))


def _slice_channel_outputs(a: Attrs) -> tuple[str, ...]:
    # Asked for when the node is made, so num_outputs=0 fails there, not as an empty symbol.
    check_attr(a["num_outputs"] >= 1, "num_outputs", a["num_outputs"], "must be >= 1")
    return tuple(f"output{i}" for i in range(a["num_outputs"]))


def _slice_channel_shape(a: Attrs, s: list) -> list:
    shape, n = s[0], a["num_outputs"]
    ax = check_axis(a["axis"], len(shape))
    if n < 1 or shape[ax] % n:
        raise ShapeError(f"axis {ax} of {fmt(shape)} does not split into {n} equal parts")
    part = tuple(shape[:ax]) + (shape[ax] // n,) + tuple(shape[ax + 1:])
    if a["squeeze_axis"]:
        if part[ax] != 1:
            raise ShapeError(f"squeeze_axis needs parts of size 1 on axis {ax}, got {part[ax]}")
        part = part[:ax] + part[ax + 1:]
    return [part] * n


def _slice_channel(a: Attrs, xs: list, ctx: RunCtx) -> list:
    parts = _slice_channel_shape(a, [xs[0].shape])
    return [np.ascontiguousarray(p).reshape(s) for p, s in
            zip(np.split(xs[0], a["num_outputs"], axis=a["axis"]), parts)]


def _channel_parts(a: Attrs, x: np.ndarray, shapes: list) -> list:
    ax = a["axis"] % x.ndim
    parts = np.split(x, a["num_outputs"], axis=ax)
    return [q.squeeze(ax) if a["squeeze_axis"] else q for q in parts]


def _slice_channel_rule(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    """SliceChannel's shape rule; with partial shapes (0 = unknown) the data and the parts
    complete each other dimension by dimension."""
    data, n = ins[0], a["num_outputs"]
    known_outs = [o for o in outs if o is not None]
    if data is not None and 0 not in data:
        return forward_shape(_slice_channel_shape)(a, ins, outs)
    if data is None and not known_outs:
        return ins, outs
    rank = len(data) if data is not None else len(known_outs[0]) + a["squeeze_axis"]
    ax = check_axis(a["axis"], rank)
    part = [0] * rank
    for o in known_outs:  # a part's dims, the split axis put back when squeezed
        full = list(o[:ax]) + [1] + list(o[ax:]) if a["squeeze_axis"] else list(o)
        part = [p or q for p, q in zip(part, full)]
    data = list(data) if data is not None else [0] * rank
    for k in range(rank):
        whole = part[k] * n if k == ax else part[k]
        data[k] = data[k] or whole
    for k in range(rank):
        part[k] = (data[k] // n or part[k]) if k == ax else (part[k] or data[k])
    one = tuple(part[:ax] + part[ax + 1:]) if a["squeeze_axis"] else tuple(part)
    return [tuple(data)], [one] * n


def _slice_channel_grad(c) -> list:
    a = c.attrs
    gs = [c.sym.expand_dims(g, axis=a["axis"]) if a["squeeze_axis"] else g for g in c.ograds]
    return [c.sym.Concat(*gs, dim=a["axis"])]


register(OpDef(
    "SliceChannel", {"num_outputs": Param("int"), "axis": Param("int", 1),
                     "squeeze_axis": Param("bool", False)},
    ("data",), _slice_channel_rule, _slice_channel, _slice_channel_grad,
    INJECTIVE, partial_shapes=True, outputs=_slice_channel_outputs,
    doc="Split into num_outputs equal parts along axis (multi-output).",
    lowering=("gather_views", {"views": _channel_parts})))
alias("split", "SliceChannel")

# -- slice, slice_axis -----------------------------------------------------------------------------


def slice_index(a: Attrs, shape: Shape) -> tuple:
    """``slice``'s Python index for data of ``shape`` (also ``_slice_assign``'s region)."""
    begin, end = a["begin"], a["end"]
    step = a["step"] or (None,) * len(begin)
    if len(begin) != len(end) or len(step) != len(begin) or len(begin) > len(shape):
        raise ShapeError(f"begin {begin}, end {end}, step {a['step']} do not fit {fmt(shape)}")
    if any(s == 0 for s in step):
        raise ShapeError(f"step {step} contains 0")
    return tuple(slice(b, e, s) for b, e, s in zip(begin, end, step))


def _slice_axis_index(a: Attrs, shape: Shape) -> tuple:
    ax = check_axis(a["axis"], len(shape))
    return (slice(None),) * ax + (slice(a["begin"], a["end"]),)


def _sliced_shape(index_of: Callable) -> Callable:
    """The sliced shape; an unknown (0) dimension of partial data stays unknown, as in
    MXNet's ``infer_shape_partial``."""
    def rule(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
        data = ins[0]
        if data is None:
            return ins, outs
        index = index_of(a, data)
        out = tuple(len(range(*sl.indices(n))) if n else 0 for sl, n in zip(index, data))
        out += tuple(data[len(index):])
        if any(n and not o for n, o in zip(data, out)):
            raise ShapeError(f"slice {index} of {fmt(data)} is empty")
        return ins, [out]
    return rule


def _register_slicing(name: str, params: dict, index_of: Callable, doc: str) -> None:
    """``name`` and ``_backward_<name>`` (ograd written into zeros shaped like the data)."""
    def backward(a: Attrs, xs: list, ctx: RunCtx) -> list:
        dy, x = xs
        out = np.zeros(x.shape, dtype=dy.dtype)
        out[index_of(a, x.shape)] = dy
        return [out]
    register(OpDef(
        name, params, ("data",), _sliced_shape(index_of),
        lambda a, xs, ctx: [xs[0][index_of(a, xs[0].shape)].copy()],
        lambda c: [c.sym.apply_op(f"_backward_{name}", [c.ograds[0], c.inputs[0]], c.attrs)],
        INJECTIVE, doc=doc, partial_shapes=True,
        lowering=("gather_views", {"views": lambda a, x, s: [x[index_of(a, x.shape)]]})))
    register(OpDef(
        f"_backward_{name}", params, ("ograd", "data"), like_input(1), backward,
        lambda c: [c.sym.apply_op(name, [c.ograds[0]], c.attrs), None], INJECTIVE,
        doc=f"Gradient of {name}: ograd placed into zeros shaped like the data.",
        lowering=("scatter_views", {"views": lambda a, x, s: [x[index_of(a, x.shape)]],
                                    "zero": True, "inputs": (0,)})))


SLICE_PARAMS = {"begin": Param("index_tuple"), "end": Param("index_tuple"),
                "step": Param("index_tuple", ())}
_register_slicing("slice", SLICE_PARAMS, slice_index,
                  "Python slicing on the leading len(begin) axes (None = open end).")
_register_slicing("slice_axis", {"axis": Param("int"), "begin": Param("int"),
                                 "end": Param("int?", None)}, _slice_axis_index,
                  "Slice [begin, end) along one axis.")
alias("crop", "slice")


# -- slice_like ------------------------------------------------------------------------------------


def _slice_like_index(a: Attrs, data: Shape, like: Shape) -> tuple:
    """[0, like[axis]) on each of ``axes`` (all axes when empty, then ranks must match)."""
    if not a["axes"]:
        if len(data) != len(like):
            raise ShapeError(f"without axes, slice_like slices every axis: data {fmt(data)} "
                             f"and shape_like {fmt(like)} need one rank")
        axes = tuple(range(len(data)))
    else:
        axes = norm_axes(a["axes"], len(data), "axes")
    index = [slice(None)] * len(data)
    for ax in axes:
        if ax >= len(like) or like[ax] > data[ax]:
            raise ShapeError(f"axis {ax}: shape_like {fmt(like)} does not fit inside data "
                             f"{fmt(data)}")
        index[ax] = slice(0, like[ax])
    return tuple(index)


def _slice_like_shape(a: Attrs, s: list) -> list:
    index = _slice_like_index(a, s[0], s[1])
    return [tuple(len(range(*sl.indices(n))) for sl, n in zip(index, s[0]))]


def _origin(shape: Shape) -> tuple:
    """The block of ``shape`` at the origin (where slice_like's output came from)."""
    return tuple(slice(0, n) for n in shape)


def _backward_slice_like(a: Attrs, xs: list, ctx: RunCtx) -> list:
    dy, x = xs
    out = np.zeros(x.shape, dtype=dy.dtype)
    out[_origin(dy.shape)] = dy
    return [out]


register(OpDef(
    "slice_like", {"axes": Param("shape", ())}, ("data", "shape_like"),
    forward_shape(_slice_like_shape),
    lambda a, xs, ctx: [xs[0][_slice_like_index(a, xs[0].shape, xs[1].shape)].copy()],
    lambda c: [c.sym._backward_slice_like(c.ograds[0], c.inputs[0]), None], INJECTIVE,
    lowering=("gather_views", {"views": lambda a, x, s: [x[_slice_like_index(a, s[0], s[1])]],
                               "dtypes": "any"}),  # moves bytes; shape_like is not read
    infer_type=lhs_type,  # only shape_like's shape is read: any dtype (as MXNet)
    doc="data cut to shape_like's size on `axes` (every axis when empty), from index 0."))
register(OpDef(
    "_backward_slice_like", {}, ("ograd", "data"), like_input(1), _backward_slice_like,
    lambda c: [c.sym.slice_like(c.ograds[0], c.inputs[0]), None], INJECTIVE,
    lowering=("scatter_views", {"views": lambda a, x, s: [x[_origin(s[0])]], "zero": True,
                                "inputs": (0,)}),
    doc="Gradient of slice_like: ograd placed at the origin of zeros shaped like the data."))
