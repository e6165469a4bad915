"""Loss layers: softmax_cross_entropy and the regression outputs (Linear, Logistic, MAE).

The regression outputs are MXNet loss layers: their forward is the prediction and their
gradient (out - label) * grad_scale / (outputs per sample) ignores head gradients.
softmax_cross_entropy is an ordinary op whose output is the summed loss.
"""
from __future__ import annotations

from math import prod
from typing import Callable

import numpy as np

from ...core import expr as E
from ...core.attrs import Attrs, Param
from ...core.base import ShapeError
from ...core.registry import NOT_DIFFERENTIABLE, OPAQUE, REDUCE, OpDef, RunCtx, register
from ._util import fmt


def _xent_shape(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    data, label = ins
    if data is None:
        return ins, outs
    if len(data) != 2:
        raise ShapeError(f"data must be 2-D (batch, classes), got {fmt(data)}")
    if label is not None and tuple(label) != (data[0],):
        raise ShapeError(f"label has shape {fmt(label)}, expected ({data[0]},) from data "
                         f"{fmt(data)}")
    return [data, (data[0],)], [(1,)]


def _xent(a: Attrs, xs: list, ctx: RunCtx) -> list:
    x, label = xs
    z = x - x.max(axis=1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    idx = np.clip(label.astype(np.int64), 0, x.shape[1] - 1)
    return [np.asarray([-logp[np.arange(len(idx)), idx].sum()], dtype=x.dtype)]


register(OpDef(
    "softmax_cross_entropy", {}, ("data", "label"), _xent_shape, _xent,
    lambda c: [c.sym._backward_SoftmaxOutput(c.sym.softmax(c.inputs[0], axis=-1), c.inputs[1])
               * c.ograds[0], None],
    REDUCE, lowering="softmax_cross_entropy",
    doc="Sum over the batch of -log softmax(data)[label]; output shape (1,)."))

REGRESSION_PARAMS = {"grad_scale": Param("float", 1.0)}


def _regression_shape(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    data, label = ins
    data = data if data is not None else outs[0]
    if data is None:
        return ins, outs
    if label is not None and tuple(label) != tuple(data) and \
            not (prod(label) == prod(data) and label[0] == data[0]):
        raise ShapeError(f"label has shape {fmt(label)}, expected {fmt(data)} (the data shape)")
    return [data, data if label is None else label], [data]


def _regression_backward(a: Attrs, xs: list, ctx: RunCtx) -> list:
    out, label = xs
    diff = out - label.reshape(out.shape).astype(out.dtype)
    if a["mae"]:
        diff = np.sign(diff)
    per_sample = max(1, label.size // label.shape[0]) if label.ndim else 1
    return [(diff * (a["grad_scale"] / per_sample)).astype(out.dtype, copy=False)]


register(OpDef(
    "_backward_RegressionOutput", {**REGRESSION_PARAMS, "mae": Param("bool", False)},
    ("output", "label"), lambda a, ins, outs: (ins, [ins[0]] if ins[0] is not None else outs),
    _regression_backward, NOT_DIFFERENTIABLE, OPAQUE, lowering='regression_backward',
    doc="(output - label) (sign of it if mae) * grad_scale / outputs per sample."))

# name: (forward formula, mae)
REGRESSIONS = {
    "LinearRegressionOutput": (lambda x: x, False),
    "LogisticRegressionOutput": (lambda x: 1.0 / (1.0 + E.exp(-x)), False),
    "MAERegressionOutput": (lambda x: x, True),
}


def _regression_compute(formula: Callable) -> Callable:
    def compute(a: Attrs, xs: list, ctx: RunCtx) -> list:
        return E.evaluate([formula(E.inp(0))], [xs[0]], xs[0].dtype)
    return compute


for _name, (_formula, _mae) in REGRESSIONS.items():
    register(OpDef(
        _name, REGRESSION_PARAMS, ("data", "label"), _regression_shape,
        _regression_compute(_formula),
        lambda c, m=_mae: [c.sym._backward_RegressionOutput(
            c.outputs[0], c.inputs[1], grad_scale=c.attrs["grad_scale"], mae=m), None],
        OPAQUE, lowering=("formula_of_input0", {"formula": _formula}),
        doc=f"{_name}: loss layer; gradient ignores head gradients, as MXNet."))
