"""The caches of the per-step host path (the step benchmark) change no result: op calls
seen before (``FAST_CALLS``), the program cache on a changed op sequence, shape or attribute,
the Trainer's gathered parameters, the optimizer's remembered scalar rows, and interned
contexts. Each is checked against hand-computed float64 values or against the uncached path."""
from __future__ import annotations

import pickle

import numpy as np
import pytest

import symgraph as sg
from symgraph.frontend import autograd
from symgraph import gluon
from symgraph.frontend import imperative
from symgraph.gluon import nn


def test_a_repeated_call_with_other_attributes_is_another_op(rng) -> None:
    x = rng.normal(size=(3, 4)).astype(np.float32)
    a = sg.nd.array(x)
    for axis in (0, 1, 0, 1):  # twice each: the second call of each is a FAST_CALLS hit
        np.testing.assert_allclose(sg.nd.sum(a, axis=axis).asnumpy(), x.sum(axis), rtol=1e-6)
    np.testing.assert_allclose(sg.nd.one_hot(sg.nd.array([1, 0]), 3).asnumpy(),
                               np.eye(3)[[1, 0]])  # an attribute given positionally
    d = sg.nd.array([2.0, 1.0])
    # the same call site with the attribute positionally, then an array in its place
    np.testing.assert_allclose(sg.nd.broadcast_add(a, a).asnumpy(), 2 * x, rtol=1e-6)
    np.testing.assert_allclose((a * 2.0).asnumpy(), 2 * x, rtol=1e-6)
    np.testing.assert_allclose((a * 3.0).asnumpy(), 3 * x, rtol=1e-6)
    np.testing.assert_allclose(sg.nd.reshape(a, shape=[4, 3]).asnumpy(), x.reshape(4, 3))
    np.testing.assert_allclose(sg.nd.reshape(a, shape=(2, 6)).asnumpy(), x.reshape(2, 6))
    w = sg.nd.array(rng.normal(size=(2, 4)).astype(np.float32))
    got = sg.nd.FullyConnected(data=a, weight=w, no_bias=True, num_hidden=2)  # named arrays
    np.testing.assert_allclose(got.asnumpy(), x @ w.asnumpy().T, rtol=1e-5)
    got = sg.nd.FullyConnected(data=a, weight=w * 2.0, no_bias=True, num_hidden=2)
    np.testing.assert_allclose(got.asnumpy(), 2 * x @ w.asnumpy().T, rtol=1e-5)
    assert d.shape == (2,)


def _step(net, loss_fn, trainer, x, y) -> None:
    with autograd.record():
        loss = loss_fn(net(x), y)
    loss.backward()
    trainer.step(x.shape[0])


def test_a_changed_trace_misses_the_program_cache(rng) -> None:
    net = nn.Dense(3, in_units=4)
    net.initialize(sg.init.Normal(0.5))
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
    l2 = gluon.loss.L2Loss()
    xs, ys = rng.normal(size=(5, 4)), rng.normal(size=(5, 3))
    x, y = sg.nd.array(xs), sg.nd.array(ys)
    x4, y4 = sg.nd.array(xs[:4]), sg.nd.array(ys[:4])
    _step(net, l2, trainer, x, y)
    before = imperative.compile_count()
    _step(net, l2, trainer, x, y)
    assert imperative.compile_count() == before  # the same trace: a cache hit
    _step(net, gluon.loss.L1Loss(), trainer, x, y)  # another op sequence
    assert imperative.compile_count() == before + 1
    _step(net, l2, trainer, x4, y4)  # another shape
    assert imperative.compile_count() == before + 2
    w = net.weight.data().asnumpy().astype(np.float64)
    with autograd.record():  # another attribute value (the loss weight)
        loss = gluon.loss.L2Loss(weight=3.0)(net(x), y)
    loss.backward()
    assert imperative.compile_count() == before + 3
    r = x.asnumpy() @ w.T + net.bias.data().asnumpy() - y.asnumpy()
    np.testing.assert_allclose(net.weight.grad().asnumpy(), 3.0 / 3 * r.T @ x.asnumpy(),
                               rtol=1e-4)


