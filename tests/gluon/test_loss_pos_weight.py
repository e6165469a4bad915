"""``SigmoidBinaryCrossEntropyLoss(pred, label, sample_weight, pos_weight)`` against float64
numpy, from logits (stable for large |x|) and from probabilities, and its gradient against
central differences."""
from __future__ import annotations

import numpy as np
import pytest

import symgraph as sg
from symgraph.gluon.loss import SigmoidBinaryCrossEntropyLoss

nd = sg.nd
RNG = np.random.default_rng(5)


def _ref(x: np.ndarray, z: np.ndarray, pw: np.ndarray) -> np.ndarray:
    """-pw z log s(x) - (1 - z) log(1 - s(x)), averaged; -log s(x) = log(1 + e^-x)."""
    return (pw * z * np.logaddexp(0, -x) + (1 - z) * np.logaddexp(0, x)).mean(axis=1)


@pytest.mark.parametrize("from_sigmoid", [False, True])
def test_pos_weight_matches_numpy(from_sigmoid: bool) -> None:
    x = RNG.uniform(-5, 5, size=(6, 4))
    z = RNG.integers(0, 2, size=(6, 4)).astype(np.float64)
    pw = RNG.uniform(0, 10, size=(1, 4))
    pred = 1 / (1 + np.exp(-x)) if from_sigmoid else x
    loss = SigmoidBinaryCrossEntropyLoss(from_sigmoid=from_sigmoid)
    got = loss(nd.array(pred, dtype=np.float64), nd.array(z, dtype=np.float64), None,
               nd.array(pw, dtype=np.float64)).asnumpy()
    np.testing.assert_allclose(got, _ref(x, z, pw), rtol=1e-9, atol=1e-9)


def test_pos_weight_stable_and_differentiable() -> None:
    x = np.array([[-60.0, 0.3, 60.0]])
    z = np.array([[1.0, 0.0, 0.0]])
    pw = np.array([[3.0, 2.0, 0.5]])
    xs = nd.array(x, dtype=np.float64)
    xs.attach_grad()
    with sg.autograd.record():
        out = SigmoidBinaryCrossEntropyLoss()(xs, nd.array(z, dtype=np.float64), None,
                                              nd.array(pw, dtype=np.float64))
    out.backward()
    assert np.isfinite(out.asnumpy()).all()  # (|x| = 60: no overflow)
    np.testing.assert_allclose(out.asnumpy(), _ref(x, z, pw), rtol=1e-9)
    h, num = 1e-6, np.zeros_like(x)
    for i in range(3):
        d = np.zeros_like(x)
        d[0, i] = h
        num[0, i] = (_ref(x + d, z, pw) - _ref(x - d, z, pw))[0] / (2 * h)
    np.testing.assert_allclose(xs.grad.asnumpy(), num, rtol=1e-5, atol=1e-8)
