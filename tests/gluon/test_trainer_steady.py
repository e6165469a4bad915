"""``gluon.Trainer``'s steady step (one context, every gradient fresh: the update runs from the
gathered arrays) against a float64 numpy reference over several steps, and the cases that must
leave it: stale gradients, a replaced gradient buffer, ``allreduce_grads``/``update``."""
from __future__ import annotations

import numpy as np
import pytest

import symgraph as sg
from symgraph.frontend import autograd
from symgraph import gluon
from symgraph.core.base import ExecutionError
from symgraph.gluon import nn


def _net() -> gluon.Block:
    net = nn.HybridSequential()
    with net.name_scope():
        net.add(nn.Dense(5, activation="relu", in_units=4), nn.Dense(3, in_units=5))
    net.initialize(sg.init.Normal(0.5))
    return net


def _host(net: gluon.Block) -> dict:
    return {k: p.data().asnumpy().astype(np.float64) for k, p in net.collect_params().items()}


def _ref_grads(p: dict, x: np.ndarray, t: np.ndarray) -> dict:
    """Gradients of 0.5 * sum((dense2(relu(dense1(x))) - t)^2), float64, by hand."""
    names = [next(k for k in p if k.endswith(s)) for s in
             ("dense0_weight", "dense0_bias", "dense1_weight", "dense1_bias")]
    w1, b1, w2, b2 = (p[k] for k in names)
    z = x @ w1.T + b1
    h = np.maximum(z, 0)
    dy = h @ w2.T + b2 - t
    dz = (dy @ w2) * (z > 0)
    return dict(zip(names, (dz.T @ x, dz.sum(0), dy.T @ h, dy.sum(0))))


def _backward(net: gluon.Block, x: np.ndarray, t: np.ndarray) -> None:
    with autograd.record():
        loss = ((net(sg.nd.array(x)) - sg.nd.array(t)) ** 2).sum() * 0.5
    loss.backward()


def test_steps_match_float64_momentum_wd_lr_change(rng: np.random.Generator,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    net = _net()
    names = sorted(net.collect_params())
    net.collect_params()[names[0]].lr_mult = 0.5
    trainer = gluon.Trainer(net.collect_params(), "sgd",
                            {"learning_rate": 0.1, "momentum": 0.9, "wd": 0.01})
    slow = []
    real_update = gluon.Trainer._update
    monkeypatch.setattr(gluon.Trainer, "_update",
                        lambda self, *a: (slow.append(1), real_update(self, *a))[1])
    ref, mom = _host(net), {k: 0.0 for k in names}
    lr = 0.1
    for step, batch in enumerate([6, 6, 3, 6, 4]):
        if step == 3:  # takes effect at the next step, as in MXNet
            trainer.set_learning_rate(0.03)
            lr = 0.03
        x = rng.normal(size=(6, 4))
        t = rng.normal(size=(6, 3))
        g = _ref_grads(ref, x, t)
        _backward(net, x.astype(np.float32), t.astype(np.float32))
        trainer.step(batch)
        for k in names:
            lr_k = lr * (0.5 if k == names[0] else 1.0)
            mom[k] = 0.9 * mom[k] - lr_k * (g[k] / batch + 0.01 * ref[k])
            ref[k] = ref[k] + mom[k]
            p = net.collect_params()[k]
            np.testing.assert_allclose(p.data().asnumpy(), ref[k], rtol=2e-5, atol=2e-6,
                                       err_msg=f"step {step} {k}")
            # the gradient of this step's backward is still there after the update
            np.testing.assert_allclose(p.grad().asnumpy(), g[k], rtol=2e-5, atol=2e-6)
    assert slow == []  # every step was the steady one


def test_stale_gradients_leave_the_steady_step(rng: np.random.Generator) -> None:
    net = _net()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
    x, t = rng.normal(size=(6, 4)).astype(np.float32), rng.normal(size=(6, 3)).astype(
        np.float32)
    _backward(net, x, t)
    trainer.step(6)
    with pytest.raises(ExecutionError, match="no gradients"):
        trainer.step(6)  # no backward since the last step
    before = _host(net)
    trainer.step(6, ignore_stale_grad=True)  # all stale: nothing is updated
    after = _host(net)
    assert all(np.array_equal(before[k], after[k]) for k in before)


def test_replaced_gradient_buffer_is_used(rng: np.random.Generator) -> None:
    """A gradient buffer replaced behind the Trainer's back (attach_grad on the data) is the
    one backward writes and the update reads."""
    net = _net()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
    x, t = rng.normal(size=(6, 4)), rng.normal(size=(6, 3))
    _backward(net, x.astype(np.float32), t.astype(np.float32))
    trainer.step(6)
    for p in net.collect_params().values():
        p.data().attach_grad()
    ref = _host(net)
    g = _ref_grads(ref, x, t)
    _backward(net, x.astype(np.float32), t.astype(np.float32))
    trainer.step(6)
    for k, p in net.collect_params().items():
        np.testing.assert_allclose(p.data().asnumpy(), ref[k] - 0.1 * g[k] / 6, rtol=2e-5,
                                   atol=2e-6)


def test_allreduce_then_update_equals_step(rng: np.random.Generator) -> None:
    nets = [_net(), _net()]
    for p, q in zip(nets[1].collect_params().values(), nets[0].collect_params().values()):
        p.set_data(q.data())
    trainers = [gluon.Trainer(n.collect_params(), "sgd", {"learning_rate": 0.1,
                                                          "momentum": 0.5}) for n in nets]
    for _ in range(3):
        x, t = rng.normal(size=(6, 4)).astype(np.float32), rng.normal(size=(6, 3)).astype(
            np.float32)
        for n in nets:
            _backward(n, x, t)
        trainers[0].step(6)
        trainers[1].allreduce_grads()
        trainers[1].update(6)
    for a, b in zip(_host(nets[0]).values(), _host(nets[1]).values()):
        np.testing.assert_allclose(a, b, rtol=1e-6)
