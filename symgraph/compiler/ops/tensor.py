"""Shape manipulation, reductions, dot and the helpers the gradient pass relies on."""
from __future__ import annotations

from math import prod
from typing import Callable, Optional, Sequence

import numpy as np

from ...core import expr as E
from ...core.attrs import Attrs, Param
from ...core.base import ShapeError
from ...core.registry import (BROADCAST, GEMM, INJECTIVE, NOT_DIFFERENTIABLE, REDUCE, OpDef,
                        RunCtx, alias, register)
from ._util import broadcast_shapes, fmt, forward_shape, norm_axes, norm_axis, same_shape

Shape = tuple[int, ...]


def mx_reshape(src: Shape, spec: Sequence[int], reverse: bool = False) -> Shape:
    """MXNet's Reshape target shape with the special codes 0, -1, -2, -3, -4."""
    if reverse:  # MXNet reads both lists right to left (-4's two sizes included)
        return tuple(reversed(mx_reshape(tuple(reversed(src)), tuple(reversed(spec)))))
    out: list[int] = []
    infer_at: Optional[int] = None
    i = j = 0
    try:
        while j < len(spec):
            s = spec[j]
            if s > 0:
                out.append(s)
                i += 1
            elif s == 0:
                out.append(src[i])
                i += 1
            elif s == -1:
                if infer_at is not None:
                    raise ShapeError(f"Reshape: more than one -1 in {tuple(spec)}")
                infer_at = len(out)
                out.append(1)
                i += 1
            elif s == -2:
                out.extend(src[i:])
                i = len(src)
            elif s == -3:
                out.append(src[i] * src[i + 1])
                i += 2
            elif s == -4:
                a, b = spec[j + 1], spec[j + 2]
                a = src[i] // b if a == -1 else a
                b = src[i] // a if b == -1 else b
                if a * b != src[i]:
                    raise ShapeError(f"Reshape: -4 splits {src[i]} into {a} x {b}")
                out.extend((a, b))
                i += 1
                j += 2
            else:
                raise ShapeError(f"Reshape: invalid code {s} in {tuple(spec)}")
            j += 1
    except IndexError:
        raise ShapeError(f"Reshape: {tuple(spec)} reads past input shape {src}") from None
    if infer_at is not None:
        rest = prod(out) or 1
        out[infer_at] = prod(src) // rest if rest else 0
    if prod(out) != prod(src):
        raise ShapeError(f"Reshape: cannot reshape {src} ({prod(src)} elements) to "
                         f"{tuple(out)} ({prod(out)} elements) with shape={tuple(spec)}")
    return tuple(out)


def _reshape_like_grad(c) -> list:
    return [c.sym.reshape_like(c.ograds[0], c.inputs[0])]


def _reshape_compute(shape_of):
    return lambda a, xs, ctx: [xs[0].reshape(shape_of(a, [xs[0].shape])[0])]


def _spec(a: Attrs) -> tuple[int, ...]:
    """The shape codes: ``shape``, or MXNet's deprecated ``target_shape`` (0 = inferred)."""
    target = a.get("target_shape") or ()  # passes build Reshape nodes with shape only
    if a["shape"] or not target:
        return tuple(a["shape"])
    spec = tuple(-1 if d == 0 else d for d in target)
    return (0,) + spec[1:] if a.get("keep_highest") else spec


