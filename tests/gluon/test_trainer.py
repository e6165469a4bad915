"""gluon.Trainer against hand-written updates (SGD, momentum, Adam), multipliers, stale and
missing gradients, several contexts, and saved optimizer states."""
from __future__ import annotations

import numpy as np
import pytest

import symgraph as sg
from symgraph.frontend import autograd
from symgraph import gluon
from symgraph.core.base import AttrError, ExecutionError
from symgraph.gluon import nn


def _setup(rng, ctx=None):
    net = nn.Dense(3, in_units=4)
    net.initialize(sg.init.Normal(0.5), ctx=ctx)
    x = rng.normal(size=(6, 4)).astype(np.float32)
    y = rng.normal(size=(6, 3)).astype(np.float32)
    return net, x, y


def _grads(net, x, y) -> dict:
    """Gradients of sum((xW^T + b - y)^2)/2 by hand (float64)."""
    w, b = net.weight.data().asnumpy().astype(np.float64), net.bias.data().asnumpy()
    r = x @ w.T + b - y
    return {"weight": r.T @ x, "bias": r.sum(0)}


def _backward(net, x, y, ctx=sg.cpu()) -> None:
    with autograd.record():
        out = net(sg.nd.array(x, ctx))
        loss = ((out - sg.nd.array(y, ctx)) ** 2).sum() * 0.5
    loss.backward()


