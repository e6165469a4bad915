"""gluon.contrib.estimator: one epoch of fit() equals a hand-written numpy SGD loop; the
handlers' checkpoints, early stopping, logging and bad arguments."""
from __future__ import annotations

import io
import logging
import re

import numpy as np
import pytest

import symgraph as sg
from symgraph.core.base import DataError
from symgraph.gluon import nn
from symgraph.gluon.contrib.estimator import (CheckpointHandler, EarlyStoppingHandler,
                                              Estimator, LoggingHandler)

RNG = np.random.default_rng(3)


def _setup(n: int = 12, batch: int = 4):
    x = RNG.normal(size=(n, 3)).astype(np.float32)
    y = RNG.normal(size=(n, 2)).astype(np.float32)
    loader = sg.gluon.data.DataLoader(sg.gluon.data.ArrayDataset(sg.nd.array(x), sg.nd.array(y)),
                                      batch_size=batch)
    net = nn.Dense(2, in_units=3)
    net.initialize()
    return net, loader, x, y


def test_fit_equals_numpy_sgd():
    net, loader, x, y = _setup()
    w = net.weight.data().asnumpy().astype(np.float64)
    b = net.bias.data().asnumpy().astype(np.float64)
    lr = 0.1
    trainer = sg.gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": lr})
    est = Estimator(net, loss=sg.gluon.loss.L2Loss(), trainer=trainer)
    est.logger.setLevel(logging.ERROR)
    est.fit(loader, epochs=1)
    for i in range(0, len(x), 4):  # L2Loss = mean over outputs of (pred - y)^2 / 2, per row
        xb, yb = x[i:i + 4].astype(np.float64), y[i:i + 4].astype(np.float64)
        d = (xb @ w.T + b - yb) / yb.shape[1] / len(xb)  # dL/dpred, averaged over the batch
        w, b = w - lr * d.T @ xb, b - lr * d.sum(0)
    np.testing.assert_allclose(net.weight.data().asnumpy(), w, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(net.bias.data().asnumpy(), b, rtol=1e-4, atol=1e-6)
    assert [m.name for m in est.train_metrics] == ["training l2loss"]
    assert [m.name for m in est.val_metrics] == ["validation l2loss"]


def test_bad_arguments():
    net, loader, _, _ = _setup()
    loss = sg.gluon.loss.L2Loss()
    with pytest.raises(DataError, match="loss"):
        Estimator(net, loss="mse")
    with pytest.raises(DataError, match="metrics"):
        Estimator(net, loss=loss, train_metrics="acc")
    with pytest.raises(DataError, match="Trainer"):
        Estimator(net, loss=loss, trainer="sgd")
    with pytest.raises(DataError, match="context"):
        Estimator(net, loss=loss, context="cpu")
    with pytest.raises(AssertionError):
        Estimator(net, loss=loss, context=[sg.gpu(100)])
    est = Estimator(net, loss=loss, trainer=sg.gluon.Trainer(net.collect_params(), "sgd"))
    with pytest.raises(DataError, match="DataLoader"):
        est.fit([sg.nd.ones((2, 3))], epochs=1)
    with pytest.raises(DataError, match="exactly one"):
        est.fit(loader, epochs=1, batches=2)
    with pytest.raises(DataError, match="outside"):
        est.fit(loader, epochs=1, event_handlers=[LoggingHandler(
            metrics=[sg.metric.RMSE("other")])])


def test_checkpoints_and_resume(tmp_path):
    net, loader, _, _ = _setup()
    est = Estimator(net, loss=sg.gluon.loss.L2Loss(),
                    trainer=sg.gluon.Trainer(net.collect_params(), "sgd"))
    est.logger.setLevel(logging.ERROR)
    ckpt = CheckpointHandler(str(tmp_path), "m", monitor=est.train_metrics[0], save_best=True,
                             mode="min", max_checkpoints=2)
    est.fit(loader, epochs=3, event_handlers=[ckpt])
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["m-best.params", "m-best.states", "m-epoch1batch6.params",
                     "m-epoch1batch6.states", "m-epoch2batch9.params", "m-epoch2batch9.states"]
    saved = sg.nd.load(str(tmp_path / "m-epoch2batch9.params"))
    np.testing.assert_array_equal(saved["weight"].asnumpy(), net.weight.data().asnumpy())
    resume = CheckpointHandler(str(tmp_path), "m", resume_from_checkpoint=True)
    est.fit(loader, epochs=5, event_handlers=[resume])
    assert est.max_epoch == 2 and (tmp_path / "m-epoch4batch15.params").is_file()


def test_early_stopping_and_logging():
    net, loader, _, _ = _setup()
    est = Estimator(net, loss=sg.gluon.loss.L2Loss(),
                    trainer=sg.gluon.Trainer(net.collect_params(), "sgd",
                                             {"learning_rate": 0.0}))
    stream = io.StringIO()
    est.logger.handlers = [logging.StreamHandler(stream)]
    stop = EarlyStoppingHandler(monitor=est.train_metrics[0], patience=1, mode="min")
    log = LoggingHandler(log_interval=2, metrics=est.train_metrics)
    est.fit(loader, epochs=10, event_handlers=[stop, log])
    # learning rate 0: the loss never improves after epoch 0, so epoch 1 stops training
    assert stop.current_epoch == 2 and stop.stopped_epoch == 1
    lines = [ln for ln in stream.getvalue().splitlines() if re.match(r"\[Epoch \d+\]\[Batch", ln)]
    assert len(lines) == 2 * 2  # batches 0 and 2 of 3, in each of 2 epochs
    assert "training l2loss" in lines[0]
