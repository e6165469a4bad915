"""Cases for the ops added for MXNet parity: math functions, hypot/mod, creation,
N-d dot and its gradient ops, sorting, gathers, layout. References are plain numpy (float64);
scipy-free. Rounding follows MXNet: ``round`` halves away from zero, ``rint`` halves down."""
from __future__ import annotations

import math

import numpy as np

import symgraph as sg

from .case import Case, away_from, normal, uniform

S = sg.sym
x = S.var("x")
a, b, i = S.var("a"), S.var("b"), S.var("i")

MATH_REF = {
    "sin": (np.sin, normal(3, 4)), "cos": (np.cos, normal(3, 4)),
    "tan": (np.tan, uniform(3, 4, low=-1.2, high=1.2)),
    "arcsin": (np.arcsin, uniform(3, 4, low=-0.9, high=0.9)),
    "arccos": (np.arccos, uniform(3, 4, low=-0.9, high=0.9)),
    "arctan": (np.arctan, normal(3, 4)), "sinh": (np.sinh, normal(3, 4)),
    "cosh": (np.cosh, normal(3, 4)), "arcsinh": (np.arcsinh, normal(3, 4)),
    "arccosh": (np.arccosh, uniform(3, 4, low=1.2, high=4.0)),
    "arctanh": (np.arctanh, uniform(3, 4, low=-0.9, high=0.9)),
    "degrees": (np.degrees, normal(3, 4)), "radians": (np.radians, normal(3, 4)),
    "log10": (np.log10, uniform(3, 4, low=0.2, high=5.0)),
    "log2": (np.log2, uniform(3, 4, low=0.2, high=5.0)),
    "cbrt": (np.cbrt, away_from((0,), 3, 4, low=-3, high=3, gap=0.3)),
    "rcbrt": (lambda v: 1 / np.cbrt(v), away_from((0,), 3, 4, low=-3, high=3, gap=0.3)),
    "erf": (np.vectorize(math.erf), normal(3, 4)),
    "gamma": (np.vectorize(math.gamma), uniform(3, 4, low=0.3, high=4.0)),
    "gammaln": (np.vectorize(math.lgamma), uniform(3, 4, low=0.3, high=6.0)),
}
HALVES = lambda rng: np.array([[0.5, 1.5, 2.5, -0.5], [-1.5, -2.5, 0.2, -0.7]])  # noqa: E731
ROUND_REF = {
    "floor": np.floor, "ceil": np.ceil, "trunc": np.trunc, "fix": np.fix,
    "round": lambda v: np.sign(v) * np.floor(np.abs(v) + 0.5),
    "rint": lambda v: np.where(v - np.floor(v) <= 0.5, np.floor(v), np.ceil(v)),
}


def _smooth_l1(x, s=2.0):
    return np.where(np.abs(x) < 1 / s ** 2, 0.5 * (s * x) ** 2, np.abs(x) - 0.5 / s ** 2)


def _mod(a, b):  # the divisor's sign, as Python's %
    return a - b * np.floor(a / b)


def _away_from_multiples(*shape: int):
    """Numerators whose quotient by a divisor in [2, 3] stays inside one integer interval."""
    return lambda rng: rng.choice([-1, 1], size=shape) * rng.uniform(0.2, 1.8, size=shape)


def _dot_ref(a, b, ta=False, tb=False):
    am = a.reshape(a.shape[0], -1).T if ta else a.reshape(-1, a.shape[-1])
    bm = b.reshape(-1, b.shape[-1]).T if tb else b.reshape(b.shape[0], -1)
    keep = (a.shape[1:] if ta else a.shape[:-1]) + (b.shape[:-1] if tb else b.shape[1:])
    return (am @ bm).reshape(keep or (1,))


def _topk_ref(v, k, axis, kind, ascend=False):
    idx = np.take(np.argsort(v if ascend else -v, axis=axis, kind="stable"), np.arange(k), axis)
    return {"value": np.take_along_axis(v, idx, axis), "indices": idx.astype(float)}[kind]


CASES: list[Case] = []
for name, (ref, gen) in MATH_REF.items():
    CASES.append(Case(name, lambda n=name: getattr(S, n)(x), {"x": gen}, lambda x, r=ref: r(x)))
