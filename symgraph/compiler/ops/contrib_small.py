"""Small MXNet 1.9.1 ops: ``stack`` and the elementwise ``contrib`` ops ``quadratic``,
``gradientmultiplier``, ``round_ste`` and ``sign_ste``.

* ``stack``: arrays of one shape joined along a new ``axis``; a composition
  (``ops/_composite.py``) of ``expand_dims`` and ``Concat``.
* ``quadratic``: ``a x^2 + b x + c``. ``gradientmultiplier``: identity whose gradient is
  scaled by ``scalar``. ``round_ste``/``sign_ste``: round (half away from zero) and sign with
  the straight-through gradient (the head gradient passes unchanged), for quantisation-aware
  training. Each is one scalar formula, so it fuses and lowers as any elementwise op.

Example::

    y = sg.sym.stack(a, b, axis=1)                    # (N, 2, ...) from two (N, ...)
    q = sg.sym.contrib.round_ste(x * 127.0) / 127.0   # fake quantisation, gradient 1/127
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ...core import expr as E
from ...core.attrs import Attrs, Param
from ...core.base import ShapeError
from ...core.registry import INJECTIVE, OpDef, RunCtx, register
from ._composite import COMPOSED, composite_gradient, composite_unroll
from ._util import elementwise, fmt

elementwise("_contrib_quadratic",
            lambda a, x: x * x * a["a"] + x * a["b"] + a["c"],
            lambda c: [c.ograds[0] * (c.inputs[0] * (2.0 * c.attrs["a"]) + c.attrs["b"])],
            params={k: Param("float", 0.0, doc=f"Coefficient {k} of a x^2 + b x + c.")
                    for k in "abc"},
            doc="a * x^2 + b * x + c.")
elementwise("_contrib_gradientmultiplier", lambda a, x: x,
            lambda c: [c.ograds[0] * c.attrs["scalar"]],
            params={"scalar": Param("float", 1.0, doc="Factor of the gradient."),
                    "is_int": Param("bool", True, doc="MXNet's scalar type flag (unused).")},
            doc="Identity whose gradient is the head gradient times scalar.")
elementwise("_contrib_round_ste", lambda a, x: E.call("round", x), lambda c: [c.ograds[0]],
            doc="Round half away from zero; straight-through gradient.")
elementwise("_contrib_sign_ste", lambda a, x: E.call("sign", x), lambda c: [c.ograds[0]],
            doc="Sign; straight-through gradient.")

STACK_PARAMS = {"num_args": Param("int", doc="Number of inputs."),
                "axis": Param("int", 0, doc="The new axis in the result.")}


def _stack_axis(a: Attrs, ndim: int) -> int:
    if not -(ndim + 1) <= a["axis"] <= ndim:
        raise ShapeError(f"axis={a['axis']} out of range for stacking {ndim}-d inputs")
    return a["axis"] % (ndim + 1)


def _stack_shape(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    known = [tuple(s) for s in ins if s is not None]
    if not known:
        return ins, outs
    if any(s != known[0] for s in known):
        raise ShapeError(f"stack needs inputs of one shape, got "
                         f"{', '.join(fmt(s) for s in known)}")
    ax = _stack_axis(a, len(known[0]))
    out = known[0][:ax] + (a["num_args"],) + known[0][ax:]
    return [known[0]] * len(ins), [out]


def _stack_np(a: Attrs, xs: list, ctx: RunCtx) -> list:
    return [np.stack(xs, axis=_stack_axis(a, xs[0].ndim))]


def _stack_expand(S: Any, a: Attrs, xs: list, shapes: list, dtypes: list) -> list:
    ax = _stack_axis(a, len(shapes[0]))
    return [S.Concat(*[S.expand_dims(x, axis=ax) for x in xs], dim=ax)]


register(OpDef(
    "stack", STACK_PARAMS, lambda a: tuple(f"arg{i}" for i in range(a["num_args"])),
    _stack_shape, _stack_np, composite_gradient(_stack_expand), INJECTIVE,
    variadic="num_args", lowering=COMPOSED, extra={"unroll": composite_unroll(_stack_expand)},
    doc="Join arrays of one shape along a new axis."))
