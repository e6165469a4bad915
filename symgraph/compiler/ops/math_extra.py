"""Math ops of MXNet missing elsewhere: cumsum, hard_sigmoid, erfinv, the reduction aliases
max_axis / min_axis, and ``sg.sym.contrib``'s allclose and div_sqrt_dim.

hard_sigmoid and erfinv are elementwise formulas (``ops/_util.elementwise``: shape, dtype,
numpy, fusion and CUDA follow); cumsum and allclose have their own kernels
(``cuda/kernels_scan``); div_sqrt_dim is x / sqrt(x.shape[-1]), a formula whose constant
comes from the shape (``cuda/lowering_scan``).
"""
from __future__ import annotations

import math
from math import prod
from typing import Any

import numpy as np

from ...core import expr as E
from ...core.attrs import Attrs, Param
from ...core.base import ShapeError
from ...core.registry import (INJECTIVE, NOT_DIFFERENTIABLE, REDUCE, OpDef, RunCtx, alias,
                        register)
from ._util import elementwise, forward_shape, like_input, norm_axis, same_shape

alias("max_axis", "max")
alias("min_axis", "min")

# -- hard_sigmoid, erfinv --------------------------------------------------------------------------

HARD_SIGMOID = {"alpha": Param("float", 0.2, doc="slope"), "beta": Param("float", 0.5,
                                                                         doc="offset")}


def _hard_sigmoid(a: Attrs, x: E.Expr) -> E.Expr:
    return E.call("min", E.call("max", x * a["alpha"] + a["beta"], 0.0), 1.0)


def _hard_sigmoid_grad(c: Any) -> list:
    # alpha where alpha*x + beta is inside (0, 1), as MXNet's backward; 0 on the flat parts
    y, dy = c.outputs[0], c.ograds[0]
    return [dy * ((y > 0.0) * (y < 1.0)) * c.attrs["alpha"]]


elementwise("hard_sigmoid", _hard_sigmoid, _hard_sigmoid_grad, params=HARD_SIGMOID,
            doc="max(0, min(1, alpha * x + beta)); gradient alpha inside the ramp, else 0.")
elementwise("erfinv", lambda a, x: E.call("erfinv", x),
            lambda c: [c.ograds[0] * c.sym.exp(c.sym.square(c.outputs[0]))
                       * (math.sqrt(math.pi) / 2.0)],
            doc="Inverse error function on (-1, 1) (+-inf at +-1, NaN outside); gradient "
                "sqrt(pi)/2 * exp(erfinv(x)^2).")

# -- cumsum ---------------------------------------------------------------------------------------

CUMSUM_PARAMS = {"axis": Param("int?", None, doc="None: over the flattened input"),
                 "dtype": Param("dtype?", None, doc="output and accumulator dtype (default: "
                                                    "the input's)")}


def _cumsum_shape(a: Attrs, s: list) -> list:
    if a["axis"] is None:
        return [(prod(s[0]),)]
    norm_axis(a["axis"], len(s[0]))
    return [tuple(s[0])]


def _cumsum(a: Attrs, xs: list, ctx: RunCtx) -> list:
    x = xs[0]
    axis = None if a["axis"] is None else norm_axis(a["axis"], x.ndim)
    return [np.cumsum(x, axis=axis, dtype=a["dtype"] or x.dtype)]


def _cumsum_type(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    if a["dtype"] is not None:
        return ins, [np.dtype(a["dtype"])]
    return like_input(0)(a, ins, outs)


def _cumsum_grad(c: Any) -> list:
    """Each input feeds every later sum: the gradient is the reversed cumulative sum."""
    S, x, dy, axis = c.sym, c.inputs[0], c.ograds[0], c.attrs["axis"]
    ax = 0 if axis is None else axis
    g = S.reverse(S.cumsum(S.reverse(dy, axis=(ax,)), axis=ax), axis=(ax,))
    if axis is None:
        g = S.reshape_like(g, x)
    return [S._backward_Cast(g, x) if c.attrs["dtype"] is not None else g]


register(OpDef(
    "cumsum", CUMSUM_PARAMS, ("a",), forward_shape(_cumsum_shape), _cumsum, _cumsum_grad,
    REDUCE, infer_type=_cumsum_type,
    lowering=("scan", {"dtypes": ("float32", "float16", "bfloat16", "int8", "uint8", "int32",
                                  "int64")}),
    doc="Cumulative sum along axis (None: of the flattened input), in dtype (default: the "
        "input's)."))

# -- allclose, div_sqrt_dim ------------------------------------------------------------------------

ALLCLOSE_PARAMS = {"rtol": Param("float", 1e-5, doc="Relative tolerance."),
                   "atol": Param("float", 1e-8, doc="Absolute tolerance."),
                   "equal_nan": Param("bool", True, doc="NaNs in the same places count as equal.")}


def _allclose_shape(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    _, (shape,) = same_shape(a, ins, [None])
    return ([shape, shape] if shape is not None else ins), [()]


def _allclose(a: Attrs, xs: list, ctx: RunCtx) -> list:
    lhs, rhs = (np.asarray(v, np.float64) for v in xs)
    ok = np.allclose(lhs, rhs, rtol=a["rtol"], atol=a["atol"], equal_nan=a["equal_nan"])
    return [np.array(ok, dtype=np.uint8)]


register(OpDef(
    "_contrib_allclose", ALLCLOSE_PARAMS, ("a", "b"), _allclose_shape, _allclose,
    NOT_DIFFERENTIABLE, REDUCE,
    infer_type=lambda a, ins, outs: (ins, [np.dtype(np.uint8)]),
    lowering=("allclose", {"dtypes": ("float32", "float16", "bfloat16", "uint8")}),
    doc="uint8 scalar: 1 when |a - b| <= atol + rtol * |b| everywhere (NaNs equal when "
        "equal_nan) (sg.sym.contrib.allclose)."))


def div_sqrt_dim_scale(shape: tuple) -> float:
    """1 / sqrt of the last dimension of ``shape``."""
    if not shape:
        raise ShapeError("div_sqrt_dim needs at least a 1-D input")
    return 1.0 / math.sqrt(shape[-1])


register(OpDef(
    "_contrib_div_sqrt_dim", {}, ("data",), same_shape,
    lambda a, xs, ctx: [(xs[0] * div_sqrt_dim_scale(xs[0].shape)).astype(xs[0].dtype)],
    lambda c: [c.sym._contrib_div_sqrt_dim(c.ograds[0])], INJECTIVE,
    lowering="div_sqrt_dim",
    doc="data / sqrt(data.shape[-1]) (attention's scaling) (sg.sym.contrib.div_sqrt_dim)."))
