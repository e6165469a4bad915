"""``sg.autograd``: scopes, backward into ``.grad``, grad_req, retain_graph, head gradients,
``grad``/``create_graph``, ``mark_variables``, train/predict mode, errors, and the compile cache
across a training loop (float64 references from numpy)."""
from __future__ import annotations

import numpy as np
import pytest

import symgraph as sg
from symgraph.frontend import autograd as ag
from symgraph.frontend import imperative
from symgraph.interop.test_utils import assert_almost_equal


def _var(x, dtype=np.float64, req="write"):
    a = sg.nd.array(np.asarray(x), dtype=dtype)
    a.attach_grad(req)
    return a


def test_scopes() -> None:
    assert not ag.is_recording() and not ag.is_training()
    with ag.record():
        assert ag.is_recording() and ag.is_training()
        with ag.pause():
            assert not ag.is_recording() and not ag.is_training()
            with ag.train_mode():
                assert ag.is_training() and not ag.is_recording()
        with ag.predict_mode():
            assert ag.is_recording() and not ag.is_training()
    with ag.record(train_mode=False):
        assert ag.is_recording() and not ag.is_training()
    assert not ag.is_recording() and not ag.is_training()
    assert ag.set_recording(True) is False and ag.set_recording(False) is True


def test_backward_writes_grad(rng) -> None:
    x0, w0 = rng.normal(size=(4, 3)), rng.normal(size=(2, 3))
    x, w = _var(x0), _var(w0)
    with ag.record():
        y = sg.nd.tanh(sg.nd.dot(x, w, transpose_b=True))
        loss = (y * y).sum()
    loss.backward()  # outside the scope, as in the seeds
    t = np.tanh(x0 @ w0.T)
    dz = 2 * t * (1 - t ** 2)
    assert_almost_equal(x.grad.asnumpy(), dz @ w0, rtol=1e-10)
    assert_almost_equal(w.grad.asnumpy(), dz.T @ x0, rtol=1e-10)
    assert_almost_equal(loss.asnumpy(), (t * t).sum(), rtol=1e-12)
    assert not y.is_pending  # live intermediates come out of the same run


def test_grad_req_add_and_write(rng) -> None:
    x0 = rng.normal(size=5)
    xa, xw = _var(x0, req="add"), _var(x0)
    for _ in range(3):
        with ag.record():
            la, lw = (xa * xa).sum(), (xw * xw).sum()
        la.backward()
        lw.backward()
    assert_almost_equal(xa.grad.asnumpy(), 3 * 2 * x0, rtol=1e-12)
    assert_almost_equal(xw.grad.asnumpy(), 2 * x0, rtol=1e-12)


def test_retain_graph() -> None:
    x = _var([1.0, 2.0], req="add")
    with ag.record():
        y = (x * x).sum()
    y.backward(retain_graph=True)
    y.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), [4.0, 8.0])
    with pytest.raises(sg.ExecutionError, match="released by an earlier backward.*retain_graph"):
        y.backward()


def test_head_grads_and_several_heads(rng) -> None:
    x0 = rng.normal(size=(3,))
    x = _var(x0)
    with ag.record():
        a, b = x * 2, sg.nd.exp(x)
    ga, gb = rng.normal(size=3), rng.normal(size=3)
    ag.backward([a, b], [sg.nd.array(ga, dtype=np.float64), sg.nd.array(gb, dtype=np.float64)])
    assert_almost_equal(x.grad.asnumpy(), 2 * ga + np.exp(x0) * gb, rtol=1e-12)
    with ag.record():
        c = x * 3
    c.backward(sg.nd.array(ga, dtype=np.float64))
    assert_almost_equal(x.grad.asnumpy(), 3 * ga, rtol=1e-12)


def test_pause_and_constants(rng) -> None:
    x = _var([1.0, 2.0, 3.0])
    with ag.record():
        y = x * x
        with ag.pause():
            k = x * 10  # not recorded: a constant for the gradient
        z = (y * k).sum()
    z.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), 2 * np.array([1, 2, 3.0]) * [10, 20, 30])
    u = x.detach() * x
    assert u.is_pending


def test_graph_break_inside_record_keeps_the_gradient() -> None:
    x = _var([1.0, -2.0, 3.0])
    with ag.record():
        y = x * x
        if y.sum() > 5:  # forces y: a graph break
            z = (y * x).sum()
        else:
            z = y.sum()
    z.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), 3 * np.array([1.0, 4.0, 9.0]))


def test_grad_and_create_graph(rng) -> None:
    x0 = rng.normal(size=4)
    x = _var(x0)
    with ag.record():
        y = (x ** 3).sum()
    g, = ag.grad(y, x)  # a list, also for one variable (MXNet)
    assert_almost_equal(g.asnumpy(), 3 * x0 ** 2, rtol=1e-12)
    assert np.all(x.grad.asnumpy() == 0)  # grad() leaves .grad alone
    with ag.record():
        y = (x ** 3).sum()
        g2 = ag.grad(y, [x], create_graph=True)[0]
        s = (g2 * g2).sum()  # sum 9 x^4
    s.backward()
    assert_almost_equal(x.grad.asnumpy(), 36 * x0 ** 3, rtol=1e-10)
    other = _var([1.0])
    assert np.all(ag.grad((x * 2).sum() if False else _recorded_sum(x), [other])[0].asnumpy()
                  == 0)


