"""autograd's recording state is per thread (as MXNet keeps it): two threads each train their
own Gluon model at the same time and end with the parameters that training them one after the
other gives; the switches set in one thread are not seen in another."""
from __future__ import annotations

import threading

import numpy as np

import symgraph as sg
from symgraph.frontend import autograd
from symgraph import gluon
from symgraph.gluon import nn

STEPS, BATCH = 8, 8


def _net(seed: int, hybrid: bool) -> tuple:
    """A two-layer MLP with parameters drawn from ``seed``, its trainer and its batches."""
    net = nn.HybridSequential()
    net.add(nn.Dense(16, activation="relu"), nn.Dense(4))
    net.initialize()
    net(sg.nd.zeros((BATCH, 10)))  # (deferred shapes)
    rng = np.random.default_rng(seed)
    for p in net.collect_params().values():
        p.set_data(sg.nd.array(rng.normal(0, 0.3, p.shape).astype(np.float32)))
    if hybrid:
        net.hybridize()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
    data = [(rng.normal(size=(BATCH, 10)).astype(np.float32),
             rng.integers(0, 4, BATCH).astype(np.float32)) for _ in range(STEPS)]
    return net, trainer, data


def _train(net, trainer, data, barrier=None) -> None:
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    for x, y in data:
        with autograd.record():
            loss = loss_fn(net(sg.nd.array(x)), sg.nd.array(y))
            if barrier is not None:  # both threads inside record() at once
                barrier.wait(timeout=60)
        loss.backward()
        trainer.step(BATCH)


def _params(net) -> list[np.ndarray]:
    return [p.data().asnumpy() for p in net.collect_params().values()]


def test_two_threads_train_two_models_as_one_after_the_other() -> None:
    want = []
    for seed, hybrid in ((1, False), (2, True)):
        net, trainer, data = _net(seed, hybrid)
        _train(net, trainer, data)
        want.append(_params(net))
    models = [_net(1, False), _net(2, True)]
    barrier, errors = threading.Barrier(2), []

    def work(model: tuple) -> None:
        try:
            _train(*model, barrier=barrier)
        except BaseException as exc:  # (reported by the main thread)
            errors.append(exc)
            barrier.abort()
    threads = [threading.Thread(target=work, args=(m,)) for m in models]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert errors == []
    for (net, _, _), expected in zip(models, want):
        for got, w in zip(_params(net), expected):
            np.testing.assert_allclose(got, w, rtol=1e-6, atol=1e-7)


def test_switches_are_per_thread() -> None:
    seen = {}

    def other() -> None:
        seen["recording"], seen["training"] = autograd.is_recording(), autograd.is_training()
        with autograd.record():
            seen["inside"] = autograd.is_recording()
    with autograd.record():
        t = threading.Thread(target=other)
        t.start()
        t.join(30)
        assert autograd.is_recording() and autograd.is_training()  # (the other's exit)
    assert seen == {"recording": False, "training": False, "inside": True}
