"""gluon.loss.CTCLoss and the CTCLoss op against a brute-force sum over every alignment
(float64), in both layouts, with lengths, imperatively and hybridized; its gradient against
central differences of that sum."""
from __future__ import annotations

import numpy as np
import pytest

import symgraph as sg
from symgraph.gluon import loss as gloss

from ._loss_refs import ctc_brute, numeric_grad

T, N, C = 4, 3, 4  # 256 alignments per sequence
BLANK = C - 1      # gluon's CTCLoss: blank_label='last', labels padded with -1


def _labels() -> np.ndarray:
    return np.array([[0, 1, -1], [2, 2, -1], [1, 0, 2]], dtype=np.float64)


def _brute(pred_tnc: np.ndarray, label: np.ndarray, steps=None, lens=None) -> np.ndarray:
    out = []
    for b in range(pred_tnc.shape[1]):
        seq = [int(v) for v in label[b]]
        n = (seq.index(-1) if -1 in seq else len(seq)) if lens is None else int(lens[b])
        t = pred_tnc.shape[0] if steps is None else int(steps[b])
        out.append(ctc_brute(pred_tnc[:t, b], seq[:n], BLANK))
    return np.array(out)


def _both(block, *arrays) -> list:
    nds = [sg.nd.array(a, dtype=np.float64) for a in arrays]
    first = block(*nds).asnumpy()
    block.hybridize()
    return [first, block(*nds).asnumpy()]


@pytest.mark.parametrize("layout,label_layout", [("NTC", "NT"), ("TNC", "TN"),
                                                 ("TNC", "NT")])
def test_ctc_loss_layouts_match_brute_force(layout: str, label_layout: str) -> None:
    tnc = np.random.default_rng(0).normal(size=(T, N, C))
    pred = tnc if layout == "TNC" else tnc.transpose(1, 0, 2)
    label = _labels() if label_layout == "NT" else _labels().T
    want = _brute(tnc, _labels())
    for got in _both(gloss.CTCLoss(layout, label_layout), pred, label):
        np.testing.assert_allclose(got, want, rtol=1e-10)


def test_ctc_loss_lengths_and_weights() -> None:
    tnc = np.random.default_rng(1).normal(size=(T, N, C))
    label = np.array([[0, 1, 2], [2, 0, 0], [1, 1, 1]], dtype=np.float64)
    steps, lens = np.array([4.0, 2.0, 3.0]), np.array([2.0, 1.0, 1.0])
    sw = np.array([0.5, 1.0, 2.0])
    want = 1.5 * sw * _brute(tnc, label, steps, lens)
    block = gloss.CTCLoss("TNC", weight=1.5)
    for got in _both(block, tnc, label, steps, lens, sw):
        np.testing.assert_allclose(got, want, rtol=1e-10)
    only_label = _brute(tnc, label, None, lens)
    got = gloss.CTCLoss("TNC")(sg.nd.array(tnc, dtype=np.float64), sg.nd.array(label),
                               None, sg.nd.array(lens))
    np.testing.assert_allclose(got.asnumpy(), only_label, rtol=1e-10)


@pytest.mark.parametrize("hybrid", [False, True])
def test_ctc_gradient_matches_central_differences(hybrid: bool) -> None:
    ntc = np.random.default_rng(2).normal(size=(N, T, C))
    head = np.array([1.0, 0.5, 2.0])
    block = gloss.CTCLoss()
    block.hybridize(hybrid)
    x = sg.nd.array(ntc, dtype=np.float64)
    x.attach_grad()
    with sg.autograd.record():
        out = block(x, sg.nd.array(_labels()))
    out.backward(sg.nd.array(head, dtype=np.float64))
    numeric = numeric_grad(
        lambda v: float((_brute(v.transpose(1, 0, 2), _labels()) * head).sum()), ntc)
    np.testing.assert_allclose(x.grad.asnumpy(), numeric, rtol=1e-6, atol=1e-8)


def test_impossible_alignment_has_infinite_loss_and_zero_gradient() -> None:
    # "2 2" needs a blank between the repeats: 3 steps; 2 steps cannot emit it
    x = sg.nd.array(np.zeros((2, 1, C)), dtype=np.float64)
    x.attach_grad()
    with sg.autograd.record():
        out = sg.nd.ctc_loss(x, sg.nd.array([[2.0, 2.0]]), blank_label="last")
    out.backward()
    assert np.isinf(out.asnumpy()[0])
    np.testing.assert_array_equal(x.grad.asnumpy(), 0.0)


def test_blank_first_pads_with_zero() -> None:
    tnc = np.random.default_rng(3).normal(size=(T, 1, C))
    got = sg.nd.ctc_loss(sg.nd.array(tnc, dtype=np.float64), sg.nd.array([[3.0, 1.0, 0.0]]))
    np.testing.assert_allclose(got.asnumpy(), [ctc_brute(tnc[:, 0], [3, 1], 0)], rtol=1e-10)