def _recorded_sum(x):
    with ag.record():
        return x.sum()


def test_mark_variables() -> None:
    x, g = sg.nd.array([1.0, 2.0], dtype=np.float64), sg.nd.zeros(2, dtype=np.float64)
    ag.mark_variables([x], [g], "write")
    with ag.record():
        y = (x * x * 0.5).sum()
    y.backward()
    np.testing.assert_allclose(g.asnumpy(), [1.0, 2.0])
    assert x.grad is g
    with pytest.raises(sg.ExecutionError, match="2 variables, 1 gradients"):
        ag.mark_variables([x, x], [g])


def test_errors_name_the_array() -> None:
    x = _var([1.0, 2.0])
    y = x * 2  # outside record()
    with pytest.raises(sg.ExecutionError, match=r"NDArray \(2,\) float64.*not computed under "
                                                 r"autograd.record\(\)"):
        y.backward()
    with pytest.raises(sg.ExecutionError, match="not computed under"):
        sg.nd.ones(3).backward()
    with pytest.raises(sg.ExecutionError, match="not a variable"):
        with ag.record():
            z = x * 3
        ag.grad(z, [sg.nd.ones(2)])
    with pytest.raises(sg.AttrError, match="grad_req"):
        x.attach_grad("sometimes")
    with ag.record():
        w = x * 2
        with pytest.raises(sg.ShapeError, match="broadcast_mul"):  # raised at the call
            w * sg.nd.ones(3)


def test_dropout_follows_training_mode() -> None:
    x = sg.nd.ones((200, 50))
    x.attach_grad()
    with ag.record():
        y = sg.nd.Dropout(x, p=0.5)
    y.backward()  # y is computed by the backward program, with the mask its gradient uses
    v = y.asnumpy()
    assert set(np.unique(v).tolist()) == {0.0, 2.0} and 0.4 < (v == 0).mean() < 0.6
    np.testing.assert_array_equal(x.grad.asnumpy(), v)
    with ag.record(train_mode=False):
        p = sg.nd.Dropout(x, p=0.5)
    np.testing.assert_array_equal(p.asnumpy(), np.ones((200, 50)))
    np.testing.assert_array_equal(sg.nd.Dropout(x, p=0.5).asnumpy(), np.ones((200, 50)))
    with ag.train_mode():
        assert (sg.nd.Dropout(x, p=0.5).asnumpy() == 0).any()


def test_batchnorm_updates_moving_stats_in_training(rng) -> None:
    x0 = rng.normal(2.0, 3.0, size=(8, 3, 2, 2))
    x = sg.nd.array(x0, dtype=np.float64)
    gamma, beta = sg.nd.ones(3, dtype=np.float64), sg.nd.zeros(3, dtype=np.float64)
    mm, mv = sg.nd.zeros(3, dtype=np.float64), sg.nd.ones(3, dtype=np.float64)
    gamma.attach_grad()
    with ag.record():
        y = sg.nd.BatchNorm(x, gamma, beta, mm, mv, fix_gamma=False, momentum=0.9)
    y.backward()
    mean, var = x0.mean(axis=(0, 2, 3)), x0.var(axis=(0, 2, 3))
    assert_almost_equal(mm.asnumpy(), 0.1 * mean, rtol=1e-10)
    assert_almost_equal(mv.asnumpy(), 0.9 + 0.1 * var, rtol=1e-10)
    assert_almost_equal(gamma.grad.asnumpy(), np.zeros(3), atol=1e-9)  # d sum(y)/d gamma = 0
    out = sg.nd.BatchNorm(x, gamma, beta, mm, mv, fix_gamma=False).asnumpy()  # inference
    want = (x0 - (0.1 * mean)[None, :, None, None]) / np.sqrt(
        (0.9 + 0.1 * var)[None, :, None, None] + 1e-3)
    assert_almost_equal(out, want, rtol=1e-8)


def _mlp_step(x, label, params, lr=0.1):
    w1, b1, w2, b2 = params
    with ag.record():
        h = sg.nd.relu(sg.nd.FullyConnected(x, w1, b1, num_hidden=16))
        out = sg.nd.FullyConnected(h, w2, b2, num_hidden=4)
        loss = sg.nd.softmax_cross_entropy(out, label)
    loss.backward()
    for p in params:
        p[:] = p - lr * p.grad
    return loss, out


