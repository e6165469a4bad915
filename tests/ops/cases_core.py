"""Cases for the core ops. References are written independently with numpy."""
from __future__ import annotations

import numpy as np

import symgraph as sg
from symgraph.compiler.ops.elemwise import BINARY, COMPARE

from .case import Case, away_from, integers, normal, uniform

S = sg.sym
x = S.var("x")
a, b = S.var("a"), S.var("b")


def _sigmoid(v):
    return 1 / (1 + np.exp(-v))


UNARY_REF = {
    "negative": (np.negative, normal(3, 4)),
    "exp": (np.exp, normal(3, 4)),
    "log": (np.log, uniform(3, 4, low=0.5, high=3)),
    "sqrt": (np.sqrt, uniform(3, 4, low=0.5, high=3)),
    "rsqrt": (lambda v: 1 / np.sqrt(v), uniform(3, 4, low=0.5, high=3)),
    "square": (np.square, normal(3, 4)),
    "reciprocal": (lambda v: 1 / v, uniform(3, 4, low=0.5, high=3)),
    "abs": (np.abs, away_from((0,), 3, 4)),
    "tanh": (np.tanh, normal(3, 4)),
    "sigmoid": (_sigmoid, normal(3, 4)),
    "relu": (lambda v: np.maximum(v, 0), away_from((0,), 3, 4)),
    "softrelu": (lambda v: np.log1p(np.exp(v)), normal(3, 4, scale=3)),
    "softsign": (lambda v: v / (1 + np.abs(v)), away_from((0,), 3, 4)),
    "log1p": (np.log1p, uniform(3, 4, low=-0.5, high=3)),
    "expm1": (np.expm1, normal(3, 4)),
    "sign": (np.sign, away_from((0,), 3, 4)),
}

CASES: list[Case] = []
for name, (ref, gen) in UNARY_REF.items():
    CASES.append(Case(name, lambda n=name: getattr(S, n)(x), {"x": gen},
                      lambda x, r=ref: r(x), grad=name != "sign"))
for act in ("relu", "sigmoid", "tanh", "softrelu", "softsign"):
    CASES.append(Case("Activation", lambda t=act: S.Activation(x, act_type=t), {"x": UNARY_REF[act][1]},
                      lambda x, t=act: UNARY_REF[t][0](x), id=f"Activation-{act}"))
CASES.append(Case("clip", lambda: S.clip(x, a_min=-0.5, a_max=0.7),
                  {"x": away_from((-0.5, 0.7), 4, 5)}, lambda x: np.clip(x, -0.5, 0.7)))

NP_BINARY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
             "power": np.power, "maximum": np.maximum, "minimum": np.minimum}
NP_COMPARE = {"equal": np.equal, "not_equal": np.not_equal, "greater": np.greater,
              "greater_equal": np.greater_equal, "lesser": np.less, "lesser_equal": np.less_equal}
POSITIVE = uniform(3, 4, low=0.5, high=2.0)
assert set(NP_BINARY) == set(BINARY) and set(NP_COMPARE) == set(COMPARE)
for name, ref in NP_BINARY.items():
    CASES.append(Case(f"broadcast_{name}", lambda n=name: getattr(S, f"broadcast_{n}")(a, b),
                      {"a": POSITIVE, "b": uniform(1, 4, low=0.5, high=2.0)},
                      lambda a, b, r=ref: r(a, b), id=f"broadcast_{name}-rowvec"))
    CASES.append(Case(f"broadcast_{name}", lambda n=name: getattr(S, f"broadcast_{n}")(a, b),
                      {"a": uniform(2, 1, 4, low=0.5, high=2.0), "b": uniform(3, 1, low=0.5, high=2.0)},
                      lambda a, b, r=ref: r(a, b), id=f"broadcast_{name}-both"))
for name in ("add", "sub", "mul", "div"):
    CASES.append(Case(f"elemwise_{name}", lambda n=name: getattr(S, f"elemwise_{n}")(a, b),
                      {"a": POSITIVE, "b": POSITIVE}, lambda a, b, r=NP_BINARY[name]: r(a, b)))
