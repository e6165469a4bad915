"""Elementwise, broadcast and scalar arithmetic; unary math; Activation; clip; add_n.

Each op is a scalar formula plus a gradient built from other ops. Gradients here are written
for equal shapes; the gradient pass sums a broadcast input's gradient back to its shape.
"""
from __future__ import annotations

import math
from typing import Callable

from ...core import expr as E
from ...core.attrs import Param
from ...core.registry import BROADCAST, NOT_DIFFERENTIABLE, alias
from ._util import SCALAR, broadcast_shape, check_attr, checked, elementwise, same_shape

# name: (formula of x, gradient of (c, x, y, dy))
UNARY: dict[str, tuple[Callable, Callable]] = {
    "negative": (lambda x: -x, lambda c, x, y, dy: -dy),
    "exp": (E.exp, lambda c, x, y, dy: dy * y),
    "log": (E.log, lambda c, x, y, dy: dy / x),
    "sqrt": (lambda x: E.call("sqrt", x), lambda c, x, y, dy: dy / (y * 2.0)),
    "rsqrt": (lambda x: 1.0 / E.call("sqrt", x), lambda c, x, y, dy: dy * (-0.5) * y / x),
    "square": (lambda x: x * x, lambda c, x, y, dy: dy * x * 2.0),
    "reciprocal": (lambda x: 1.0 / x, lambda c, x, y, dy: -dy * y * y),
    "abs": (lambda x: E.call("abs", x), lambda c, x, y, dy: dy * c.sym.sign(x)),
    "tanh": (lambda x: E.call("tanh", x), lambda c, x, y, dy: dy * (1.0 - y * y)),
    "sigmoid": (lambda x: 1.0 / (1.0 + E.exp(-x)), lambda c, x, y, dy: dy * y * (1.0 - y)),
    "relu": (lambda x: E.call("max", x, 0.0), lambda c, x, y, dy: dy * (y > 0.0)),
    # log(1 + e^x) written so that large |x| neither overflows nor loses precision.
    "softrelu": (lambda x: E.call("max", x, 0.0) + E.call("log1p", E.exp(-E.call("abs", x))),
                 lambda c, x, y, dy: dy * c.sym.sigmoid(x)),
    "softsign": (lambda x: x / (1.0 + E.call("abs", x)),
                 lambda c, x, y, dy: dy / c.sym.square(1.0 + abs(x))),
    "log1p": (lambda x: E.call("log1p", x), lambda c, x, y, dy: dy / (x + 1.0)),
    "expm1": (lambda x: E.exp(x) - 1.0, lambda c, x, y, dy: dy * (y + 1.0)),
}

ACT_TYPES = ("relu", "sigmoid", "tanh", "softrelu", "softsign")
for _name, (_f, _g) in UNARY.items():
    elementwise(_name, lambda attrs, x, f=_f: f(x),
                lambda c, g=_g: [g(c, c.inputs[0], c.outputs[0], c.ograds[0])],
                doc=f"Elementwise {_name}.", activation=_name if _name in ACT_TYPES else None)

elementwise("sign", lambda attrs, x: E.call("sign", x), NOT_DIFFERENTIABLE,
            doc="Elementwise sign; its gradient is zero.")

elementwise(
    "Activation", lambda attrs, x: UNARY[attrs["act_type"]][0](x),
    lambda c: [UNARY[c.attrs["act_type"]][1](c, c.inputs[0], c.outputs[0], c.ograds[0])],
    params={"act_type": Param("str", choices=ACT_TYPES)},
    extra={"monitor_inputs": "input"},  # MXNet's monitor calls its input act_input0
    activation=lambda a: a["act_type"],
    doc="Activation(act_type=relu|sigmoid|tanh|softrelu|softsign).")

elementwise(
    "clip", lambda a, x: E.call("min", E.call("max", x, a["a_min"]), a["a_max"]),
    lambda c: [c.ograds[0] * (c.inputs[0] >= c.attrs["a_min"]) * (c.inputs[0] <= c.attrs["a_max"])],
    params={"a_min": Param("float"), "a_max": Param("float")},
    # a_min > a_max has no meaning (numpy and MXNet disagree on the result): refused.
    shape_rule=checked(same_shape, lambda a: check_attr(
        not a["a_min"] > a["a_max"], "a_min", a["a_min"], f"exceeds a_max={a['a_max']}")),
    doc="Clip values into [a_min, a_max].")

