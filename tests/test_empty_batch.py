"""A zero-size batch is refused before a training step runs, naming the input: MXNet 1.9.1
turns a training BatchNorm's running statistics into NaN on an empty batch and fails deep in
backward for a Dense layer; symgraph leaves every parameter and statistic as it was."""
from __future__ import annotations

import numpy as np
import pytest

import symgraph as sg
from symgraph.core.base import ShapeError


def test_empty_batch_through_training_batchnorm_keeps_running_stats() -> None:
    net = sg.gluon.nn.BatchNorm(in_channels=3)
    net.initialize()
    with sg.autograd.record():  # one real batch first: statistics that could be lost
        net(sg.nd.array(np.arange(24, dtype=np.float32).reshape(2, 3, 2, 2))).backward()
    mean, var = net.running_mean.data().asnumpy(), net.running_var.data().asnumpy()
    assert np.all(np.isfinite(mean)) and mean.any()
    with pytest.raises(ShapeError, match=r"'_in0' has shape \(0, 3, 2, 2\).*zero-size"):
        with sg.autograd.record():
            out = net(sg.nd.zeros((0, 3, 2, 2)))
        out.backward()
    np.testing.assert_array_equal(net.running_mean.data().asnumpy(), mean)
    np.testing.assert_array_equal(net.running_var.data().asnumpy(), var)


def test_zero_size_batch_training_step_is_refused_up_front() -> None:
    net = sg.gluon.nn.Dense(2, in_units=3)
    net.initialize()
    trainer = sg.gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
    weight = net.weight.data().asnumpy().copy()
    with pytest.raises(ShapeError, match=r"has shape \(0, 3\).*skip empty"):
        with sg.autograd.record():
            loss = net(sg.nd.zeros((0, 3))).sum()
        loss.backward()
        trainer.step(1)
    np.testing.assert_array_equal(net.weight.data().asnumpy(), weight)


def test_zero_size_batch_still_runs_in_inference() -> None:
    net = sg.gluon.nn.Dense(2, in_units=3)
    net.initialize()
    assert net(sg.nd.zeros((0, 3))).shape == (0, 2)
