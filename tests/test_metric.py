"""Metrics against hand-computed values; unknown names."""
from __future__ import annotations

import numpy as np
import pytest

import symgraph as sg
from symgraph.core.base import AttrError, DataError


def test_accuracy_and_topk():
    pred = np.array([[0.1, 0.7, 0.2], [0.5, 0.3, 0.2], [0.2, 0.3, 0.5], [0.4, 0.35, 0.25]])
    label = np.array([1, 1, 2, 1])
    acc = sg.metric.create("acc")
    acc.update([sg.nd.array(label)], [sg.nd.array(pred)])
    assert acc.get() == ("accuracy", 0.5)
    top2 = sg.metric.TopKAccuracy(top_k=2)
    top2.update([label], [pred])
    assert top2.get()[1] == 1.0  # sample 1: label 1 is second; sample 3: label 1 second
    assert top2.get()[0] == "top_k_accuracy_2"


def test_cross_entropy_mse_loss():
    pred = np.array([[0.25, 0.75], [0.9, 0.1]])
    ce = sg.metric.create("ce")
    ce.update([np.array([1, 1])], [pred])
    assert ce.get()[1] == pytest.approx(-(np.log(0.75) + np.log(0.1)) / 2)
    mse = sg.metric.MSE()
    mse.update([np.array([1.0, 2.0])], [np.array([[1.5], [2.0]])])
    mse.update([np.array([0.0])], [np.array([[2.0]])])
    assert mse.get()[1] == pytest.approx((0.125 + 4.0) / 2)
    loss = sg.metric.Loss()
    loss.update(None, [np.array([1.0, 2.0, 6.0])])
    assert loss.get()[1] == pytest.approx(3.0)


def test_composite_and_reset():
    m = sg.metric.create(["acc", "ce"])
    m.update([np.array([0])], [np.array([[0.8, 0.2]])])
    names, values = m.get()
    assert names == ["accuracy", "cross-entropy"] and values[0] == 1.0
    m.reset()
    assert np.isnan(m.get()[1][0])


def test_bad_input():
    with pytest.raises(AttrError, match="unknown metric 'accuracyy'"):
        sg.metric.create("accuracyy")
    with pytest.raises(DataError, match="3 labels for 4 predictions"):
        sg.metric.Accuracy().update([np.zeros(3)], [np.zeros((4, 2))])
    with pytest.raises(DataError, match="2 label arrays for 1 outputs"):
        sg.metric.Accuracy().update([np.zeros(3), np.zeros(3)], [np.zeros((3, 2))])