def test_weights_and_grads_read_between_steps_are_the_hand_values(rng) -> None:
    net = nn.Dense(2, in_units=3)
    net.initialize(sg.init.Normal(0.5))
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1,
                                                          "momentum": 0.5})
    x = rng.normal(size=(4, 3))
    y = rng.normal(size=(4, 2))
    w = net.weight.data().asnumpy().astype(np.float64)
    b = net.bias.data().asnumpy().astype(np.float64)
    mw, mb = np.zeros_like(w), np.zeros_like(b)
    for batch in (4, 4, 2, 4):  # a changed batch size changes the rescale factor
        with autograd.record():
            out = net(sg.nd.array(x.astype(np.float32)))
            loss = ((out - sg.nd.array(y.astype(np.float32))) ** 2).sum() * 0.5
        loss.backward()
        r = x @ w.T + b - y
        np.testing.assert_allclose(net.weight.grad().asnumpy(), r.T @ x, rtol=1e-4, atol=1e-5)
        trainer.step(batch)
        mw, mb = 0.5 * mw - 0.1 * (r.T @ x) / batch, 0.5 * mb - 0.1 * r.sum(0) / batch
        w, b = w + mw, b + mb
        np.testing.assert_allclose(net.weight.data().asnumpy(), w, rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(net.bias.data().asnumpy(), b, rtol=1e-4, atol=1e-6)


def test_trainer_follows_parameter_changes_between_steps(rng) -> None:
    net = nn.Dense(2, in_units=3)
    net.initialize(sg.init.Normal(0.5))
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 1.0})
    x = sg.nd.array(rng.normal(size=(4, 3)).astype(np.float32))

    def backward() -> None:
        with autograd.record():
            loss = net(x).sum()
        loss.backward()
    backward()
    trainer.step(1)
    net.bias.grad_req = "null"  # the bias leaves the trained set
    b = net.bias.data().asnumpy()
    w = net.weight.data().asnumpy()
    backward()
    trainer.step(1)
    np.testing.assert_array_equal(net.bias.data().asnumpy(), b)
    np.testing.assert_allclose(net.weight.data().asnumpy(),
                               w - np.ones((2, 1)) * x.asnumpy().sum(0), rtol=1e-5)
    net.weight.initialize(sg.init.Constant(0.25), force_reinit=True)  # new arrays
    backward()
    trainer.step(1)
    np.testing.assert_allclose(net.weight.data().asnumpy(),
                               0.25 - np.ones((2, 1)) * x.asnumpy().sum(0), rtol=1e-5)
    net.weight.grad_req = "null"  # nothing left to train: a step changes nothing (as MXNet)
    before = net.weight.data().asnumpy().copy()
    trainer.step(1)
    np.testing.assert_array_equal(net.weight.data().asnumpy(), before)


def test_remembered_rows_follow_hyper_parameters() -> None:
    opt = sg.optimizer.create("sgd", learning_rate=0.1, wd=0.01, momentum=0.9,
                              param_idx2name={0: "a_weight", 1: "a_bias"})
    names = opt.rule.scalars
    lr, wd = names.index("lr"), names.index("wd")
    assert [r[lr] for r in opt.step_rows([0, 1])] == [0.1, 0.1]
    opt.set_learning_rate(0.5)
    opt.set_lr_mult({"a_bias": 2.0})
    rows = opt.step_rows([0, 1])
    assert [r[lr] for r in rows] == [0.5, 1.0] and [r[wd] for r in rows] == [0.01, 0.0]
    opt.wd_mult["a_weight"] = 3.0  # edited in place
    assert opt.step_rows([0])[0][wd] == pytest.approx(0.03)
    opt.rescale_grad = 0.25
    assert opt.step_rows([1])[0][names.index("rescale_grad")] == 0.25
    assert opt._index_update_count == {0: 3, 1: 3} and opt.num_update == 3
    sched = sg.optimizer.create("sgd", learning_rate=1.0,
                                lr_scheduler=sg.lr_scheduler.FactorScheduler(1, 0.5))
    got = [sched.step_rows([0])[0][lr] for _ in range(3)]
    assert got == [1.0, 0.5, 0.25]  # scheduled: recomputed every step
    adam = sg.optimizer.create("adam", learning_rate=0.1)
    lr_a = adam.rule.scalars.index("lr")
    got = [adam.step_rows([0])[0][lr_a] for _ in range(2)]
    want = [0.1 * np.sqrt(1 - 0.999 ** t) / (1 - 0.9 ** t) for t in (1, 2)]
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_contexts_compare_hash_and_pickle_by_value() -> None:
    c = sg.context.Context("gpu", 1)
    assert c == sg.gpu(1) and hash(c) == hash(sg.gpu(1)) and {c: 1}[sg.gpu(1)] == 1
    assert sg.cpu() is sg.cpu() and sg.cpu() != sg.gpu(0) and sg.cpu(0) != sg.cpu(1)
    back = pickle.loads(pickle.dumps(sg.gpu(1)))
    assert back == sg.gpu(1) and hash(back) == hash(sg.gpu(1))
    assert sg.cpu() != "cpu(0)"
