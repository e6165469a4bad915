"""Cases for BatchNorm, Dropout, LeakyReLU, the softmax family and the loss layers.
References are independent float64 numpy."""
from __future__ import annotations

import math

import numpy as np

import symgraph as sg

from .case import Case, away_from, integers, normal, uniform

S = sg.sym
x, g, lab = S.var("x"), S.var("g"), S.var("lab")


def _bn_ref(x, bn_gamma, bn_beta, bn_moving_mean, bn_moving_var, train, fix_gamma, axis=1,
            eps=1e-3):
    red = tuple(i for i in range(x.ndim) if i != axis % x.ndim)
    shape = [1] * x.ndim
    shape[axis] = -1
    if train:
        mean, var = x.mean(axis=red), ((x - x.mean(axis=red, keepdims=True)) ** 2).mean(axis=red)
    else:
        mean, var = bn_moving_mean, bn_moving_var
    gamma = np.ones_like(bn_gamma) if fix_gamma else bn_gamma
    return ((x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + eps) * gamma.reshape(shape)
            + bn_beta.reshape(shape))


def _bn_case(shape, train, fix_gamma, axis=1, global_stats=False, cid=""):
    c = shape[axis]
    return Case(
        "BatchNorm",
        lambda: S.BatchNorm(x, fix_gamma=fix_gamma, axis=axis, use_global_stats=global_stats,
                            name="bn"),
        {"x": normal(*shape), "bn_gamma": uniform(c, low=0.5, high=1.5), "bn_beta": normal(c)},
        lambda x, bn_gamma, bn_beta, bn_moving_mean, bn_moving_var: _bn_ref(
            x, bn_gamma, bn_beta, bn_moving_mean, bn_moving_var, train and not global_stats,
            fix_gamma, axis),
        aux={"bn_moving_mean": normal(c), "bn_moving_var": uniform(c, low=0.5, high=2.0)},
        is_train=train, grad_nodes=["x", "bn_beta"] + ([] if fix_gamma else ["bn_gamma"]),
        also_covers=("_backward_BatchNorm",), id=f"BatchNorm-{cid}")


def _sync_bn_case(train: bool) -> Case:
    """contrib.SyncBatchNorm on one device: BatchNorm over axis 1, MXNet's eps 1e-3."""
    return Case(
        "_contrib_SyncBatchNorm",
        lambda: S.contrib.SyncBatchNorm(x, fix_gamma=False, key="bn", ndev=1, name="bn"),
        {"x": normal(4, 3, 2), "bn_gamma": uniform(3, low=0.5, high=1.5), "bn_beta": normal(3)},
        lambda x, bn_gamma, bn_beta, bn_moving_mean, bn_moving_var: _bn_ref(
            x, bn_gamma, bn_beta, bn_moving_mean, bn_moving_var, train, False),
        aux={"bn_moving_mean": normal(3), "bn_moving_var": uniform(3, low=0.5, high=2.0)},
        is_train=train, grad_nodes=["x", "bn_gamma", "bn_beta"],
        id=f"SyncBatchNorm-{'train' if train else 'inference'}")


CASES: list[Case] = [
    _sync_bn_case(True), _sync_bn_case(False),
    _bn_case((4, 3, 2, 3), True, False, cid="train"),
    _bn_case((4, 3, 2, 3), False, True, cid="inference-fixgamma"),
    _bn_case((5, 2, 3), True, True, axis=-1, cid="train-lastaxis"),
    _bn_case((4, 3), True, False, global_stats=True, cid="global-stats"),
]

SELU = (1.6732632423543772, 1.0507009873554805)
LEAKY_REF = {
    "leaky": lambda v: np.where(v > 0, v, 0.1 * v),
    "elu": lambda v: np.where(v > 0, v, 0.1 * np.expm1(v)),
    "selu": lambda v: SELU[1] * np.where(v > 0, v, SELU[0] * np.expm1(v)),
    # MXNet 1.9.1 GELU is the erf form (checked against MXNet 1.9.1 itself)
    "gelu": lambda v: 0.5 * v * (1 + np.vectorize(math.erf)(v / math.sqrt(2))),
}
for act, ref in LEAKY_REF.items():
    CASES.append(Case("LeakyReLU", lambda t=act: S.LeakyReLU(x, act_type=t, slope=0.1),
                      {"x": away_from((0,), 3, 4)}, lambda x, r=ref: r(x), id=f"LeakyReLU-{act}"))