for name in ("power", "maximum", "minimum"):
    CASES.append(Case(f"_{name}", lambda n=name: getattr(S, f"_{n}")(a, b),
                      {"a": POSITIVE, "b": uniform(3, 4, low=0.3, high=2.5)},
                      lambda a, b, r=NP_BINARY[name]: r(a, b)))
for name, ref in NP_COMPARE.items():
    ints = integers(-2, 3, 3, 4)
    CASES.append(Case(f"broadcast_{name}", lambda n=name: getattr(S, f"broadcast_{n}")(a, b),
                      {"a": ints, "b": integers(-2, 3, 1, 4)},
                      lambda a, b, r=ref: r(a, b).astype(float), grad=False))
    CASES.append(Case(f"_{name}", lambda n=name: getattr(S, f"_{n}")(a, b), {"a": ints, "b": ints},
                      lambda a, b, r=ref: r(a, b).astype(float), grad=False))
    CASES.append(Case(f"_{name}_scalar", lambda n=name: getattr(S, f"_{n}_scalar")(x, scalar=1.0),
                      {"x": ints}, lambda x, r=ref: r(x, 1.0).astype(float), grad=False))

SCALAR_REF = {
    "_plus_scalar": lambda v, s: v + s, "_minus_scalar": lambda v, s: v - s,
    "_rminus_scalar": lambda v, s: s - v, "_mul_scalar": lambda v, s: v * s,
    "_div_scalar": lambda v, s: v / s, "_rdiv_scalar": lambda v, s: s / v,
    "_power_scalar": lambda v, s: v ** s, "_rpower_scalar": lambda v, s: s ** v,
    "_maximum_scalar": np.maximum, "_minimum_scalar": np.minimum,
}
for name, ref in SCALAR_REF.items():
    CASES.append(Case(name, lambda n=name: getattr(S, n)(x, scalar=1.5),
                      {"x": away_from((1.5,), 3, 4, low=0.2, high=3.0)},
                      lambda x, r=ref: r(x, 1.5)))