def test_training_loop_compiles_once_and_matches_numpy(rng) -> None:
    x0, lab0 = rng.normal(size=(8, 5)), rng.integers(0, 4, size=8)
    ws = [rng.normal(size=(16, 5)) * 0.5, np.zeros(16), rng.normal(size=(4, 16)) * 0.5,
          np.zeros(4)]
    params = [_var(w) for w in ws]
    x, label = sg.nd.array(x0, dtype=np.float64), sg.nd.array(lab0, dtype=np.float64)
    _mlp_step(x, label, params)
    count = imperative.compile_count()
    ref = [w.copy() for w in ws]
    ref = _numpy_step(x0, lab0, ref)
    for _ in range(5):
        loss, out = _mlp_step(x, label, params)
        assert not out.is_pending
        ref_loss, ref = _numpy_step(x0, lab0, ref, with_loss=True)
        assert_almost_equal(loss.asnumpy(), [ref_loss], rtol=1e-10)
    assert imperative.compile_count() == count
    for p, r in zip(params, ref):
        assert_almost_equal(p.asnumpy(), r, rtol=1e-9, atol=1e-12)


def _numpy_step(x, lab, ws, lr=0.1, with_loss=False):
    w1, b1, w2, b2 = ws
    h = np.maximum(x @ w1.T + b1, 0)
    o = h @ w2.T + b2
    p = np.exp(o - o.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    loss = -np.log(p[np.arange(len(lab)), lab]).sum()
    d = p.copy()
    d[np.arange(len(lab)), lab] -= 1
    dw2, db2 = d.T @ h, d.sum(0)
    dh = d @ w2 * (h > 0)
    dw1, db1 = dh.T @ x, dh.sum(0)
    new = [w - lr * g for w, g in zip(ws, (dw1, db1, dw2, db2))]
    return (loss, new) if with_loss else new


def test_fresh_gradient_flags() -> None:
    """MXNet's ``_fresh_grad``: set on the variables a backward() wrote, cleared by a new
    gradient buffer (attach_grad) and by gluon.Trainer's update."""
    x, y = _var([1.0]), _var([2.0])
    assert not x._fresh_grad
    with ag.record():
        z = (x * 3).sum()
    z.backward()
    assert x._fresh_grad and not y._fresh_grad
    x.attach_grad()  # a new buffer no backward has written
    assert not x._fresh_grad and x.grad.asnumpy()[0] == 0
    with ag.record():
        z = (x * 3).sum()
    ag.grad([z], [x])  # autograd.grad leaves .grad (and the flag) alone
    assert not x._fresh_grad


class _Sigmoid(ag.Function):
    def forward(self, x):
        y = 1 / (1 + sg.nd.exp(-x))
        self.save_for_backward(y)
        return y

    def backward(self, dy):
        y, = self.saved_tensors
        return dy * y * (1 - y)


class _MulAdd(ag.Function):
    """Two inputs, two outputs: (a * b, a + b)."""

    def forward(self, a, b):
        self.save_for_backward(a, b)
        return a * b, a + b

    def backward(self, d_prod, d_sum):
        a, b = self.saved_tensors
        return d_prod * b + d_sum, d_prod * a + d_sum


def test_autograd_function(rng) -> None:
    x0, a0, b0 = rng.normal(size=4), rng.normal(size=3), rng.normal(size=3)
    x, a, b = _var(x0), _var(a0), _var(b0)
    with ag.record():
        y = _Sigmoid()(x)
        p, s = _MulAdd()(a, b)
        loss = (y * 3).sum() + (p * 2 + s).sum()
    loss.backward()
    sig = 1 / (1 + np.exp(-x0))
    assert_almost_equal(y.asnumpy(), sig, rtol=1e-12)
    assert_almost_equal(x.grad.asnumpy(), 3 * sig * (1 - sig), rtol=1e-10)
    assert_almost_equal(a.grad.asnumpy(), 2 * b0 + 1, rtol=1e-12)
    assert_almost_equal(b.grad.asnumpy(), 2 * a0 + 1, rtol=1e-12)
    out = _Sigmoid()(x)  # not recording: just the forward
    assert_almost_equal(out.asnumpy(), sig, rtol=1e-12)
    f = _Sigmoid()
    f(x)
    with pytest.raises(sg.ExecutionError, match="called once"):
        f(x)


def test_get_symbol(rng) -> None:
    x0, w0 = rng.normal(size=(2, 3)), rng.normal(size=(4, 3))
    x, w = _var(x0), _var(w0)
    with ag.record():
        y = sg.nd.relu(sg.nd.FullyConnected(x, w, num_hidden=4, no_bias=True)) * 2
    sym = ag.get_symbol(y)
    assert sym.list_arguments() == ["var0", "var1"]
    exe = sym.bind(sg.cpu(), {"var0": sg.nd.array(x0, dtype=np.float64),
                              "var1": sg.nd.array(w0, dtype=np.float64)})
    assert_almost_equal(exe.forward()[0].asnumpy(), np.maximum(x0 @ w0.T, 0) * 2, rtol=1e-12)
    assert_almost_equal(y.asnumpy(), np.maximum(x0 @ w0.T, 0) * 2, rtol=1e-12)


def test_reading_a_dropout_before_backward_warns() -> None:
    x = sg.nd.ones((10, 10))
    x.attach_grad()
    with ag.record():
        y = sg.nd.Dropout(x, p=0.5)
        y.asnumpy()  # a graph break: backward computes the mask again
        z = y.sum()
    with pytest.warns(RuntimeWarning, match=r"Dropout.*computed before backward"):
        z.backward()