def test_sgd_step_matches_hand_update(rng) -> None:
    net, x, y = _setup(rng)
    net.bias.wd_mult = 0.5
    net.weight.lr_mult = 2.0
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1, "wd": 0.01})
    w0, b0 = net.weight.data().asnumpy(), net.bias.data().asnumpy()
    g = _grads(net, x, y)
    _backward(net, x, y)
    # atol: float32 rounding of values near zero (the initial weights come from the global
    # random state, so which elements cancel depends on the tests run before)
    np.testing.assert_allclose(net.weight.grad().asnumpy(), g["weight"], rtol=1e-5, atol=1e-5)
    trainer.step(6)
    np.testing.assert_allclose(net.weight.data().asnumpy(),
                               w0 - 0.2 * (g["weight"] / 6 + 0.01 * w0), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(net.bias.data().asnumpy(),
                               b0 - 0.1 * (g["bias"] / 6 + 0.005 * b0), rtol=1e-5, atol=1e-7)
    assert trainer.learning_rate == 0.1
    trainer.set_learning_rate(0.05)
    assert trainer.learning_rate == 0.05


@pytest.mark.parametrize("opt", ["sgd", "adam"])
def test_two_steps_with_state(rng, opt: str) -> None:
    net, x, y = _setup(rng)
    params = {"learning_rate": 0.05, "momentum": 0.9} if opt == "sgd" else \
        {"learning_rate": 0.01}
    trainer = gluon.Trainer(net.collect_params(), opt, params)
    w = net.weight.data().asnumpy().astype(np.float64)
    m = np.zeros_like(w)
    v = np.zeros_like(w)
    for t in (1, 2):
        g = _grads(net, x, y)["weight"] / 6
        _backward(net, x, y)
        trainer.step(6)
        if opt == "sgd":
            m = 0.9 * m - 0.05 * g
            w = w + m
        else:
            m, v = 0.9 * m + 0.1 * g, 0.999 * v + 0.001 * g * g
            lr = 0.01 * np.sqrt(1 - 0.999 ** t) / (1 - 0.9 ** t)
            w = w - lr * m / (np.sqrt(v) + 1e-8)
        np.testing.assert_allclose(net.weight.data().asnumpy(), w, rtol=1e-4, atol=1e-6)


def test_step_without_backward_and_stale_grads(rng) -> None:
    net, x, y = _setup(rng)
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
    with pytest.raises(ExecutionError, match="no gradients"):
        trainer.step(6)
    _backward(net, x, y)
    trainer.step(6)
    with pytest.raises(ExecutionError, match="no gradients"):
        trainer.step(6)  # the same gradients twice
    # Only the weight used: the bias is stale.
    with autograd.record():
        loss = sg.nd.FullyConnected(sg.nd.array(x), net.weight.data(), no_bias=True,
                                    num_hidden=3).sum()
    loss.backward()
    b = net.bias.data().asnumpy()
    with pytest.raises(ExecutionError, match="bias.*ignore_stale_grad"):
        trainer.step(6)
    trainer.step(6, ignore_stale_grad=True)
    np.testing.assert_array_equal(net.bias.data().asnumpy(), b)


def test_bad_arguments(rng) -> None:
    net, _, _ = _setup(rng)
    with pytest.raises(AttrError, match="dist_sync"):
        gluon.Trainer(net.collect_params(), "sgd", kvstore="dist_sync")
    with pytest.raises(AttrError, match="nesterovv"):
        gluon.Trainer(net.collect_params(), "nesterovv")
    with pytest.raises(AttrError, match="Parameters"):
        gluon.Trainer([1, 2], "sgd")


def test_two_contexts_sum_gradients(rng) -> None:
    ctxs = [sg.cpu(0), sg.cpu(1)]
    net, x, y = _setup(rng, ctxs)
    ref, _, _ = _setup(np.random.default_rng(0))
    ref.weight.set_data(net.weight.data(ctxs[0]))
    ref.bias.set_data(net.bias.data(ctxs[0]))
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
    ref_trainer = gluon.Trainer(ref.collect_params(), "sgd", {"learning_rate": 0.1})
    with autograd.record():
        losses = [((net(xs) - ys) ** 2).sum() * 0.5 for xs, ys in
                  zip(gluon.utils.split_and_load(x, ctxs), gluon.utils.split_and_load(y, ctxs))]
    for loss in losses:  # one backward per context (a multi-context backward is refused)
        loss.backward()
    trainer.step(6)
    _backward(ref, x, y)
    ref_trainer.step(6)
    for c in ctxs:
        np.testing.assert_allclose(net.weight.data(c).asnumpy(),
                                   ref.weight.data().asnumpy(), rtol=1e-5, atol=1e-6)


def test_save_load_states(rng, tmp_path) -> None:
    net, x, y = _setup(rng)
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.05,
                                                           "momentum": 0.9})
    _backward(net, x, y)
    trainer.step(6)
    path = str(tmp_path / "t.states")
    trainer.save_states(path)
    saved = {k: p.data().asnumpy() for k, p in net.collect_params().items()}
    _backward(net, x, y)
    trainer.step(6)
    expect = net.weight.data().asnumpy()
    for k, p in net.collect_params().items():
        p.set_data(saved[k])
    fresh = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.05,
                                                         "momentum": 0.9})
    fresh.load_states(path)
    _backward(net, x, y)
    fresh.step(6)
    np.testing.assert_allclose(net.weight.data().asnumpy(), expect, rtol=1e-6)


# GroupAdaGrad takes 2-d parameters only (MXNet asserts it too); this net has a bias
@pytest.mark.parametrize("name", sorted(set(sg.optimizer._REGISTRY) - {"groupadagrad"}))
def test_every_optimizer_by_name_matches_its_updater(rng, name: str) -> None:
    """Trainer(name) moves the weights exactly as sg.optimizer's own updater does on numpy."""
    net, x, y = _setup(rng)
    w0 = net.weight.data().asnumpy()
    g = _grads(net, x, y)["weight"].astype(np.float32)
    trainer = gluon.Trainer(net.collect_params(), name, {"learning_rate": 0.01})
    _backward(net, x, y)
    sg.random.seed(7)  # SGLD: the same noise for the weight (index 0) in both
    trainer.step(6)
    ref = sg.optimizer.create(name, learning_rate=0.01, rescale_grad=1 / 6)
    w = w0.copy()
    sg.random.seed(7)
    sg.optimizer.get_updater(ref)(0, g, w)
    np.testing.assert_allclose(net.weight.data().asnumpy(), w, rtol=1e-5, atol=1e-7)
    assert not np.allclose(w, w0)
