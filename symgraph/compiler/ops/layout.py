"""Ops that replicate, pad, reverse or retype data: broadcast_to, tile, repeat, pad, reverse,
Cast, with the backward ops their gradients need (``_backward_tile``, ``_backward_repeat``,
``_backward_pad``, ``_backward_Cast``), each differentiable again."""
from __future__ import annotations

from math import prod
from typing import Callable

import numpy as np

from ...core.attrs import Attrs, Param
from ...core.base import ShapeError
from ...core.registry import BROADCAST, INJECTIVE, REDUCE, OpDef, RunCtx, alias, register
from ._util import broadcast_shapes, fmt, forward_shape, like_input, same_shape
from .norm import check_axis

Shape = tuple[int, ...]


def _broadcast_to_shape(a: Attrs, s: list) -> list:
    src, want = s[0], a["shape"]
    if len(want) != len(src):
        raise ShapeError(f"shape {want} has {len(want)} axes, data {fmt(src)} has {len(src)}")
    target = tuple(d if w == 0 else w for d, w in zip(src, want))
    if broadcast_shapes([src, target]) != target:
        raise ShapeError(f"cannot broadcast {fmt(src)} to {target}")
    return [target]


register(OpDef(
    "broadcast_to", {"shape": Param("shape")}, ("data",), forward_shape(_broadcast_to_shape),
    lambda a, xs, ctx: [np.broadcast_to(xs[0], _broadcast_to_shape(a, [xs[0].shape])[0]).copy()],
    lambda c: [c.ograds[0]], BROADCAST, lowering='broadcast_to',
    doc="Broadcast size-1 axes to `shape` (0 keeps the input's size)."))

# -- tile, repeat ----------------------------------------------------------------------------------


def _aligned(shape: Shape, reps: Shape) -> tuple[Shape, Shape]:
    n = max(len(shape), len(reps))
    return (1,) * (n - len(shape)) + tuple(shape), (1,) * (n - len(reps)) + tuple(reps)


def _tile_shape(a: Attrs, s: list) -> list:
    if min(a["reps"], default=1) < 1:
        raise ShapeError(f"reps {a['reps']} must be positive")
    shape, reps = _aligned(s[0], a["reps"])
    return [tuple(d * r for d, r in zip(shape, reps))]


def _tile_split(a: Attrs, shape: Shape) -> tuple[Shape, tuple[int, ...]]:
    """The output of tile as (split shape, copy axes): (r0, d0, r1, d1, ...), axes 0, 2, ..."""
    shape, reps = _aligned(shape, a["reps"])
    return (tuple(v for pair in zip(reps, shape) for v in pair),
            tuple(range(0, 2 * len(shape), 2)))


def split_view(x: np.ndarray, split: tuple[Shape, tuple[int, ...]]) -> np.ndarray:
    """``x`` broadcast along the copy axes of a split shape: a strided view (stride 0 on those
    axes) whose row-major order is the tiled / repeated output; the GPU gathers through it."""
    shape, axes = split
    return np.broadcast_to(x.reshape(tuple(1 if i in axes else d for i, d in enumerate(shape))),
                           shape)


def _sum_copies(split: Callable[[Attrs, Shape], tuple]) -> Callable:
    """Gradient of a replication: ograd viewed as the split shape, summed over the copy axes."""
    def compute(a: Attrs, xs: list, ctx: RunCtx) -> list:
        dy, x = xs
        shape, axes = split(a, x.shape)
        return [dy.reshape(shape).sum(axis=axes).reshape(x.shape)]
    return compute


register(OpDef(
    "tile", {"reps": Param("shape")}, ("data",), forward_shape(_tile_shape),
    lambda a, xs, ctx: [np.tile(xs[0], a["reps"])],
    lambda c: [c.sym._backward_tile(c.ograds[0], c.inputs[0], **c.attrs)], INJECTIVE,
    lowering=("gather_views",
              {"views": lambda a, x, s: [split_view(x, _tile_split(a, x.shape))]}),
    doc="Repeat the whole array reps times along each axis (numpy.tile)."))