CASES.append(Case(
    "LeakyReLU", lambda: S.LeakyReLU(x, g, act_type="prelu"),
    {"x": away_from((0,), 2, 3, 2, 2), "g": uniform(3, low=0.1, high=0.5)},
    lambda x, g: np.where(x > 0, x, g.reshape(1, 3, 1, 1) * x), id="LeakyReLU-prelu"))


def _softmax(v, axis=-1):
    e = np.exp(v - v.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


CASES += [
    Case("softmax", lambda: S.softmax(x), {"x": normal(3, 4)}, lambda x: _softmax(x)),
    Case("softmax", lambda: S.softmax(x, axis=1, temperature=2.0), {"x": normal(2, 3, 4)},
         lambda x: _softmax(x / 2, 1), id="softmax-axis1-temperature"),
    Case("log_softmax", lambda: S.log_softmax(x, axis=0), {"x": normal(3, 4)},
         lambda x: np.log(_softmax(x, 0))),
    Case("log_softmax", lambda: S.log_softmax(x, temperature=0.5), {"x": normal(3, 4)},
         lambda x: np.log(_softmax(x * 2)), id="log_softmax-temperature"),
    Case("SoftmaxActivation", lambda: S.SoftmaxActivation(x), {"x": normal(2, 3, 2)},
         lambda x: _softmax(x.reshape(2, -1)).reshape(2, 3, 2)),
    Case("SoftmaxActivation", lambda: S.SoftmaxActivation(x, mode="channel"),
         {"x": normal(2, 3, 2)}, lambda x: _softmax(x, 1), id="SoftmaxActivation-channel"),
    # p=0 keeps the check deterministic; masks with p>0 are tested in test_nn_ops.py.
    Case("Dropout", lambda: S.Dropout(x, p=0.0), {"x": normal(3, 4)}, lambda x: x,
         is_train=True),
    Case("softmax_cross_entropy", lambda: S.softmax_cross_entropy(x, lab),
         {"x": normal(4, 5), "lab": integers(0, 5, 4)},
         lambda x, lab: np.array([-np.log(_softmax(x)[np.arange(4), lab.astype(int)]).sum()]),
         grad_nodes=["x"]),
]


def _per_sample(label):
    return label.size // label.shape[0]


for name, fwd, gfun in (
        ("LinearRegressionOutput", lambda v: v, lambda d: 0.5 * d ** 2),
        ("LogisticRegressionOutput", lambda v: 1 / (1 + np.exp(-v)), None),
        ("MAERegressionOutput", lambda v: v, np.abs)):
    CASES.append(Case(
        name, lambda n=name: getattr(S, n)(x, lab, grad_scale=2.0),
        {"x": normal(4, 3), "lab": uniform(4, 3, low=0.0, high=1.0)},
        lambda x, lab, f=fwd: f(x), grad=False, grad_nodes=["x"],
        loss=(lambda x, lab, f=fwd, gf=gfun: _regression_loss(x, lab, f, gf)),
        also_covers=("_backward_RegressionOutput",), id=name))
CASES.append(Case(
    "LinearRegressionOutput", lambda: S.LinearRegressionOutput(x, lab),
    {"x": normal(4, 1), "lab": normal(4)}, lambda x, lab: x, grad=False, grad_nodes=["x"],
    loss=lambda x, lab: float(np.sum(0.5 * (x[:, 0] - lab) ** 2)),
    id="LinearRegressionOutput-flat-label"))


def _regression_loss(x, lab, f, gf):
    """A loss whose gradient is MXNet's: (out - label) * 2 / outputs-per-sample."""
    scale = 2.0 / _per_sample(lab)
    if gf is None:  # logistic: cross entropy of sigmoid has gradient sigmoid(x) - label
        p = f(x)
        return float(-scale * np.sum(lab * np.log(p) + (1 - lab) * np.log(1 - p)))
    return float(scale * np.sum(gf(f(x) - lab)))
