"""Gluon on the GPU (skipped without one): layers, hybridization and the fused Trainer update
give the CPU's results; the benchmark's step compiles nothing after the first step."""
from __future__ import annotations

import numpy as np
import pytest

import symgraph as sg
from symgraph.frontend import autograd
from symgraph import gluon
from symgraph.gluon import nn

pytestmark = pytest.mark.gpu


def _net() -> gluon.HybridBlock:
    net = nn.HybridSequential()
    with net.name_scope():
        net.add(nn.Conv2D(8, 3, padding=1, activation="relu"), nn.BatchNorm(),
                nn.MaxPool2D(), nn.Dense(16, activation="relu"), nn.Dense(4))
    return net


def _train(ctx, hybrid: bool, opt: str, params: dict, steps: int = 3) -> list:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(8, 3, 8, 8)).astype(np.float32)
    y = rng.integers(0, 4, 8).astype(np.int32)
    sg.random.seed(5)
    net = _net()
    net.initialize(sg.init.Xavier(), ctx=ctx)
    if hybrid:
        net.hybridize()
    trainer = gluon.Trainer(net.collect_params(), opt, params)
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    for _ in range(steps):
        with autograd.record():
            loss = loss_fn(net(sg.nd.array(x, ctx)), sg.nd.array(y, ctx, dtype=np.int32))
        loss.backward()
        trainer.step(8)
    return [p.data().asnumpy() for p in net.collect_params().values()]


@pytest.mark.parametrize("hybrid", [False, True])
@pytest.mark.parametrize("opt,params", [("sgd", {"learning_rate": 0.1, "momentum": 0.9}),
                                        ("adam", {"learning_rate": 0.01})])
def test_gpu_training_matches_cpu(hybrid: bool, opt: str, params: dict) -> None:
    cpu = _train(sg.cpu(), hybrid, opt, params)
    gpu = _train(sg.gpu(0), hybrid, opt, params)
    for a, b in zip(cpu, gpu):
        np.testing.assert_allclose(b, a, rtol=1e-3, atol=1e-4)


def test_gpu_trainer_uses_the_fused_update() -> None:
    from symgraph.runtime.cuda.optimizer import FusedUpdater
    net = nn.Dense(3, in_units=4)
    net.initialize(ctx=sg.gpu(0))
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
    with autograd.record():
        loss = net(sg.nd.ones((2, 4), sg.gpu(0))).sum()
    loss.backward()
    trainer.step(2)
    upd = trainer._updaters[0]
    assert isinstance(upd, FusedUpdater) and upd.fused.launches == 1


def test_benchmark_step_compiles_once() -> None:
    from benchmarks.gluon_step import measure
    (gluon_ms, *_), _, compiles = measure(64, sg.gpu(0), repeats=5, rounds=2)
    assert compiles == 0 and gluon_ms > 0
