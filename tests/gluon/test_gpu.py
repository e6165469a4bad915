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


# (GroupAdaGrad takes 2-d weights only; Adamax divides 0 by 0 where a gradient is 0, as
# MXNet's: both are compared in tests/cuda/test_fused_update.py on an MLP)
@pytest.mark.parametrize("opt", sorted(set(sg.optimizer.Optimizer.opt_registry)
                                        - {"groupadagrad", "adamax", "sgd", "adam"}))
def test_every_optimizer_trains_on_the_gpu_as_on_the_cpu(opt: str) -> None:
    """The Trainer's GPU update (fused where the rule allows) gives the CPU's weights."""
    params = {"learning_rate": 0.01, "rescale_grad": 0.5, "clip_gradient": 2.0}
    cpu = _train(sg.cpu(), True, opt, params)
    gpu = _train(sg.gpu(0), True, opt, params)
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


# (``test`` adds the gradient: the weights grow without bound and bfloat16 rounding with
# them; its float32 step is compared in tests/cuda/test_fused_update.py)
@pytest.mark.parametrize("opt", sorted(k for k, c in sg.optimizer.Optimizer.opt_registry.items()
                                        if c.fused and k not in ("adamax", "test")))
def test_bfloat16_weights_with_master_copies_update_fused_as_the_cpu(opt: str) -> None:
    """A bfloat16 network under ``multi_precision`` takes the fused update on the GPU (one
    launch for all parameters, float32 master copies) and gives the CPU's numpy weights."""
    from symgraph.runtime.cuda.optimizer import FusedUpdater
    rng = np.random.default_rng(1)
    x = rng.normal(size=(16, 12)).astype(np.float32)
    params = {"learning_rate": 0.05, "multi_precision": True, "wd": 1e-3}
    if opt == "sgd":
        params["momentum"] = 0.9
    got = []
    for ctx in (sg.cpu(), sg.gpu(0)):
        sg.random.seed(3)
        net = nn.HybridSequential()
        net.add(nn.Dense(8, activation="relu", in_units=12), nn.Dense(4, in_units=8))
        net.initialize(sg.init.Xavier(), ctx=ctx)
        net.cast("bfloat16")
        net.hybridize()
        trainer = gluon.Trainer(net.collect_params(), opt, params)
        for _ in range(3):
            with autograd.record():
                loss = (net(sg.nd.array(x, ctx).astype("bfloat16")) ** 2).sum()
            loss.backward()
            trainer.step(16)
        got.append([p.data().astype("float32").asnumpy()
                    for p in net.collect_params().values()])
        if ctx.device_type == "gpu":
            assert isinstance(trainer._updaters[0], FusedUpdater)
    for c, g in zip(*got):
        np.testing.assert_allclose(g, c, rtol=2e-2, atol=2e-2)
