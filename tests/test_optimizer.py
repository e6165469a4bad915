"""Optimizers against PyTorch and independent float64 formulas; schedulers; bad names."""
from __future__ import annotations

import numpy as np
import pytest

import symgraph as sg
from symgraph.core.base import AttrError


def _run(opt, w0, grads):
    w = w0.astype(np.float32).copy()
    upd = sg.optimizer.get_updater(opt)
    for g in grads:
        upd(0, g.astype(np.float32), w)
    return w


def _data(rng, steps=4, shape=(5, 3)):
    return rng.standard_normal(shape), [rng.standard_normal(shape) * 3 for _ in range(steps)]


def test_sgd_momentum_matches_torch(rng):
    torch = pytest.importorskip("torch")
    w0, grads = _data(rng)
    opt = sg.optimizer.SGD(learning_rate=0.1, momentum=0.9, wd=0.01,
                           param_idx2name={0: "fc_weight"})
    ours = _run(opt, w0, grads)
    p = torch.nn.Parameter(torch.tensor(w0))
    topt = torch.optim.SGD([p], lr=0.1, momentum=0.9, weight_decay=0.01)
    for g in grads:
        p.grad = torch.tensor(g)
        topt.step()
    np.testing.assert_allclose(ours, p.detach().numpy(), rtol=1e-5, atol=1e-5)


def test_sgd_plain_clip_rescale_float64(rng):
    w0, grads = _data(rng)
    opt = sg.optimizer.create("sgd", learning_rate=0.2, wd=0.1, rescale_grad=0.5,
                              clip_gradient=0.4, param_idx2name={0: "w_weight"})
    w = w0.copy()
    for g in grads:
        w = w - 0.2 * (np.clip(0.5 * g, -0.4, 0.4) + 0.1 * w)
    np.testing.assert_allclose(_run(opt, w0, grads), w, rtol=1e-5, atol=1e-6)


