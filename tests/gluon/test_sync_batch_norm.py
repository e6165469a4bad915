"""SyncBatchNorm over two CPU contexts: output, input gradient, gamma/beta gradients and moving
statistics against float64 BatchNorm over the concatenated batch; a data-parallel training
step (split_and_load, Trainer) equal to one device's BatchNorm over the whole batch; a lone
replica warns; a wrong number of replicas is refused."""
from __future__ import annotations

import numpy as np
import pytest

import symgraph as sg
from symgraph import autograd, gluon
from symgraph.core.base import GraphError
from symgraph.gluon import nn

CTXS = [sg.cpu(0), sg.cpu(1)]
GAMMA, BETA, EPS = np.array([1.5, 0.5, 2.0]), np.array([0.1, -0.2, 0.3]), 1e-5


def _layer(ndev: int = 2) -> nn.SyncBatchNorm:
    bn = gluon.contrib.nn.SyncBatchNorm(in_channels=3, num_devices=ndev, momentum=0.8)
    bn.initialize(ctx=CTXS)
    bn.gamma.set_data(sg.nd.array(GAMMA))
    bn.beta.set_data(sg.nd.array(BETA))
    return bn


def _reference(x: np.ndarray, dy: np.ndarray) -> dict:
    """BatchNorm over the whole batch in float64 (channel axis 1): y, dx, dgamma, dbeta."""
    red = (0, 2)
    mu, var = x.mean(axis=red, keepdims=True), x.var(axis=red, keepdims=True)
    g, b = GAMMA[None, :, None], BETA[None, :, None]
    xh = (x - mu) / np.sqrt(var + EPS)
    dx = g / np.sqrt(var + EPS) * (dy - dy.mean(axis=red, keepdims=True)
                                   - xh * (dy * xh).mean(axis=red, keepdims=True))
    return {"y": xh * g + b, "dx": dx, "dgamma": (dy * xh).sum(axis=red),
            "dbeta": dy.sum(axis=red), "mean": mu.ravel(), "var": var.ravel()}


@pytest.mark.parametrize("hybrid", [False, True])
def test_two_devices_equal_one_batchnorm_over_the_whole_batch(rng, hybrid) -> None:
    x = rng.normal(size=(6, 3, 4)) * np.array([1.0, 3.0, 5.0])[:, None] + 2.0
    dy = rng.normal(size=(6, 3, 4))
    bn = _layer()
    if hybrid:
        bn.hybridize()
    xs = gluon.utils.split_and_load(x.astype(np.float32), CTXS, even_split=False)
    dys = gluon.utils.split_and_load(dy.astype(np.float32), CTXS, even_split=False)
    for a in xs:
        a.attach_grad()
    with autograd.record():
        losses = [(bn(a) * d).sum() for a, d in zip(xs, dys)]
    autograd.backward(losses)
    ref = _reference(x, dy)
    np.testing.assert_allclose(np.concatenate([a.grad.asnumpy() for a in xs]), ref["dx"],
                               rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(sum(bn.gamma.grad(c).asnumpy() for c in CTXS), ref["dgamma"],
                               rtol=1e-4)
    np.testing.assert_allclose(sum(bn.beta.grad(c).asnumpy() for c in CTXS), ref["dbeta"],
                               rtol=1e-4)
    for c in CTXS:  # every replica's moving statistics move with the global ones
        np.testing.assert_allclose(bn.running_mean.data(c).asnumpy(), 0.2 * ref["mean"],
                                   rtol=1e-5)
        np.testing.assert_allclose(bn.running_var.data(c).asnumpy(), 0.8 + 0.2 * ref["var"],
                                   rtol=1e-5)


def test_outputs_are_those_of_the_whole_batch(rng) -> None:
    x = rng.normal(size=(4, 3, 2)) * 3.0 + 1.0
    bn = _layer()
    xs = gluon.utils.split_and_load(x.astype(np.float32), CTXS)
    with autograd.record():
        ys = [bn(a) for a in xs]
        losses = [y.sum() for y in ys]
    autograd.backward(losses)
    got = np.concatenate([y.asnumpy() for y in ys])
    np.testing.assert_allclose(got, _reference(x, np.zeros_like(x))["y"], rtol=1e-4, atol=1e-5)


def _net(bn: type, ndev: int) -> nn.HybridSequential:
    net = nn.HybridSequential(prefix="net_")
    with net.name_scope():
        net.add(nn.Dense(4, in_units=5), bn(in_channels=4, num_devices=ndev) if ndev else bn(in_channels=4),
                nn.Activation("relu"), nn.Dense(1, in_units=4))
    return net


def test_trainer_step_matches_batchnorm_on_one_device(rng) -> None:
    x = rng.normal(size=(8, 5)).astype(np.float32)
    t = rng.normal(size=(8, 1)).astype(np.float32)
    sync, single = _net(nn.SyncBatchNorm, 2), _net(nn.BatchNorm, 0)
    sync.initialize(sg.init.Xavier(), ctx=CTXS)
    single.initialize(ctx=sg.cpu())
    pairs = list(zip(sync.collect_params().values(), single.collect_params().values()))
    for p, q in pairs:
        q.set_data(p.data(CTXS[0]))
    opts = {"learning_rate": 0.1, "momentum": 0.9}
    t_sync = gluon.Trainer(sync.collect_params(), "sgd", opts)
    t_single = gluon.Trainer(single.collect_params(), "sgd", opts)
    loss_fn = gluon.loss.L2Loss()
    for _ in range(2):
        with autograd.record():
            losses = [loss_fn(sync(a), b) for a, b in zip(gluon.utils.split_and_load(x, CTXS),
                                                         gluon.utils.split_and_load(t, CTXS))]
        autograd.backward(losses)
        t_sync.step(8)
        with autograd.record():
            loss = loss_fn(single(sg.nd.array(x)), sg.nd.array(t))
        loss.backward()
        t_single.step(8)
    for p, q in pairs:  # weights, gamma, beta and the moving statistics alike
        for c in CTXS:
            np.testing.assert_allclose(p.data(c).asnumpy(), q.data().asnumpy(), rtol=1e-4,
                                       atol=1e-5, err_msg=p.name)


def test_a_lone_replica_warns_and_a_wrong_count_is_refused(rng) -> None:
    x = rng.normal(size=(4, 3, 2)).astype(np.float32)
    bn = _layer()
    xs = gluon.utils.split_and_load(x, CTXS)
    with autograd.record():
        losses = [bn(a).sum() for a in xs]
    with pytest.warns(RuntimeWarning, match="'syncbatchnorm.*1 of its 2 replicas"):
        for loss in losses:  # one device per program: its own batch's statistics
            loss.backward()
    three = _layer(3)
    with autograd.record():
        losses = [three(a).sum() for a in xs]
    with pytest.raises(GraphError, match="2 replicas in one program.*3 devices"):
        autograd.backward(losses)