register(OpDef(
    "_backward_tile", {"reps": Param("shape")}, ("ograd", "data"), like_input(1),
    _sum_copies(_tile_split), lambda c: [c.sym.tile(c.ograds[0], **c.attrs), None], REDUCE,
    lowering=("sum_copies", {"split": _tile_split}),
    doc="Gradient of tile: the tiles of ograd summed."))

REPEAT_PARAMS = {"repeats": Param("int"), "axis": Param("int?", None)}


def _repeat_shape(a: Attrs, s: list) -> list:
    shape, r = s[0], a["repeats"]
    if r < 1:
        raise ShapeError(f"repeats={r} must be positive")
    if a["axis"] is None:
        return [(prod(shape) * r,)]
    ax = check_axis(a["axis"], len(shape))
    return [tuple(shape[:ax]) + (shape[ax] * r,) + tuple(shape[ax + 1:])]


def _repeat_split(a: Attrs, shape: Shape) -> tuple[Shape, tuple[int, ...]]:
    """The output of repeat as (split shape, copy axes): (..., d, repeats, ...), the axis after."""
    r = a["repeats"]
    if a["axis"] is None:
        return (prod(shape), r), (1,)
    ax = check_axis(a["axis"], len(shape))
    return tuple(shape[:ax]) + (shape[ax], r) + tuple(shape[ax + 1:]), (ax + 1,)


register(OpDef(
    "repeat", REPEAT_PARAMS, ("data",), forward_shape(_repeat_shape),
    lambda a, xs, ctx: [np.repeat(xs[0], a["repeats"], axis=a["axis"])],
    lambda c: [c.sym._backward_repeat(c.ograds[0], c.inputs[0], **c.attrs)], INJECTIVE,
    lowering=("gather_views",
              {"views": lambda a, x, s: [split_view(x, _repeat_split(a, x.shape))]}),
    doc="Repeat each element `repeats` times along axis (None: of the flattened array)."))
register(OpDef(
    "_backward_repeat", REPEAT_PARAMS, ("ograd", "data"), like_input(1),
    _sum_copies(_repeat_split), lambda c: [c.sym.repeat(c.ograds[0], **c.attrs), None], REDUCE,
    lowering=("sum_copies", {"split": _repeat_split}),
    doc="Gradient of repeat: each element's copies summed."))

# -- pad -------------------------------------------------------------------------------------------

PAD_PARAMS = {"mode": Param("str", "constant", ("constant", "edge", "reflect")),
              "pad_width": Param("shape"), "constant_value": Param("float", 0.0)}


def _pairs(a: Attrs, shape: Shape) -> list[tuple[int, int]]:
    w = a["pad_width"]
    if len(w) != 2 * len(shape) or min(w) < 0:
        raise ShapeError(f"pad_width {w} needs 2 non-negative entries per axis of {fmt(shape)}")
    pairs = [(w[2 * i], w[2 * i + 1]) for i in range(len(shape))]
    if a["mode"] == "reflect" and any(max(p) >= n for p, n in zip(pairs, shape)):
        raise ShapeError(f"reflect padding {w} must be smaller than each axis of {fmt(shape)}")
    return pairs


def _pad_compute(a: Attrs, xs: list, ctx: RunCtx) -> list:
    x = xs[0]
    pairs = _pairs(a, x.shape)
    if a["mode"] == "constant":
        return [np.pad(x, pairs, constant_values=a["constant_value"])]
    return [np.pad(x, pairs, mode=a["mode"])]