CASES += [
    Case("add_n", lambda: S.add_n(a, b, x), {"a": normal(2, 3), "b": normal(2, 3), "x": normal(2, 3)},
         lambda a, b, x: a + b + x),
    Case("FullyConnected", lambda: S.FullyConnected(x, num_hidden=5, name="fc"),
         {"x": normal(4, 2, 3), "fc_weight": normal(5, 6), "fc_bias": normal(5)},
         lambda x, fc_weight, fc_bias: x.reshape(4, -1) @ fc_weight.T + fc_bias),
    Case("FullyConnected", lambda: S.FullyConnected(x, num_hidden=5, no_bias=True, flatten=False,
                                                    name="fc"),
         {"x": normal(2, 3, 4), "fc_weight": normal(5, 4)},
         lambda x, fc_weight: x @ fc_weight.T, id="FullyConnected-noflatten-nobias"),
    Case("dot", lambda: S.dot(a, b), {"a": normal(3, 4), "b": normal(4, 2)}, lambda a, b: a @ b),
    Case("dot", lambda: S.dot(a, b, transpose_a=True, transpose_b=True),
         {"a": normal(4, 3), "b": normal(2, 4)}, lambda a, b: a.T @ b.T, id="dot-tt"),
    Case("dot", lambda: S.dot(a, b, transpose_b=True),
         {"a": normal(3, 4), "b": normal(2, 4)}, lambda a, b: a @ b.T, id="dot-nt"),
    Case("Flatten", lambda: S.Flatten(x), {"x": normal(2, 3, 4)}, lambda x: x.reshape(2, 12)),
    Case("Reshape", lambda: S.Reshape(x, shape=(0, -1)), {"x": normal(2, 3, 4)},
         lambda x: x.reshape(2, 12)),
    Case("reshape_like", lambda: S.reshape_like(a, b), {"a": normal(2, 6), "b": normal(3, 4)},
         lambda a, b: a.reshape(3, 4), grad_nodes=["a"]),
    Case("identity", lambda: S.identity(x), {"x": normal(2, 3)}, lambda x: x),
    # BlockGrad's gradient is zero by definition, not the true derivative: tests/test_autodiff.py
    Case("BlockGrad", lambda: S.BlockGrad(x), {"x": normal(2, 3)}, lambda x: x, grad=False),
    Case("zeros_like", lambda: S.zeros_like(x), {"x": normal(2, 3)}, lambda x: 0 * x, grad=False),
    Case("ones_like", lambda: S.ones_like(x), {"x": normal(2, 3)}, lambda x: 0 * x + 1, grad=False),
    Case("sum", lambda: S.sum(x, axis=1), {"x": normal(2, 3, 4)}, lambda x: x.sum(axis=1),
         also_covers=("_reduce_backward",)),
    Case("sum", lambda: S.sum(x, axis=(0, 2), keepdims=True), {"x": normal(2, 3, 4)},
         lambda x: x.sum(axis=(0, 2), keepdims=True), id="sum-keepdims"),
    Case("sum", lambda: S.sum(x, axis=1, exclude=True), {"x": normal(2, 3, 4)},
         lambda x: x.sum(axis=(0, 2)), id="sum-exclude"),
    Case("sum", lambda: S.sum(x), {"x": normal(2, 3)}, lambda x: np.array(x.sum()), id="sum-all"),
    Case("mean", lambda: S.mean(x, axis=-1), {"x": normal(2, 3, 4)}, lambda x: x.mean(axis=-1)),
    Case("max", lambda: S.max(x, axis=0), {"x": normal(3, 4)}, lambda x: x.max(axis=0)),
    Case("min", lambda: S.min(x, axis=1, keepdims=True), {"x": normal(3, 4)},
         lambda x: x.min(axis=1, keepdims=True)),
    Case("broadcast_like", lambda: S.broadcast_like(a, b), {"a": normal(1, 4), "b": normal(3, 4)},
         lambda a, b: np.broadcast_to(a, (3, 4)), grad_nodes=["a"],
         also_covers=("_broadcast_backward",)),
    Case("MakeLoss", lambda: S.MakeLoss(S.square(x), grad_scale=0.5), {"x": normal(2, 3)},
         lambda x: x * x, grad=False, loss=lambda x: 0.5 * float(np.sum(x * x))),
    Case("MakeLoss", lambda: S.MakeLoss(S.square(x), normalization="batch"), {"x": normal(4, 3)},
         lambda x: x * x, grad=False, loss=lambda x: float(np.sum(x * x)) / 4,
         id="MakeLoss-batch", also_covers=("_scale_by_batch",)),
    Case("MakeLoss", lambda: S.MakeLoss(S.relu(x), normalization="valid"),
         {"x": away_from((0,), 4, 3)}, lambda x: np.maximum(x, 0), grad=False,
         loss=lambda x: float(np.sum(np.maximum(x, 0))) / max(1, int(np.sum(x > 0))),
         id="MakeLoss-valid", also_covers=("_scale_by_valid",)),
    Case("SoftmaxOutput", lambda: S.SoftmaxOutput(x, name="sm"),
         {"x": normal(4, 5), "sm_label": integers(0, 5, 4)},
         lambda x, sm_label: _softmax(x), grad=False, grad_nodes=["x"],
         loss=lambda x, sm_label: _xent(x, sm_label), also_covers=("_backward_SoftmaxOutput",)),
    Case("SoftmaxOutput", lambda: S.SoftmaxOutput(x, name="sm", normalization="batch",
                                                  grad_scale=2.0, use_ignore=True, ignore_label=1),
         {"x": normal(6, 3), "sm_label": integers(0, 3, 6)},
         lambda x, sm_label: _softmax(x), grad=False, grad_nodes=["x"],
         loss=lambda x, sm_label: 2.0 * _xent(x, sm_label, ignore=1) / 6, id="SoftmaxOutput-ignore"),
]


def _softmax(v):
    e = np.exp(v - v.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _xent(v, label, ignore=None):
    p = _softmax(v)
    lab = label.astype(int)
    keep = np.ones_like(lab, dtype=bool) if ignore is None else lab != ignore
    return float(-np.sum(np.log(p[np.arange(len(lab)), lab])[keep]))
