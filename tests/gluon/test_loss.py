"""gluon.loss against float64 numpy, per sample (mean over the non-batch axes), imperatively
and hybridized; gradients against central differences."""
from __future__ import annotations

import numpy as np
import pytest

import symgraph as sg
from symgraph.frontend import autograd
from symgraph.gluon import loss as gloss

from . import _refs


def _both(block, *arrays) -> tuple:
    nds = [sg.nd.array(a, dtype=a.dtype) for a in arrays]
    first = block(*nds).asnumpy()
    block.hybridize()
    second = block(*nds).asnumpy()
    block.hybridize(False)
    return first, second


def _check(block, ref, *arrays) -> None:
    a, b = _both(block, *arrays)
    np.testing.assert_allclose(a, ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(b, a, rtol=1e-6, atol=1e-7)


def test_softmax_ce_sparse(rng) -> None:
    pred = rng.normal(size=(5, 7)).astype(np.float32)
    label = rng.integers(0, 7, 5).astype(np.int32)
    ref = -_refs.log_softmax(pred.astype(np.float64), 1)[np.arange(5), label]
    _check(gloss.SoftmaxCrossEntropyLoss(), ref, pred, label)
    w = rng.random((5, 1)).astype(np.float32)
    _check(gloss.SoftmaxCrossEntropyLoss(weight=2.0), 2 * ref * w[:, 0], pred, label, w)


def test_softmax_ce_axis_dense_and_logits(rng) -> None:
    pred = rng.normal(size=(3, 4, 5)).astype(np.float32)  # classes on axis 1
    label = rng.integers(0, 4, (3, 5)).astype(np.float32)
    logp = _refs.log_softmax(pred.astype(np.float64), 1)
    picked = np.take_along_axis(logp, label.astype(int)[:, None, :], 1)[:, 0]
    _check(gloss.SoftmaxCrossEntropyLoss(axis=1), -picked.mean(1), pred, label)
    dense = rng.random((3, 4, 5)).astype(np.float32)
    _check(gloss.SoftmaxCrossEntropyLoss(axis=1, sparse_label=False),
           -(logp * dense).sum(1).mean(1), pred, dense)
    lp = logp.astype(np.float32)
    _check(gloss.SoftmaxCrossEntropyLoss(axis=1, from_logits=True), -picked.mean(1), lp,
           label)


def test_l2_l1(rng) -> None:
    pred = rng.normal(size=(4, 3)).astype(np.float32)
    label = rng.normal(size=(4, 3)).astype(np.float32)
    d = label.astype(np.float64) - pred
    _check(gloss.L2Loss(), (0.5 * d * d).mean(1), pred, label)
    _check(gloss.L1Loss(), np.abs(d).mean(1), pred, label)


def test_sigmoid_bce(rng) -> None:
    pred = rng.normal(size=(4, 3)).astype(np.float32) * 3
    label = rng.integers(0, 2, (4, 3)).astype(np.float32)
    p = 1 / (1 + np.exp(-pred.astype(np.float64)))
    ref = -(label * np.log(p) + (1 - label) * np.log(1 - p)).mean(1)
    _check(gloss.SigmoidBinaryCrossEntropyLoss(), ref, pred, label)
    _check(gloss.SigmoidBinaryCrossEntropyLoss(from_sigmoid=True), ref,
           p.astype(np.float32), label)


def test_softmax_ce_gradient_is_softmax_minus_onehot(rng) -> None:
    pred = sg.nd.array(rng.normal(size=(3, 4)))
    label = sg.nd.array([0, 3, 1], dtype=np.int32)
    pred.attach_grad()
    with autograd.record():
        loss = gloss.SoftmaxCrossEntropyLoss()(pred, label)
    loss.backward()
    p = np.exp(_refs.log_softmax(pred.asnumpy().astype(np.float64), 1))
    p[np.arange(3), [0, 3, 1]] -= 1
    np.testing.assert_allclose(pred.grad.asnumpy(), p, rtol=1e-5, atol=1e-6)


def test_loss_errors(rng) -> None:
    with pytest.raises(sg.SymgraphError):
        gloss.L2Loss()(sg.nd.zeros((2, 3)), sg.nd.zeros((2, 4)))
