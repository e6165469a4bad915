"""SVMOutput and IdentityAttachKLSparseReg (MXNet 1.9.1): identity forwards whose gradients
are a loss's or a regulariser's.

* ``SVMOutput``: a loss layer; its gradient ignores head gradients. For the label's class k
  and score x, the L2 hinge (default) gives ``-2 c (margin - x)`` where ``margin > x`` and,
  for other classes, ``2 c (margin + x)`` where ``margin > -x``; ``use_linear`` (L1) gives
  ``-c`` and ``c`` under the same conditions (c: ``regularization_coefficient``).
* ``IdentityAttachKLSparseReg``: adds ``penalty * (-rho / a + (1 - rho) / (1 - a))`` to the
  head gradient, a being the per-unit moving average of the activations (aux
  ``moving_avg``, updated with ``momentum`` from the batch mean). MXNet updates it in its
  backward pass; here the update is the op's hidden output, written back after each training
  forward, and the gradient reads the updated value (what MXNet's backward uses).

Both forwards are copies on the GPU; the regulariser is a composition (``ops/_composite.py``)
of the batch mean and a private copy op ``_identity_kl_sparse`` carrying the gradient term.

Example::

    out = sg.sym.SVMOutput(sg.sym.FullyConnected(x, num_hidden=10), sg.sym.var("label"))
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ...core.attrs import Attrs, Param
from ...core.base import ShapeError
from ...core.registry import OPAQUE, OpDef, RunCtx, register
from ._composite import COMPOSED, composite_unroll
from ._util import fmt

SVM_PARAMS = {
    "margin": Param("float", 1.0, doc="The margin of the hinge."),
    "regularization_coefficient": Param("float", 1.0, doc="Scale of the gradient."),
    "use_linear": Param("bool", False, doc="L1 (linear) hinge instead of the L2 (squared)."),
}


def _svm_shape(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    data = ins[0] if ins[0] is not None else outs[0]
    if data is None:
        return ins, outs
    if len(data) < 2:
        raise ShapeError(f"data {fmt(data)}: expected (batch, classes...)")
    if ins[1] is not None and tuple(ins[1]) != (data[0],):
        raise ShapeError(f"label {fmt(ins[1])}, expected ({data[0]},) from data {fmt(data)}")
    return [tuple(data), (data[0],)], [tuple(data)]


def _svm_grad(c: Any) -> list:
    S, a = c.sym, c.attrs
    x = c.inputs[0]
    shape = c.types.shape(x.outputs_[0])
    flat = S.Reshape(x, shape=(shape[0], -1))
    target = S.one_hot(c.inputs[1], depth=int(np.prod(shape[1:])), dtype="float32")
    target = S.Cast(target, dtype=c.types.dtype(x.outputs_[0]).name)
    m, k = a["margin"], a["regularization_coefficient"]
    below, above = S._lesser_scalar(flat, scalar=m), S._greater_scalar(flat, scalar=-m)
    if a["use_linear"]:
        on, off = below * -k, above * k
    else:
        on = below * S._rminus_scalar(flat, scalar=m) * (-2.0 * k)
        off = above * S._plus_scalar(flat, scalar=m) * (2.0 * k)
    return [S.Reshape(S.where(target, on, off), shape=shape), None]


register(OpDef(
    "SVMOutput", SVM_PARAMS, ("data", "label"), _svm_shape,
    lambda a, xs, ctx: [xs[0].copy()], _svm_grad, OPAQUE, lowering="copy",
    doc="Support vector machine loss layer: forward is the scores; the gradient is the "
        "(squared, or linear with use_linear) hinge's, head gradients ignored."))

KL_PARAMS = {
    "sparseness_target": Param("float", 0.1, doc="The target mean activation rho."),
    "penalty": Param("float", 0.001, doc="Scale of the KL divergence's gradient."),
    "momentum": Param("float", 0.9, doc="Momentum of the moving average."),
}


def _kl_shape(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    data = ins[0] if ins[0] is not None else outs[0]
    if data is None:
        return ins, outs
    if len(data) != 2:
        raise ShapeError(f"data {fmt(data)}: expected (batch, units); MXNet's moving average "
                         f"is per unit of 2-d data")
    return [tuple(data), (data[1],)], [tuple(data), (data[1],)]


def _kl_compute(a: Attrs, xs: list, ctx: RunCtx) -> list:
    x, avg = xs
    new = a["momentum"] * avg.astype(np.float64) + (1 - a["momentum"]) * x.mean(axis=0)
    return [x.copy(), new.astype(avg.dtype)]


def _kl_expand(S: Any, a: Attrs, xs: list, shapes: list, dtypes: list) -> list:
    new = xs[1] * a["momentum"] + S.mean(xs[0], axis=0) * (1.0 - a["momentum"])
    return list(S._identity_kl_sparse(xs[0], xs[1], new, **{k: a[k] for k in KL_PARAMS}))


def _kl_grad(c: Any, avg: Any) -> list:
    """Head gradient plus the KL term of ``avg``, the updated average (the aux input already
    holds it when the backward runs, so it is read from the forward's result)."""
    rho, S = c.attrs["sparseness_target"], c.sym
    term = (S._rdiv_scalar(avg, scalar=-rho) + S._rdiv_scalar(S._rminus_scalar(avg, scalar=1.0),
                                                              scalar=1.0 - rho))
    return [S.broadcast_add(c.ograds[0], S.expand_dims(term * c.attrs["penalty"], axis=0)),
            None, None][:len(c.inputs)]


register(OpDef(
    "IdentityAttachKLSparseReg", KL_PARAMS, ("data", "moving_avg"), _kl_shape, _kl_compute,
    lambda c: _kl_grad(c, c.outputs[1]), OPAQUE, aux=("moving_avg",),
    outputs=("output", "moving_avg_new"), num_visible=1, mutates=((1, 1),),
    lowering=COMPOSED, extra={"unroll": composite_unroll(_kl_expand)},
    doc="Identity whose gradient adds the KL sparseness penalty of the per-unit moving "
        "average activation (aux moving_avg, updated in training)."))


def _identity_shape(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    data, avg = ins[0], ins[1] or ins[2]
    return [data, avg, avg], [data, avg]


register(OpDef(
    "_identity_kl_sparse", KL_PARAMS, ("data", "moving_avg", "new_avg"), _identity_shape,
    lambda a, xs, ctx: [xs[0].copy(), xs[2].copy()], lambda c: _kl_grad(c, c.inputs[2]),
    OPAQUE, aux=("moving_avg",), outputs=("output", "moving_avg_new"),
    mutates=((1, 1),), lowering=("copy_each", {"inputs": (0, 2)}),
    doc="IdentityAttachKLSparseReg's expansion: copies of data and of the updated average "
        "new_avg (written back to moving_avg in training); the gradient adds new_avg's KL "
        "term to data's."))
