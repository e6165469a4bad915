"""LossScaler (overflow: skip and halve; 2000 good steps: double, capped), and a Gluon Trainer
with amp.init_trainer / scale_loss skipping an overflowed step."""
from __future__ import annotations

import numpy as np
import pytest

import symgraph as sg
from symgraph.frontend import amp
from symgraph.frontend import autograd
from symgraph import gluon
from symgraph.frontend.amp import LossScaler
from symgraph.core.base import AttrError


def test_start_halve_on_overflow_double_after_good_steps() -> None:
    s = LossScaler()
    assert s.loss_scale == 2.0 ** 16
    good, bad = [np.ones(3, np.float16)], [np.array([1.0, np.inf], np.float16)]
    assert s.has_overflow(bad) and s.loss_scale == 2.0 ** 15
    assert s.has_overflow([np.array([np.nan], np.float32)]) and s.loss_scale == 2.0 ** 14
    for _ in range(1999):
        assert not s.has_overflow(good)
    assert s.loss_scale == 2.0 ** 14
    assert not s.has_overflow(good)
    assert s.loss_scale == 2.0 ** 15  # 2000 good steps in a row
    s.has_overflow(bad)  # an overflow restarts the count
    for _ in range(1999):
        s.has_overflow(good)
    assert s.loss_scale == 2.0 ** 14


def test_growth_is_capped_and_bf16_grads_are_checked() -> None:
    s = LossScaler(init_scale=2.0 ** 24, scale_seq_len=2)
    for _ in range(4):
        s.has_overflow([sg.nd.ones((2,), dtype="bfloat16")])
    assert s.loss_scale == 2.0 ** 24
    assert s.has_overflow([sg.nd.array([np.inf], dtype="bfloat16")])


def _train_one(scale_overflow: bool) -> tuple[np.ndarray, np.ndarray, float]:
    sg.random.seed(0)
    net = gluon.nn.Dense(3, in_units=4)
    net.initialize(sg.init.Xavier())
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
    amp.init("float16")
    amp.init_trainer(trainer)
    before = net.weight.data().asnumpy().copy()
    x = sg.nd.array(np.ones((2, 4)) * (1e36 if scale_overflow else 1.0))
    with autograd.record():
        loss = (net(x) ** 2).sum()
        with amp.scale_loss(loss, trainer) as scaled:
            pass
    scaled.backward()
    trainer.step(2)
    return before, net.weight.data().asnumpy(), trainer._amp_loss_scaler.loss_scale


def test_trainer_skips_overflowed_step_and_unscales_good_ones() -> None:
    before, after, scale = _train_one(scale_overflow=True)
    np.testing.assert_array_equal(before, after)  # skipped
    assert scale == 2.0 ** 15
    before, after, scale = _train_one(scale_overflow=False)
    # loss = sum((x w^T + b)^2) over 2 rows; d/dw = 2 * sum_rows (y_i) x_i; one SGD step
    net_w = before
    x = np.ones((2, 4))
    # bias starts at zero (Dense default)
    y = x @ net_w.T
    grad = 2 * y.T @ x
    np.testing.assert_allclose(after, before - 0.1 * grad / 2, rtol=1e-4, atol=1e-6)
    assert scale == 2.0 ** 16


def test_init_trainer_needs_a_trainer() -> None:
    amp.init("float16")
    with pytest.raises(AttrError, match="Trainer"):
        amp.init_trainer(sg.optimizer.SGD())
    with pytest.raises(AttrError, match="init_trainer"):
        net = gluon.nn.Dense(1, in_units=1)
        net.initialize()
        with amp.scale_loss(sg.nd.ones((1,)), gluon.Trainer(net.collect_params(), "sgd")):
            pass
