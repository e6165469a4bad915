"""Helpers shared by op definitions: common shape rules and registration shortcuts."""
from __future__ import annotations

from typing import Any, Callable, Optional, Sequence

import numpy as np

from ...core.attrs import Attrs, Param
from ...core.base import AttrError, GraphError, ShapeError
from ...core.expr import Expr, evaluate, inp
from ...core.registry import ELEMWISE, OpDef, PartialShape, RunCtx, register  # noqa: F401

from ...core.types.shapes import (MAX_ELEMENTS, Shape, as_dim, as_shape, fmt,  # noqa: F401
                                    merge_dims)  # (the ops import them from here)


def norm_axis(axis: int, ndim: int, what: str = "axis") -> int:
    """``axis`` in ``[-ndim, ndim)`` as a non-negative index. Out of range is a ShapeError (the
    attribute conflicts with the input's rank) naming the attribute and the allowed range."""
    if not -ndim <= axis < ndim:
        allowed = f"allowed {-ndim}..{ndim - 1}" if ndim else "a 0-d input has no axes"
        raise ShapeError(f"{what}={axis} out of range for {ndim}-d input ({allowed})")
    return axis % ndim


def norm_axes(axes: Sequence[int], ndim: int, what: str = "axis") -> tuple[int, ...]:
    """Several axes normalised; a repeated axis is a ShapeError."""
    try:
        out = tuple(norm_axis(a, ndim, "axis") for a in axes)
    except ShapeError as exc:
        raise ShapeError(f"{what}={tuple(axes)}: {exc}") from None
    if len(set(out)) != len(out):
        raise ShapeError(f"{what}={tuple(axes)} names an axis twice")
    return out


def check_attr(ok: bool, key: str, value: object, rule: str) -> None:
    """AttrError ``key=value: rule`` unless ``ok`` (attribute ranges no parser checks)."""
    if not ok:
        raise AttrError(f"{key}={value!r}: {rule}")


def checked(rule: Callable, check: Callable[[Attrs], None]) -> Callable:
    """Shape rule ``rule`` preceded by ``check(attrs)``, which raises on attributes out of
    range (shape inference then names the node)."""
    def checked_rule(attrs: Attrs, ins: list, outs: list) -> tuple[list, list]:
        check(attrs)
        return rule(attrs, ins, outs)
    return checked_rule


def same_shape(attrs: Attrs, ins: list, outs: list) -> tuple[list, list]:
    """Every input and output has one shape (bidirectional; partial shapes are merged)."""
    known = [tuple(s) for s in list(ins) + list(outs) if s is not None]
    if not known:
        return ins, outs
    merged = known[0]
    if known.count(merged) == len(known):  # all equal (bind: every rule of a large graph)
        return [merged] * len(ins), [merged] * len(outs)
    for s in known[1:]:
        both = merge_dims(merged, s)
        if both is None:
            raise ShapeError(f"elementwise shapes differ: {fmt(merged)} vs {fmt(s)}")
        merged = both
    return [merged] * len(ins), [merged] * len(outs)


def like_input(index: int) -> Callable:
    """Shape (or dtype) rule: the single output has input ``index``'s shape."""
    def rule(attrs: Attrs, ins: list, outs: list) -> tuple[list, list]:
        return ins, [ins[index]] if ins[index] is not None else outs
    return rule


def broadcast_shapes(shapes: Sequence[Shape]) -> Shape:
    """numpy broadcasting of ``shapes``; ShapeError if they are incompatible."""
    if shapes and shapes.count(shapes[0]) == len(shapes):  # nothing to broadcast (most calls)
        return tuple(int(d) for d in shapes[0])
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        raise ShapeError(f"shapes {', '.join(fmt(s) for s in shapes)} do not broadcast") from None