# name: (formula of a, b; gradient of (c, a, b, y, dy) -> [da, db])
BINARY: dict[str, tuple[Callable, Callable]] = {
    "add": (lambda a, b: a + b, lambda c, a, b, y, dy: [dy, dy]),
    "sub": (lambda a, b: a - b, lambda c, a, b, y, dy: [dy, -dy]),
    "mul": (lambda a, b: a * b, lambda c, a, b, y, dy: [dy * b, dy * a]),
    "div": (lambda a, b: a / b, lambda c, a, b, y, dy: [dy / b, -dy * y / b]),
    "power": (lambda a, b: a ** b,
              lambda c, a, b, y, dy: [dy * b * a ** (b - 1.0), dy * y * c.sym.log(a)]),
    "maximum": (lambda a, b: E.call("max", a, b),
                lambda c, a, b, y, dy: [dy * (a >= b), dy * (a < b)]),
    "minimum": (lambda a, b: E.call("min", a, b),
                lambda c, a, b, y, dy: [dy * (a <= b), dy * (a > b)]),
}
COMPARE: dict[str, str] = {"equal": "eq", "not_equal": "ne", "greater": "gt",
                           "greater_equal": "ge", "lesser": "lt", "lesser_equal": "le"}


def _binary_grad(g: Callable) -> Callable:
    return lambda c: g(c, c.inputs[0], c.inputs[1], c.outputs[0], c.ograds[0])


for _name, (_f, _g) in BINARY.items():
    elementwise(f"broadcast_{_name}", lambda attrs, a, b, f=_f: f(a, b), _binary_grad(_g),
                inputs=("lhs", "rhs"), pattern=BROADCAST, shape_rule=broadcast_shape,
                doc=f"{_name} with numpy broadcasting.")
for _name in ("add", "sub", "mul", "div"):
    elementwise(f"elemwise_{_name}", lambda attrs, a, b, f=BINARY[_name][0]: f(a, b),
                _binary_grad(BINARY[_name][1]), inputs=("lhs", "rhs"),
                doc=f"{_name} of two arrays of one shape.")
for _name in ("power", "maximum", "minimum"):
    elementwise(f"_{_name}", lambda attrs, a, b, f=BINARY[_name][0]: f(a, b),
                _binary_grad(BINARY[_name][1]), inputs=("lhs", "rhs"),
                doc=f"{_name} of two arrays of one shape.")
for _name, _prim in COMPARE.items():
    elementwise(f"broadcast_{_name}", lambda attrs, a, b, p=_prim: E.call(p, a, b),
                NOT_DIFFERENTIABLE, inputs=("lhs", "rhs"), pattern=BROADCAST,
                shape_rule=broadcast_shape, doc=f"1 where lhs {_prim} rhs, else 0.")
    elementwise(f"_{_name}", lambda attrs, a, b, p=_prim: E.call(p, a, b),
                NOT_DIFFERENTIABLE, inputs=("lhs", "rhs"), doc=f"1 where lhs {_prim} rhs.")
    elementwise(f"_{_name}_scalar", lambda attrs, x, p=_prim: E.call(p, x, attrs["scalar"]),
                NOT_DIFFERENTIABLE, params=SCALAR, doc=f"1 where data {_prim} scalar.")

# name: (formula of x, s; gradient of (c, x, s, y, dy))
SCALAR_OPS: dict[str, tuple[Callable, Callable]] = {
    "_plus_scalar": (lambda x, s: x + s, lambda c, x, s, y, dy: dy),
    "_minus_scalar": (lambda x, s: x - s, lambda c, x, s, y, dy: dy),
    "_rminus_scalar": (lambda x, s: s - x, lambda c, x, s, y, dy: -dy),
    "_mul_scalar": (lambda x, s: x * s, lambda c, x, s, y, dy: dy * s),
    "_div_scalar": (lambda x, s: x / s, lambda c, x, s, y, dy: dy / s),
    "_rdiv_scalar": (lambda x, s: s / x, lambda c, x, s, y, dy: -dy * y / x),
    "_power_scalar": (lambda x, s: x ** s, lambda c, x, s, y, dy: dy * s * x ** (s - 1.0)),
    "_rpower_scalar": (lambda x, s: s ** x, lambda c, x, s, y, dy: dy * y * math.log(s)),
    "_maximum_scalar": (lambda x, s: E.call("max", x, s), lambda c, x, s, y, dy: dy * (x >= s)),
    "_minimum_scalar": (lambda x, s: E.call("min", x, s), lambda c, x, s, y, dy: dy * (x <= s)),
}


for _name, (_f, _g) in SCALAR_OPS.items():
    elementwise(_name, lambda attrs, x, f=_f: f(x, attrs["scalar"]),
                lambda c, g=_g: [g(c, c.inputs[0], c.attrs["scalar"], c.outputs[0], c.ograds[0])],
                params=SCALAR, doc=f"{_name[1:]}: array with a scalar.")


def _sum_formula(attrs: object, *xs: E.Expr) -> E.Expr:
    total = xs[0]
    for x in xs[1:]:
        total = total + x
    return total


elementwise("add_n", _sum_formula, lambda c: [c.ograds[0]] * len(c.inputs),
            inputs=lambda a: tuple(f"arg{i}" for i in range(a["num_args"])),
            params={"num_args": Param("int", doc="number of inputs")},
            variadic="num_args", doc="Sum of any number of arrays of one shape.")

alias("ElementWiseSum", "add_n")
alias("broadcast_plus", "broadcast_add")
alias("broadcast_minus", "broadcast_sub")
