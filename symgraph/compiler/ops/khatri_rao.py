"""``khatri_rao``: MXNet's column-wise Khatri-Rao product of matrices (M_1, N), ..., (M_k, N)
into (M_1 * ... * M_k, N); row (i_1, ..., i_k) in C order is the product of the inputs' rows.

MXNet 1.9.1 registers no gradient for it; symgraph's is the exact one (the other inputs'
product contracted with the head gradient), composed of reshapes, broadcast products and
sums, so it fuses and lowers like any broadcast code.
"""
from __future__ import annotations

from math import prod

import numpy as np

from ...core.attrs import Attrs, Param
from ...core.base import ShapeError
from ...core.registry import INJECTIVE, OpDef, RunCtx, register
from ._util import fmt, forward_shape, known_input_shape


def _shape(a: Attrs, s: list) -> list:
    for i, x in enumerate(s):
        if len(x) != 2 or x[1] != s[0][1]:
            raise ShapeError(f"khatri_rao: input {i} has shape {fmt(x)}; every input must be "
                             f"a matrix with {s[0][1] if len(s[0]) == 2 else 'N'} columns")
    return [(prod(x[0] for x in s), s[0][1])]


def _compute(a: Attrs, xs: list, ctx: RunCtx) -> list:
    out = xs[0]
    for x in xs[1:]:
        out = (out[:, None, :] * x[None, :, :]).reshape(-1, x.shape[1])
    return [np.ascontiguousarray(out)]


def _grad(c) -> list:
    """d input j = sum over the other row indices of dY * (product of the other inputs)."""
    S, dy = c.sym, c.ograds[0]
    shapes = [known_input_shape(c, i) for i in range(len(c.inputs))]
    n = shapes[0][1]
    grads = []
    for j, x in enumerate(c.inputs):
        before, after = prod(s[0] for s in shapes[:j]), prod(s[0] for s in shapes[j + 1:])
        g = S.reshape(dy, shape=(before, shapes[j][0], after, n))
        if j > 0:
            left = S.khatri_rao(*c.inputs[:j]) if j > 1 else c.inputs[0]
            g = S.broadcast_mul(g, S.reshape(left, shape=(before, 1, 1, n)))
        if j + 1 < len(c.inputs):
            rest = c.inputs[j + 1:]
            right = S.khatri_rao(*rest) if len(rest) > 1 else rest[0]
            g = S.broadcast_mul(g, S.reshape(right, shape=(1, 1, after, n)))
        grads.append(S.sum(g, axis=(0, 2)))
    return grads


register(OpDef(
    "khatri_rao", {"num_args": Param("int", doc="Number of input matrices.")},
    lambda a: tuple(f"arg{i}" for i in range(a["num_args"])), forward_shape(_shape), _compute,
    _grad, INJECTIVE, variadic="num_args", lowering="khatri_rao",
    doc="Column-wise Khatri-Rao product of matrices with one column count."))