for name, ref in ROUND_REF.items():
    CASES.append(Case(name, lambda n=name: getattr(S, n)(x), {"x": HALVES},
                      lambda x, r=ref: r(x), grad=False))
DIVISOR = uniform(3, 4, low=2.0, high=3.0)
CASES += [
    Case("smooth_l1", lambda: S.smooth_l1(x, scalar=2.0),
         {"x": away_from((-0.25, 0.25), 3, 4, low=-1, high=1, gap=0.03)}, _smooth_l1),
    Case("_hypot", lambda: S.hypot(a, b), {"a": normal(3, 4), "b": normal(3, 4)},
         lambda a, b: np.hypot(a, b)),
    Case("broadcast_hypot", lambda: S.broadcast_hypot(a, b),
         {"a": normal(3, 4), "b": normal(1, 4)},
         lambda a, b: np.hypot(a, b)),
    Case("_hypot_scalar", lambda: S.hypot(x, 1.5), {"x": normal(3, 4)},
         lambda x: np.hypot(x, 1.5)),
    Case("_mod", lambda: S._mod(a, b), {"a": _away_from_multiples(3, 4), "b": DIVISOR}, _mod),
    Case("broadcast_mod", lambda: a % b, {"a": _away_from_multiples(3, 4),
                                          "b": uniform(1, 4, low=-3.0, high=-2.0)}, _mod),
    Case("_mod_scalar", lambda: x % 2.5, {"x": _away_from_multiples(3, 4)},
         lambda x: _mod(x, 2.5)),
    Case("_rmod_scalar", lambda: 1.5 % x, {"x": uniform(3, 4, low=2.0, high=3.0)},
         lambda x: _mod(1.5, x)),
    Case("_zeros", lambda: S._zeros(shape=(2, 3)) + x, {"x": normal(2, 3)}, lambda x: x),
    Case("_ones", lambda: S.ones((2, 3), dtype=np.float64) * x, {"x": normal(2, 3)}, lambda x: x),
    Case("_full", lambda: S.full((2, 3), 2.5, dtype=np.float64) * x, {"x": normal(2, 3)}, lambda x: 2.5 * x),
    Case("shape_array", lambda: S.shape_array(x), {"x": normal(2, 3, 4)},
         lambda x: np.array([2, 3, 4]), grad=False),
    Case("size_array", lambda: S.size_array(x), {"x": normal(2, 3, 4)},
         lambda x: np.array([24]), grad=False),
    Case("dot", lambda: S.dot(a, b), {"a": normal(2, 3, 4), "b": normal(4, 5)}, _dot_ref,
         id="dot-3d-2d", also_covers=("_backward_dot_lhs", "_backward_dot_rhs")),
    Case("dot", lambda: S.dot(a, b, transpose_a=True), {"a": normal(4, 2, 3),
                                                        "b": normal(4, 2, 2)},
         lambda a, b: _dot_ref(a, b, ta=True), id="dot-3d-3d-ta"),
    Case("dot", lambda: S.dot(a, b, transpose_b=True), {"a": normal(4), "b": normal(3, 2, 4)},
         lambda a, b: _dot_ref(a, b, tb=True), id="dot-1d-3d-tb"),
    Case("dot", lambda: S.dot(a, b), {"a": normal(4), "b": normal(4)}, _dot_ref,
         id="dot-1d-1d"),
    Case("_backward_dot_lhs", lambda: S._backward_dot_lhs(a, b, x, transpose_b=True),
         {"a": normal(2, 3, 5), "b": normal(5, 4), "x": normal(2, 3, 4)},
         lambda a, b, x: (a.reshape(-1, 5) @ b).reshape(2, 3, 4), grad_nodes=["a", "b"]),
    Case("_backward_dot_rhs", lambda: S._backward_dot_rhs(a, b, x, transpose_a=True),
         {"a": normal(3, 5), "b": normal(4, 3), "x": normal(4, 5)},
         lambda a, b, x: b @ a, grad_nodes=["a", "b"]),
]