def _fold_axis(g: np.ndarray, axis: int, before: int, n: int, mode: str) -> np.ndarray:
    """Adjoint of padding one axis: the padded cells' gradient added to the cells they copy."""
    take = lambda lo, hi: g[(slice(None),) * axis + (slice(lo, hi),)]  # noqa: E731
    centre = take(before, before + n).copy()
    head, tail = take(0, before), take(before + n, None)
    if mode == "edge":
        centre[(slice(None),) * axis + (slice(0, 1),)] += head.sum(axis=axis, keepdims=True)
        centre[(slice(None),) * axis + (slice(n - 1, n),)] += tail.sum(axis=axis, keepdims=True)
    elif mode == "reflect":
        after = tail.shape[axis]
        centre[(slice(None),) * axis + (slice(1, before + 1),)] += np.flip(head, axis)
        centre[(slice(None),) * axis + (slice(n - 1 - after, n - 1),)] += np.flip(tail, axis)
    return centre


def _backward_pad(a: Attrs, xs: list, ctx: RunCtx) -> list:
    g, x = xs
    for axis, ((before, _), n) in enumerate(zip(_pairs(a, x.shape), x.shape)):
        g = _fold_axis(g, axis, before, n, a["mode"])
    return [g]


register(OpDef(
    "pad", PAD_PARAMS, ("data",),
    forward_shape(lambda a, s: [tuple(n + b + e for n, (b, e) in zip(s[0], _pairs(a, s[0])))]),
    _pad_compute, lambda c: [c.sym._backward_pad(c.ograds[0], c.inputs[0], **c.attrs)],
    INJECTIVE, lowering=("pad", {"pairs": _pairs}),
    doc="Pad with a constant, the edge values or a reflection; pad_width has (before, after) "
        "for every axis."))
alias("Pad", "pad")
register(OpDef(
    "_backward_pad", PAD_PARAMS, ("ograd", "data"), like_input(1), _backward_pad,
    lambda c: [c.sym.pad(c.ograds[0], **{**c.attrs, "constant_value": 0.0}), None], REDUCE,
    lowering=("pad_backward", {"pairs": _pairs}),
    doc="Gradient of pad: the centre, plus (edge/reflect) the padding folded back on it."))

# -- reverse, Cast ---------------------------------------------------------------------------------


def _reverse(a: Attrs, xs: list, ctx: RunCtx) -> list:
    x = xs[0]
    axes = tuple(check_axis(ax, x.ndim) for ax in a["axis"])
    return [np.flip(x, axes).copy()]


def _reverse_shape(a: Attrs, s: list) -> list:
    for ax in a["axis"]:
        check_axis(ax, len(s[0]))
    return [tuple(s[0])]


register(OpDef(
    "reverse", {"axis": Param("shape")}, ("data",), forward_shape(_reverse_shape),
    _reverse, lambda c: [c.sym.reverse(c.ograds[0], **c.attrs)], INJECTIVE,
    doc="Reverse the order of elements along the given axes.",
    lowering=("gather_views", {
        "views": lambda a, x, s: [np.flip(x, tuple(ax % x.ndim for ax in a["axis"]))]})))
alias("flip", "reverse")


def _cast_type(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    return ins, [np.dtype(a["dtype"])]


register(OpDef(
    "Cast", {"dtype": Param("dtype")}, ("data",), same_shape,  # both ways, as MXNet
    lambda a, xs, ctx: [xs[0].astype(a["dtype"])],
    lambda c: [c.sym._backward_Cast(c.ograds[0], c.inputs[0])], INJECTIVE,
    infer_type=_cast_type, lowering="cast", cast=True, doc="Convert to dtype; the gradient converts back."))
alias("cast", "Cast")
register(OpDef(
    "_backward_Cast", {}, ("ograd", "data"), like_input(1),
    lambda a, xs, ctx: [xs[0].astype(xs[1].dtype)],
    lambda c: [c.sym._backward_Cast(c.ograds[0], c.inputs[0]), None], INJECTIVE,
    infer_type=like_input(1), lowering="cast", cast=True, doc="ograd converted to the dtype of data."))
