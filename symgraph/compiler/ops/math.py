"""Trigonometric, hyperbolic, logarithmic, root and rounding functions; hypot, mod, smooth_l1.

Same shape as ``elemwise.py``: one row per op, its scalar formula beside its gradient, and
``elementwise`` derives shape, dtype, numpy and CUDA from the formula. Rounding functions are
piecewise constant: MXNet gives them a zero gradient, here they are NOT_DIFFERENTIABLE (which
autodiff turns into zeros).
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np

from ...core import expr as E
from ...core.registry import BROADCAST, NO_GRADIENT, NOT_DIFFERENTIABLE
from ._util import SCALAR, broadcast_shape, elementwise

LN10, LN2 = math.log(10.0), math.log(2.0)

# name: (formula of x, gradient of (c, x, y, dy))
UNARY_MATH: dict[str, tuple[Callable, Callable]] = {
    "sin": (lambda x: E.call("sin", x), lambda c, x, y, dy: dy * c.sym.cos(x)),
    "cos": (lambda x: E.call("cos", x), lambda c, x, y, dy: -dy * c.sym.sin(x)),
    "tan": (lambda x: E.call("tan", x), lambda c, x, y, dy: dy * (y * y + 1.0)),
    "arcsin": (lambda x: E.call("asin", x),
               lambda c, x, y, dy: dy * c.sym.rsqrt(1.0 - x * x)),
    "arccos": (lambda x: E.call("acos", x),
               lambda c, x, y, dy: -dy * c.sym.rsqrt(1.0 - x * x)),
    "arctan": (lambda x: E.call("atan", x), lambda c, x, y, dy: dy / (x * x + 1.0)),
    "sinh": (lambda x: E.call("sinh", x), lambda c, x, y, dy: dy * c.sym.cosh(x)),
    "cosh": (lambda x: E.call("cosh", x), lambda c, x, y, dy: dy * c.sym.sinh(x)),
    "arcsinh": (lambda x: E.call("asinh", x),
                lambda c, x, y, dy: dy * c.sym.rsqrt(x * x + 1.0)),
    "arccosh": (lambda x: E.call("acosh", x),
                lambda c, x, y, dy: dy * c.sym.rsqrt(x * x - 1.0)),
    "arctanh": (lambda x: E.call("atanh", x), lambda c, x, y, dy: dy / (1.0 - x * x)),
    "degrees": (lambda x: x * (180.0 / math.pi), lambda c, x, y, dy: dy * (180.0 / math.pi)),
    "radians": (lambda x: x * (math.pi / 180.0), lambda c, x, y, dy: dy * (math.pi / 180.0)),
    "log10": (lambda x: E.call("log10", x), lambda c, x, y, dy: dy / (x * LN10)),
    "log2": (lambda x: E.call("log2", x), lambda c, x, y, dy: dy / (x * LN2)),
    "cbrt": (lambda x: E.call("cbrt", x), lambda c, x, y, dy: dy / (y * y * 3.0)),
    # x^(-1/3): derivative -x^(-4/3)/3 = -y / (3x)
    "rcbrt": (lambda x: 1.0 / E.call("cbrt", x), lambda c, x, y, dy: -dy * y / (x * 3.0)),
    "gamma": (lambda x: E.call("gamma", x), lambda c, x, y, dy: dy * y * c.sym._digamma(x)),
    "gammaln": (lambda x: E.call("lgamma", x), lambda c, x, y, dy: dy * c.sym._digamma(x)),
    # its derivative (trigamma) is not implemented: a second derivative of gamma raises
    "_digamma": (lambda x: E.call("digamma", x), NO_GRADIENT),
    "erf": (lambda x: E.call("erf", x),
            lambda c, x, y, dy: dy * c.sym.exp(-c.sym.square(x)) * (2.0 / math.sqrt(math.pi))),
}

for _name, (_f, _g) in UNARY_MATH.items():
    elementwise(_name, lambda attrs, x, f=_f: f(x),
                _g if _g == NO_GRADIENT else
                lambda c, g=_g: [g(c, c.inputs[0], c.outputs[0], c.ograds[0])],
                doc=f"Elementwise {_name} (MXNet's {_name}).")


def _rint(x: E.Expr) -> E.Expr:
    # MXNet's rint takes the floor for a fraction of exactly one half (-2.5 -> -3, 2.5 -> 2),
    # neither C's rintf nor numpy's half-to-even.
    down = E.call("floor", x)
    return E.where(E.call("le", x - down, 0.5), down, E.call("ceil", x))


# MXNet's name -> formula; `fix` rounds towards zero like `trunc`, `round` halves away from 0.
ROUNDING: dict[str, Callable] = {
    "floor": lambda x: E.call("floor", x), "ceil": lambda x: E.call("ceil", x), "rint": _rint,
    "trunc": lambda x: E.call("trunc", x), "fix": lambda x: E.call("trunc", x),
    "round": lambda x: E.call("round", x)}
for _name, _f in ROUNDING.items():
    elementwise(_name, lambda attrs, x, f=_f: f(x), NOT_DIFFERENTIABLE,
                doc=f"Elementwise {_name} as MXNet rounds; zero gradient.")


def _smooth_l1(attrs: object, x: E.Expr) -> E.Expr:
    s2 = attrs["scalar"] ** 2
    ax = E.call("abs", x)
    return E.where(E.call("lt", ax, 1.0 / s2), 0.5 * s2 * x * x, ax - 0.5 / s2)


def _smooth_l1_grad(c) -> list:
    s2 = c.attrs["scalar"] ** 2
    x, dy = c.inputs[0], c.ograds[0]
    inside = abs(x) < 1.0 / s2
    return [dy * (inside * x * s2 + (1.0 - inside) * c.sym.sign(x))]


elementwise("smooth_l1", _smooth_l1, _smooth_l1_grad, params=SCALAR,
            doc="0.5 (sigma x)^2 where |x| < 1/sigma^2, else |x| - 0.5/sigma^2 "
                "(sigma = scalar).")


def _hypot_grad(c) -> list:
    a, b, y, dy = c.inputs[0], c.inputs[1], c.outputs[0], c.ograds[0]
    return [dy * a / y, dy * b / y]


def _integer(c) -> bool:
    """Integer operands: MXNet's mod gradients are 0 there (its ``mod_grad`` is 1 only for
    floating types), not the float formulas truncated."""
    t = None if c.types is None else c.types.dtype(c.inputs[0].outputs_[0])
    return t is not None and np.dtype(t).kind in "iub"


def _mod_grad(c) -> list:
    a, b, dy = c.inputs[0], c.inputs[1], c.ograds[0]
    if _integer(c):
        return [c.sym.zeros_like(a), c.sym.zeros_like(b)]
    return [dy, -dy * c.sym.floor(a / b)]


# name: (primitive, gradient); each gets a same-shape `_name`, `broadcast_name` and scalar forms
BINARY_MATH = {"hypot": ("hypot", _hypot_grad), "mod": ("mod", _mod_grad)}
for _name, (_prim, _g) in BINARY_MATH.items():
    elementwise(f"_{_name}", lambda attrs, a, b, p=_prim: E.call(p, a, b), _g,
                inputs=("lhs", "rhs"), doc=f"{_name} of two arrays of one shape.")
    elementwise(f"broadcast_{_name}", lambda attrs, a, b, p=_prim: E.call(p, a, b), _g,
                inputs=("lhs", "rhs"), pattern=BROADCAST, shape_rule=broadcast_shape,
                doc=f"{_name} with numpy broadcasting.")

elementwise("_hypot_scalar", lambda a, x: E.call("hypot", x, a["scalar"]),
            lambda c: [c.ograds[0] * c.inputs[0] / c.outputs[0]], params=SCALAR,
            doc="hypot(data, scalar).")
elementwise("_mod_scalar", lambda a, x: E.call("mod", x, a["scalar"]),
            lambda c: [c.sym.zeros_like(c.inputs[0]) if _integer(c) else c.ograds[0]],
            params=SCALAR, doc="data mod scalar (divisor's sign).")
elementwise("_rmod_scalar", lambda a, x: E.call("mod", a["scalar"], x),
            lambda c: [c.sym.zeros_like(c.inputs[0]) if _integer(c) else
                       -c.ograds[0] * c.sym.floor(c.attrs["scalar"] / c.inputs[0])],
            params=SCALAR, doc="scalar mod data (divisor's sign).")


def _truth(x: E.Expr) -> E.Expr:
    return E.call("ne", x, 0.0)


# MXNet's logical ops: 1 or 0 in the input dtype; piecewise constant, so no gradient flows.
LOGICAL: dict[str, Callable[[E.Expr, E.Expr], E.Expr]] = {
    "logical_and": lambda a, b: _truth(a) * _truth(b),
    "logical_or": lambda a, b: _truth(_truth(a) + _truth(b)),
    "logical_xor": lambda a, b: E.call("ne", _truth(a), _truth(b)),
}
for _name, _f in LOGICAL.items():
    elementwise(f"broadcast_{_name}", lambda attrs, a, b, f=_f: f(a, b), NOT_DIFFERENTIABLE,
                inputs=("lhs", "rhs"), pattern=BROADCAST, shape_rule=broadcast_shape,
                doc=f"{_name} of two arrays with numpy broadcasting (1 or 0).")
    elementwise(f"_{_name}_scalar", lambda attrs, x, f=_f: f(x, attrs["scalar"]),
                NOT_DIFFERENTIABLE, params=SCALAR, doc=f"{_name} of data and scalar (1 or 0).")
elementwise("logical_not", lambda attrs, x: E.call("eq", x, 0.0), NOT_DIFFERENTIABLE,
            doc="1 where data is 0, else 0.")