def test_adam_float64_and_torch(rng):
    torch = pytest.importorskip("torch")
    w0, grads = _data(rng, steps=5)
    lr, b1, b2, eps, wd = 0.01, 0.8, 0.95, 1e-8, 0.02
    opt = sg.optimizer.create("adam", learning_rate=lr, beta1=b1, beta2=b2, epsilon=eps, wd=wd,
                              param_idx2name={0: "x_weight"})
    ours = _run(opt, w0, grads)
    w, m, v = w0.copy(), 0 * w0, 0 * w0
    for t, g in enumerate(grads, 1):
        g = g + wd * w
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        w = w - lr * np.sqrt(1 - b2 ** t) / (1 - b1 ** t) * m / (np.sqrt(v) + eps)
    np.testing.assert_allclose(ours, w, rtol=1e-5, atol=1e-6)
    p = torch.nn.Parameter(torch.tensor(w0))
    topt = torch.optim.Adam([p], lr=lr, betas=(b1, b2), eps=eps, weight_decay=wd)
    for g in grads:
        p.grad = torch.tensor(g)
        topt.step()
    # MXNet and PyTorch place epsilon differently; with eps=1e-8 the results agree closely.
    np.testing.assert_allclose(ours, p.detach().numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("centered", [False, True])
def test_rmsprop_float64(rng, centered):
    w0, grads = _data(rng)
    lr, g1, g2, eps = 0.01, 0.9, 0.8, 1e-6
    opt = sg.optimizer.RMSProp(learning_rate=lr, gamma1=g1, gamma2=g2, epsilon=eps,
                               centered=centered, clip_gradient=2.0)
    w, n, m, d = w0.copy(), 0 * w0, 0 * w0, 0 * w0
    for g in grads:
        g = np.clip(g, -2.0, 2.0)
        n = (1 - g1) * g * g + g1 * n
        if centered:
            m = (1 - g1) * g + g1 * m
            d = g2 * d - lr * g / np.sqrt(n - m * m + eps)
            w = w + d
        else:
            w = w - lr * g / np.sqrt(n + eps)
    np.testing.assert_allclose(_run(opt, w0, grads), w, rtol=1e-4, atol=1e-6)


def test_adagrad_float64(rng):
    w0, grads = _data(rng)
    lr, eps, wd = 0.1, 1e-7, 0.05
    opt = sg.optimizer.create("AdaGrad", learning_rate=lr, eps=eps, wd=wd,
                              param_idx2name={0: "a_weight"})
    w, h = w0.copy(), 0 * w0
    for g in grads:
        h = h + g * g
        w = w - lr * (g / np.sqrt(h + eps) + wd * w)
    np.testing.assert_allclose(_run(opt, w0, grads), w, rtol=1e-5, atol=1e-6)


def test_lr_wd_mult_from_symbol_attrs():
    x = sg.sym.var("x")
    w = sg.sym.var("w_weight", lr_mult=0.5, wd_mult=2.0)
    net = sg.sym.FullyConnected(x, weight=w, num_hidden=2, name="fc")
    opt = sg.optimizer.SGD(learning_rate=1.0, wd=0.1, sym=net,
                           param_idx2name={0: "w_weight", 1: "fc_bias"})
    assert opt._get_lr(0) == 0.5 and opt._get_lr(1) == 1.0
    assert opt._get_wd(0) == pytest.approx(0.2)
    assert opt._get_wd(1) == 0.0  # MXNet: no decay on names other than *_weight/*_gamma
    weight = np.ones(3, np.float32)
    opt.update(0, weight, np.ones(3, np.float32), opt.create_state(0, weight))
    np.testing.assert_allclose(weight, 1 - 0.5 * (1 + 0.2 * 1))


def test_factor_scheduler_in_sgd():
    sched = sg.lr_scheduler.FactorScheduler(step=2, factor=0.5)
    opt = sg.optimizer.SGD(learning_rate=1.0, lr_scheduler=sched)
    w = np.zeros(1, np.float32)
    upd = sg.optimizer.get_updater(opt)
    seen = []
    for _ in range(6):
        before = w.copy()
        upd(0, np.ones(1, np.float32), w)
        seen.append(float(before[0] - w[0]))
    # updates 1,2 at lr 1; 3,4 at 0.5; 5,6 at 0.25
    np.testing.assert_allclose(seen, [1, 1, 0.5, 0.5, 0.25, 0.25])


def test_multifactor_scheduler():
    sched = sg.lr_scheduler.MultiFactorScheduler(step=[2, 5], factor=0.1, base_lr=1.0)
    got = [sched(t) for t in range(1, 8)]
    np.testing.assert_allclose(got, [1, 1, 0.1, 0.1, 0.1, 0.01, 0.01])
    with pytest.raises(AttrError, match="increasing"):
        sg.lr_scheduler.MultiFactorScheduler(step=[5, 2])


def test_rule_is_data():
    rule = sg.optimizer.create("adam").rule
    assert rule.states == ("mean", "var") and "lr" in rule.scalars
    from symgraph.core.expr import Expr
    assert all(isinstance(f, Expr) for f in rule.formulas)
    assert len(rule.formulas) == 1 + len(rule.states)


def test_unknown_optimizer():
    with pytest.raises(AttrError, match="unknown optimizer 'sgdd'.*adam"):
        sg.optimizer.create("sgdd")
    with pytest.raises(AttrError, match="momentun"):
        sg.optimizer.create("sgd", momentun=0.9)


def test_step_scalars_table_and_update_multi(rng):
    names = {0: "a_weight", 1: "b_bias"}
    opt = sg.optimizer.Adam(learning_rate=0.1, wd=0.5, param_idx2name=names)
    opt.lr_mult = {"b_bias": 0.1}
    table = opt.step_scalars([0, 1])
    assert set(table) == set(opt.rule.scalars)
    corr = np.sqrt(1 - 0.999) / (1 - 0.9)  # bias correction of step 1
    np.testing.assert_allclose(table["lr"], [0.1 * corr, 0.01 * corr])
    np.testing.assert_allclose(table["wd"], [0.5, 0.0])
    ws = [rng.standard_normal((3, 2)).astype(np.float32) for _ in range(2)]
    gs = [rng.standard_normal((3, 2)).astype(np.float32) for _ in range(2)]
    together = [w.copy() for w in ws]
    multi = sg.optimizer.Updater(sg.optimizer.Adam(learning_rate=0.1, param_idx2name=names))
    single = sg.optimizer.Updater(sg.optimizer.Adam(learning_rate=0.1, param_idx2name=names))
    for _ in range(3):
        multi.update_multi([0, 1], gs, together)
        for i in (0, 1):
            single(i, gs[i], ws[i])
    for a, b in zip(together, ws):
        np.testing.assert_array_equal(a, b)