def broadcast_shape(attrs: Attrs, ins: list, outs: list) -> tuple[list, list]:
    """numpy broadcasting. With partial shapes (0 = unknown) of one rank, an unknown dimension
    facing a known one other than 1 takes its size: the same-shape reading of MXNet's
    ``a + b``, the only one that decides anything."""
    if any(s is None for s in ins):
        return ins, outs
    if not any(0 in s for s in list(ins) + [o for o in outs if o is not None]):
        return ins, [broadcast_shapes(ins)]
    if len({len(s) for s in ins}) != 1:
        return ins, outs
    out = outs[0] if outs[0] is not None and len(outs[0]) == len(ins[0]) else (0,) * len(ins[0])
    dims = []
    for k, d in enumerate(out):
        sizes = {s[k] for s in ins} | {d}
        big = sizes - {0, 1}
        if len(big) > 1:
            raise ShapeError(f"shapes {', '.join(fmt(s) for s in ins)} do not broadcast")
        dims.append(big.pop() if big else (1 if 0 not in sizes else 0))
    filled = [tuple(b or o for b, o in zip(s, dims)) for s in ins]
    return filled, [tuple(dims)]


def broadcast_guess(attrs: Attrs, ins: list, outs: list) -> tuple[list, list]:
    """A broadcast op's last resort (``extra["guess_shape"]``): the one operand whose shape
    nothing decided takes the output's, or else the other operand's: how MXNet's ``a + b``
    (same-shape there; symgraph's ``+`` broadcasts) infers ``b``."""
    known = [s for s in ins if s is not None]
    if len(known) != len(ins) - 1 or not known:
        return ins, outs
    like = tuple(outs[0] if outs[0] is not None else known[0])
    return broadcast_shape(attrs, [like if s is None else s for s in ins], outs)


def forward_shape(fn: Callable[[Attrs, list], list]) -> Callable:
    """A shape rule that only runs forward, once every input shape is known."""
    def rule(attrs: Attrs, ins: list, outs: list) -> tuple[list, list]:
        if any(s is None for s in ins):
            return ins, outs
        return ins, [tuple(int(d) for d in s) for s in fn(attrs, ins)]
    return rule


def expr_compute(formula: Callable[..., Expr]) -> Callable:
    """numpy reference derived from a scalar formula ``formula(attrs, *input_exprs)``."""
    # The formula built once per attributes: a loop body runs the same nodes every step, and
    # a fresh formula has to be hashed again before evaluate finds its cached order.
    built: dict[tuple, Expr] = {}

    def compute(attrs: Attrs, xs: list, ctx: RunCtx) -> list:
        key = (attrs, len(xs))
        e = built.get(key)
        if e is None:
            if len(built) > 1024:
                built.clear()
            e = built[key] = formula(attrs, *(inp(i) for i in range(len(xs))))
        dtype = np.result_type(*xs)
        return evaluate([e], xs, dtype)
    return compute


def elementwise(name: str, formula: Callable[..., Expr], gradient: object,
                inputs: tuple[str, ...] = ("data",), params: Optional[dict] = None,
                pattern: str = ELEMWISE, shape_rule: Callable = same_shape,
                doc: str = "", variadic: Optional[str] = None,
                extra: Optional[dict] = None, activation: Any = None) -> OpDef:
    """Register an op given by a scalar formula; shape, dtype, numpy and CUDA derive from it."""
    return register(OpDef(
        name=name, params=params or {}, inputs=inputs, infer_shape=shape_rule,
        compute=expr_compute(formula), gradient=gradient, pattern=pattern, expr=formula,
        lowering="elementwise", partial_shapes=shape_rule in (same_shape, broadcast_shape),
        doc=doc, variadic=variadic, activation=activation,
        extra={**({"guess_shape": broadcast_guess} if shape_rule is broadcast_shape else {}),
               **(extra or {})}))


SCALAR = {"scalar": Param("float", 1.0, doc="the scalar operand")}


def known_input_shape(c: object, index: int) -> Shape:
    """The shape of input ``index`` of the node a gradient rule ``c`` differentiates, for
    gradients whose attributes hold it (gather_nd's scatter, im2col's col2im); GraphError
    when the graph's types do not know it."""
    node = c.node  # type: ignore[attr-defined]
    types = c.types  # type: ignore[attr-defined]
    shape = None if types is None else types.shape(node.inputs[index])
    if shape is None:
        raise GraphError(f"{node.name} ({node.op}): its gradient needs the shape of input "
                         f"{index}; give the input shapes (simple_bind, infer_shape)")
    return tuple(shape)