DISTINCT = lambda rng: rng.permutation(24).reshape(2, 3, 4) / 7.0  # noqa: E731  (no ties)
CASES += [
    Case("sort", lambda: S.sort(x, axis=1), {"x": DISTINCT},
         lambda x: np.sort(x, axis=1), also_covers=("_scatter_axis",)),
    Case("sort", lambda: S.sort(x, axis=None, is_ascend=False), {"x": DISTINCT},
         lambda x: -np.sort(-x.ravel()), id="sort-flat-descending"),
    Case("argsort", lambda: S.argsort(x, axis=-1), {"x": DISTINCT},
         lambda x: np.argsort(x, axis=-1).astype(float), grad=False),
    Case("topk", lambda: S.topk(x, axis=2, k=2, ret_typ="value"), {"x": DISTINCT},
         lambda x: _topk_ref(x, 2, 2, "value")),
    Case("topk", lambda: S.topk(x, axis=1, k=2), {"x": DISTINCT},
         lambda x: _topk_ref(x, 2, 1, "indices"), id="topk-indices"),
    Case("topk", lambda: S.Group(list(S.topk(x, axis=0, k=1, ret_typ="both", is_ascend=True))),
         {"x": DISTINCT}, lambda x: [_topk_ref(x, 1, 0, "value", True),
                                     _topk_ref(x, 1, 0, "indices", True)], id="topk-both"),
    Case("topk", lambda: S.topk(x, axis=-1, k=3, ret_typ="mask"), {"x": DISTINCT},
         lambda x: (np.argsort(np.argsort(-x, axis=-1), axis=-1) < 3).astype(float),
         id="topk-mask"),
    Case("pick", lambda: S.pick(x, i, axis=1), {"x": normal(2, 3, 4),
                                                "i": lambda rng: rng.integers(0, 3, (2, 4))},
         lambda x, i: np.take_along_axis(x, i[:, None].astype(int), 1)[:, 0],
         grad_nodes=["x"]),
    Case("pick", lambda: S.pick(x, i, axis=-1, keepdims=True, mode="wrap"),
         {"x": normal(2, 3), "i": lambda rng: rng.integers(-4, 7, (2, 1))},
         lambda x, i: np.take_along_axis(x, np.mod(i.astype(int), 3), 1),
         grad_nodes=["x"], id="pick-wrap-keepdims"),
    # MXNet accepts either index shape whatever keepdims (Gluon's loss: 1-d labels, keepdims)
    Case("pick", lambda: S.pick(x, i, axis=-1, keepdims=True),
         {"x": normal(3, 4), "i": lambda rng: rng.integers(0, 4, (3,))},
         lambda x, i: np.take_along_axis(x, i[:, None].astype(int), 1),
         grad_nodes=["x"], id="pick-keepdims-1d-index"),
    Case("pick", lambda: S.pick(x, i, axis=1),
         {"x": normal(2, 3, 4), "i": lambda rng: rng.integers(0, 3, (2, 1, 4))},
         lambda x, i: np.take_along_axis(x, i.astype(int), 1)[:, 0],
         grad_nodes=["x"], id="pick-index-keeps-axis"),
    Case("_gather_axis", lambda: S._gather_axis(x, i, axis=0),
         {"x": normal(3, 4), "i": lambda rng: rng.integers(0, 3, (5, 4))},
         lambda x, i: np.take_along_axis(x, i.astype(int), 0), grad_nodes=["x"]),
    Case("_gather_axis", lambda: S._gather_axis(x, i, axis=-1, mode="raise"),
         {"x": normal(3, 4), "i": lambda rng: rng.integers(0, 4, (3, 6))},
         lambda x, i: np.take_along_axis(x, i.astype(int), 1), grad_nodes=["x"],
         id="gather-axis-raise"),
    Case("SwapAxis", lambda: S.SwapAxis(x, dim1=0, dim2=2), {"x": normal(2, 3, 4)},
         lambda x: np.swapaxes(x, 0, 2)),
    Case("broadcast_axis", lambda: S.broadcast_axis(x, axis=(0, 2), size=(3, 2)),
         {"x": normal(1, 4, 1)}, lambda x: np.broadcast_to(x, (3, 4, 2))),
    # batch_take has no gradient (binding through it raises); BlockGrad keeps autodiff out
    Case("batch_take", lambda: S.BlockGrad(S.batch_take(x, i)),
         {"x": normal(4, 3), "i": lambda rng: np.array([0, 2, 5, -1])},
         lambda x, i: x[np.arange(4), np.clip(i.astype(int), 0, 2)], grad=False),
    Case("amp_cast", lambda: S.amp_cast(x, dtype="float32"), {"x": normal(2, 3)},
         lambda x: x.astype(np.float32), rtol=1e-6),
    Case("_transpose_cast", lambda: S._transpose_cast(x, axes=(2, 0, 1), dtype="float32"),
         {"x": normal(2, 3, 4)}, lambda x: x.transpose(2, 0, 1).astype(np.float32),
         rtol=1e-6, grad_rtol=1e-2),  # central differences of a float32 output
    # made after autodiff only: no gradient (BlockGrad keeps autodiff out, as for batch_take)
    Case("_multi_transpose_cast", lambda: S.Group([S.BlockGrad(o) for o in S._multi_transpose_cast(
        x, S.var("y"), axes=((2, 0, 1), ()), dtypes=("float32", "float16"))]),
         {"x": normal(2, 3, 4), "y": normal(3, 5)},
         lambda x, y: [x.transpose(2, 0, 1).astype(np.float32), y.T.astype(np.float16)],
         rtol=1e-6, grad=False),
    # x float64 (the cases' dtype), y cast to float32: both float64 (the widest), or with
    # cast_narrow both float32
    Case("amp_multicast", lambda: S.Group(list(S.amp_multicast(
        x, S.Cast(S.var("y"), dtype="float32"), num_outputs=2))),
         {"x": normal(2, 3), "y": normal(3)},
         lambda x, y: [x, y.astype(np.float32).astype(np.float64)], rtol=1e-12, atol=0,
         grad_nodes=["x"]),
    Case("amp_multicast", lambda: S.Group(list(S.amp_multicast(
        x, S.Cast(S.var("y"), dtype="float32"), num_outputs=2, cast_narrow=True))),
         {"x": normal(2, 3), "y": normal(3)},
         lambda x, y: [x.astype(np.float32), y.astype(np.float32)], rtol=1e-12, atol=0,
         grad_nodes=["x"], grad_rtol=1e-2, id="amp_multicast-narrow"),
    # the gradient is scaled by s (tests/amp checks s != 1); with s = 1 it is the true one
    Case("_amp_grad_scale", lambda: S._amp_grad_scale(x, S.var("s")),
         {"x": normal(2, 3), "s": lambda rng: np.array([1.0])}, lambda x, s: x, rtol=0,
         atol=0, grad_nodes=["x"]),
    Case("reshape_like", lambda: S.reshape_like(a, b, lhs_begin=1, lhs_end=3, rhs_begin=0,
                                                rhs_end=1),
         {"a": normal(2, 3, 4), "b": normal(12, 5)}, lambda a, b: a.reshape(2, 12),
         grad_nodes=["a"], id="reshape_like-ranges"),
    Case("norm", lambda: S.norm(x, axis=1, out_dtype="float32"), {"x": normal(2, 3)},
         lambda x: np.linalg.norm(x, axis=1), rtol=1e-5, grad_rtol=2e-2, atol=1e-4,
         id="norm-out_dtype"),  # float32 output: coarse finite differences
]
CASES.append(Case("_identity_with_attr_like_rhs",
                  lambda: S._internal._identity_with_attr_like_rhs(a, b),
                  {"a": normal(2, 3), "b": normal(2, 3)}, lambda a, b: a, grad_nodes=["a"]))


def _digamma_ref(x):  # d/dx log Gamma(x) by central differences of math.lgamma
    h = 1e-6
    return (np.vectorize(math.lgamma)(x + h) - np.vectorize(math.lgamma)(x - h)) / (2 * h)


CASES.append(Case("_digamma", lambda: S.BlockGrad(S._digamma(x)),
                  {"x": uniform(3, 4, low=-2.7, high=8.0)},
                  _digamma_ref, grad=False, rtol=1e-6, atol=1e-6))