def _reshape_shape(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    """Forward once the input is fully known. Backward, as MXNet's partial shapes: a fully
    known output decides the one unknown (0) dimension of the input from the element count."""
    src, dst = ins[0], outs[0]
    if src is not None and 0 not in src:
        return ins, [mx_reshape(tuple(src), _spec(a), a["reverse"])]
    if src is not None and dst is not None and 0 not in dst and list(src).count(0) == 1:
        known = prod(d for d in src if d)
        if known and prod(dst) % known == 0:
            return [tuple(d or prod(dst) // known for d in src)], outs
    return ins, outs


register(OpDef(
    "Reshape", {"shape": Param("shape", ()), "reverse": Param("bool", False),
                "target_shape": Param("shape", (), doc="deprecated form of shape: one 0 is "
                                      "the inferred dimension (used when shape is empty)"),
                "keep_highest": Param("bool", False, doc="with target_shape: keep the first "
                                      "dimension of the input")}, ("data",),
    _reshape_shape,
    _reshape_compute(lambda a, s: [mx_reshape(s[0], _spec(a), a["reverse"])]),
    _reshape_like_grad, INJECTIVE, view=True, lowering="copy", partial_shapes=True,
    doc="Reshape with MXNet's codes 0, -1, -2, -3, -4."))
alias("reshape", "Reshape")

register(OpDef(
    "Flatten", {}, ("data",),
    forward_shape(lambda a, s: [(s[0][0], prod(s[0][1:]))]),
    _reshape_compute(lambda a, s: [(s[0][0], prod(s[0][1:]))]),
    _reshape_like_grad, INJECTIVE, view=True, lowering="copy",
    doc="Collapse all axes but the first."))
alias("flatten", "Flatten")


def lhs_type(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    """Dtype rule of ops that only read rhs's shape: the output is lhs's dtype, rhs is free."""
    t = ins[0] if ins[0] is not None else outs[0]
    return ([t, ins[1]], [t]) if t is not None else (ins, outs)


def reshape_like_target(a: Attrs, lhs: Shape, rhs: Shape) -> Shape:
    """lhs[:lhs_begin] + rhs[rhs_begin:rhs_end] + lhs[lhs_end:] (None: the whole shape)."""
    def bounds(shape: Shape, begin: Optional[int], end: Optional[int]) -> tuple[int, int]:
        n = len(shape)
        b, e = (0 if begin is None else begin), (n if end is None else end)
        b, e = b + n if b < 0 else b, e + n if e < 0 else e
        if not 0 <= b <= e <= n:
            raise ShapeError(f"reshape_like: range [{begin}, {end}) is outside {fmt(shape)}")
        return b, e
    lb, le = bounds(lhs, a["lhs_begin"], a["lhs_end"])
    rb, re_ = bounds(rhs, a["rhs_begin"], a["rhs_end"])
    out = tuple(lhs[:lb]) + tuple(rhs[rb:re_]) + tuple(lhs[le:])
    if prod(out) != prod(lhs):
        raise ShapeError(f"reshape_like: cannot reshape {fmt(lhs)} to {fmt(out)} (from rhs "
                         f"{fmt(rhs)}): sizes differ")
    return out


def _reshape_like_shape(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    lhs, rhs = ins
    whole = all(a[k] is None for k in RESHAPE_LIKE_PARAMS)
    if whole and lhs is None and rhs is not None:
        return ins, [rhs]
    if lhs is None or rhs is None:
        return ins, outs
    return ins, [reshape_like_target(a, lhs, rhs)]


RESHAPE_LIKE_PARAMS = {k: Param("int?", None) for k in
                       ("lhs_begin", "lhs_end", "rhs_begin", "rhs_end")}
register(OpDef(
    "reshape_like", RESHAPE_LIKE_PARAMS, ("lhs", "rhs"), _reshape_like_shape,
    lambda a, xs, ctx: [xs[0].reshape(reshape_like_target(a, xs[0].shape, xs[1].shape))],
    lambda c: [c.sym.reshape_like(c.ograds[0], c.inputs[0]), None], INJECTIVE, view=True,
    lowering="copy", infer_type=lhs_type,
    doc="lhs reshaped to rhs's shape, or only lhs[lhs_begin:lhs_end] to "
        "rhs[rhs_begin:rhs_end]."))


def _identity(name: str, grad: object, doc: str, params: Optional[dict] = None) -> None:
    register(OpDef(name, params or {}, ("data",), same_shape,
                   lambda a, xs, ctx: [xs[0].copy()], grad, INJECTIVE, doc=doc,
                   lowering="copy"))


_identity("identity", lambda c: [c.ograds[0]], "Copy of the input.")
register(OpDef(
    "_identity_with_attr_like_rhs", {}, ("lhs", "rhs"),
    lambda a, ins, outs: same_shape(a, [ins[0], ins[1]], outs),
    lambda a, xs, ctx: [xs[0].copy()], lambda c: [c.ograds[0], None], INJECTIVE,
    infer_type=lambda a, ins, outs: (ins, [ins[0]] if ins[0] is not None else outs),
    lowering="copy", doc="A copy of lhs whose shape is also rhs's (a shape constraint)."))
alias("_copy", "identity")
_identity("BlockGrad", lambda c: [None], "Identity forward; stops gradients.")
alias("stop_gradient", "BlockGrad")
_identity("MakeLoss", lambda c: [_make_loss_grad(c)], "Identity forward; its gradient is "
          "grad_scale (divided by the batch size for normalization='batch'), ignoring head "
          "gradients.", {"grad_scale": Param("float", 1.0),
                         "normalization": Param("str", "null", ("null", "batch", "valid")),
                         "valid_thresh": Param("float", 0.0)})
alias("make_loss", "MakeLoss")  # MXNet's make_loss: MakeLoss with its defaults (gradient ones)


def _make_loss_grad(c) -> object:
    x = c.inputs[0]
    g = c.sym.ones_like(x) * c.attrs["grad_scale"]
    if c.attrs["normalization"] == "batch":
        g = c.sym._scale_by_batch(g)
    elif c.attrs["normalization"] == "valid":
        g = c.sym._scale_by_valid(g, x, thresh=c.attrs["valid_thresh"])
    return g


register(OpDef(
    "_scale_by_batch", {}, ("data",), same_shape,
    lambda a, xs, ctx: [xs[0] / xs[0].shape[0]],
    lambda c: [c.sym._scale_by_batch(c.ograds[0])], INJECTIVE, lowering="scale_by_batch",
    doc="Divide by the size of axis 0 (MakeLoss normalization='batch')."))
def _is_valid(a: Attrs) -> E.Expr:
    """The entries of ``ref`` that MakeLoss(normalization='valid') counts: above thresh."""
    return E.call("gt", E.inp(0), a["thresh"])


def _scale_by_valid(a: Attrs, xs: list, ctx: RunCtx) -> list:
    valid = E.evaluate([_is_valid(a)], [xs[1]], xs[1].dtype)[0]
    return [xs[0] / max(1, int(np.count_nonzero(valid)))]


register(OpDef(
    "_scale_by_valid", {"thresh": Param("float", 0.0)}, ("data", "ref"),
    lambda a, ins, outs: (ins, [ins[0]] if ins[0] is not None else outs), _scale_by_valid,
    NOT_DIFFERENTIABLE, REDUCE, lowering=("scale_by_count", {"counts": _is_valid}),
    doc="Divide by the number of ref entries above thresh (MakeLoss normalization='valid')."))

for _name, _fill in (("zeros_like", 0.0), ("ones_like", 1.0)):
    register(OpDef(_name, {}, ("data",), same_shape,
                   lambda a, xs, ctx, f=_fill: [np.full_like(xs[0], f)],
                   NOT_DIFFERENTIABLE, INJECTIVE, lowering=("fill", {"value": _fill}),
                   doc=f"Array of {_fill} shaped like data."))


# -- reductions --------------------------------------------------------------------------------

REDUCE_PARAMS = {"axis": Param("axis", None), "keepdims": Param("bool", False),
                 "exclude": Param("bool", False)}


def reduce_axes(a: Attrs, ndim: int) -> tuple[int, ...]:
    """The axes a reduction with attrs ``a`` reduces over an array of ``ndim`` axes."""
    axis = a["axis"]
    if axis is None or axis == ():
        axes = tuple(range(ndim))
    else:
        axes = tuple(sorted({norm_axis(ax, ndim) for ax in axis}))
    if a["exclude"]:
        axes = tuple(i for i in range(ndim) if i not in axes)
    return axes


def reduced_shape(a: Attrs, shape: Shape) -> Shape:
    axes = reduce_axes(a, len(shape))
    if a["keepdims"]:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    # MXNet 1.x: reducing every axis gives shape (1,), not a 0-d array
    return tuple(d for i, d in enumerate(shape) if i not in axes) or (1,)


def reduce_compute(fn):
    def compute(a: Attrs, xs: list, ctx: RunCtx) -> list:
        x = xs[0]
        out = np.asarray(fn(x, axis=reduce_axes(a, x.ndim), keepdims=a["keepdims"]),
                         dtype=x.dtype)
        return [out.reshape(reduced_shape(a, x.shape))]
    return compute


def unreduce(c, g, mean: bool = False):
    a = c.attrs
    return c.sym._reduce_backward(g, c.inputs[0], axis=a["axis"], keepdims=a["keepdims"],
                                  exclude=a["exclude"], mean=mean)


def _extreme_grad(c) -> list:
    x = c.inputs[0]
    hit = c.sym.broadcast_equal(x, unreduce(c, c.outputs[0]))
    return [unreduce(c, c.ograds[0]) * hit]


REDUCTIONS = {
    "sum": (np.sum, lambda c: [unreduce(c, c.ograds[0])]),
    "mean": (np.mean, lambda c: [unreduce(c, c.ograds[0], mean=True)]),
    "max": (np.max, _extreme_grad),
    "min": (np.min, _extreme_grad),
}


def _extreme_shape(name: str) -> Callable:
    """max/min's shape; ShapeError over an empty axis (no identity to give there)."""
    def rule(a: Attrs, s: list) -> list:
        if any(s[0][k] == 0 for k in reduce_axes(a, len(s[0]))):
            raise ShapeError(f"{name} over an empty axis of {fmt(s[0])}: no identity")
        return [reduced_shape(a, s[0])]
    return rule


for _name, (_fn, _grad) in REDUCTIONS.items():
    register(OpDef(_name, REDUCE_PARAMS, ("data",),
                   forward_shape(_extreme_shape(_name) if _grad is _extreme_grad else
                                 lambda a, s: [reduced_shape(a, s[0])]),
                   reduce_compute(_fn), _grad, REDUCE, lowering=("reduce", {"kind": _name}),
                   doc=f"{_name} over axis (None: all), keepdims, exclude."))
alias("sum_axis", "sum")


def _reduce_backward_compute(a: Attrs, xs: list, ctx: RunCtx) -> list:
    g, x = xs
    axes = reduce_axes(a, x.ndim)
    kept = tuple(1 if i in axes else d for i, d in enumerate(x.shape))
    out = np.broadcast_to(g.reshape(kept), x.shape).astype(g.dtype)
    if a["mean"]:
        out = out / max(1, prod(x.shape[i] for i in axes))
    return [out.astype(g.dtype, copy=False)]


register(OpDef(
    "_reduce_backward", {**REDUCE_PARAMS, "mean": Param("bool", False)}, ("ograd", "data"),
    lambda a, ins, outs: (ins, [ins[1]] if ins[1] is not None else outs),
    _reduce_backward_compute,
    lambda c: [_reduce_again(c), None], BROADCAST, lowering="reduce_backward",
    doc="Broadcast a reduction's output gradient back over the reduced axes (/count if mean)."))


def _reduce_again(c):
    a = c.attrs
    op = c.sym.mean if a["mean"] else c.sym.sum
    return op(c.ograds[0], axis=a["axis"], keepdims=a["keepdims"], exclude=a["exclude"])


# -- broadcasting helpers -------------------------------------------------------------------------

def _sum_to_shape(g: np.ndarray, shape: Shape) -> np.ndarray:
    lead = g.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(lead + i for i, d in enumerate(shape)
                                      if d == 1 and g.shape[lead + i] != 1)
    return g.sum(axis=axes, keepdims=True).reshape(shape) if axes else g.reshape(shape)


register(OpDef(
    "_broadcast_backward", {}, ("ograd", "like"),
    lambda a, ins, outs: (ins, [ins[1]] if ins[1] is not None else outs),
    lambda a, xs, ctx: [_sum_to_shape(xs[0], xs[1].shape).astype(xs[0].dtype, copy=False)],
    lambda c: [c.sym.broadcast_like(c.ograds[0], c.inputs[0]), None], REDUCE,
    lowering="sum_to_shape",
    doc="Sum a broadcast result's gradient back to the shape of `like`."))


def _broadcast_like_shape(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    """rhs's shape; with ``lhs_axes``/``rhs_axes``, lhs's shape with each lhs axis (of size 1)
    taking the size of the paired rhs axis (MXNet's pairing)."""
    lhs, rhs = ins
    if lhs is None or rhs is None:
        return ins, outs
    if a["lhs_axes"] is None or a["rhs_axes"] is None:  # (MXNet: either one unset)
        if broadcast_shapes([lhs, rhs]) != tuple(rhs):
            raise ShapeError(f"cannot broadcast {fmt(lhs)} to {fmt(rhs)}")
        return ins, [rhs]
    if not a["lhs_axes"] or not a["rhs_axes"]:
        raise ShapeError(f"lhs_axes {a['lhs_axes']} and rhs_axes {a['rhs_axes']}: an empty "
                         f"axes tuple is not allowed (leave both unset to broadcast all)")
    la = norm_axes(a["lhs_axes"], len(lhs), "lhs_axes")
    ra = norm_axes(a["rhs_axes"], len(rhs), "rhs_axes")
    if len(la) != len(ra):
        raise ShapeError(f"lhs_axes {a['lhs_axes']} and rhs_axes {a['rhs_axes']} pair up "
                         f"axes: they need one length")
    out = list(lhs)
    for i, j in zip(la, ra):
        if lhs[i] not in (1, rhs[j]):
            raise ShapeError(f"lhs axis {i} of {fmt(lhs)} has size {lhs[i]}, neither 1 nor "
                             f"rhs axis {j}'s {rhs[j]}")
        out[i] = rhs[j]
    return ins, [tuple(out)]


register(OpDef(
    "broadcast_like", {
        "lhs_axes": Param("axis", None, doc="axes of lhs (of size 1) to broadcast; None: all"),
        "rhs_axes": Param("axis", None, doc="the rhs axes whose sizes they take, paired")},
    ("lhs", "rhs"), _broadcast_like_shape,
    lambda a, xs, ctx: [np.broadcast_to(
        xs[0], _broadcast_like_shape(a, [xs[0].shape, xs[1].shape], [None])[1][0]).copy()],
    lambda c: [c.sym._broadcast_backward(c.ograds[0], c.inputs[0]), None], BROADCAST,
    lowering="broadcast_to", infer_type=lhs_type,
    doc="lhs broadcast to the shape of rhs (only on lhs_axes, to the sizes of the paired "
        "rhs_axes, when given)."))


# -- dot ----------------------------------------------------------------------------------------

def product_grad(c, dot) -> list:
    """Gradients of a (batched) matrix product ``dot`` with transpose_a/transpose_b attrs."""
    ta, tb = c.attrs["transpose_a"], c.attrs["transpose_b"]
    a, b, dy = c.inputs[0], c.inputs[1], c.ograds[0]
    # Written for 2-D operands; 1-D operands go through the same rules after reshape_like.
    da = dot(b, dy, transpose_a=tb, transpose_b=True) if ta else \
        dot(dy, b, transpose_a=False, transpose_b=not tb)
    db = dot(dy, a, transpose_a=True, transpose_b=ta) if tb else \
        dot(a, dy, transpose_a=not ta, transpose_b=False)
    return [da, db]


# dot itself (N-D, MXNet's semantics) is in ops/dot.py.
