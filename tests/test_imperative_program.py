"""``Program.train``: backward() runs the executor's training program itself (slots found once
by leaf index) instead of ``Executor.train_step``. Each case checks the values against float64
numpy, and the gradients, outputs and aux updates against ``Executor.train_step`` on the same
graph bound as a symbol (the path backward() took before)."""
from __future__ import annotations

import numpy as np

import symgraph as sg
from symgraph.frontend import autograd as ag


def _arr(x: np.ndarray, req: str = "") -> sg.nd.NDArray:
    a = sg.nd.array(x, dtype=np.float64)
    if req:
        a.attach_grad(req)
    return a


def test_write_add_and_unreached_gradients(rng: np.random.Generator) -> None:
    """'write' and 'add' gradients, and a variable behind BlockGrad (no gradient reaches it:
    'write' zeroes it, 'add' leaves it), over three steps."""
    x0, w0, u0 = rng.normal(size=(4, 5)), rng.normal(size=(2, 5)), rng.normal(size=(4, 2))
    x, w, u = _arr(x0), _arr(w0, "write"), _arr(u0, "add")
    blocked_w, blocked_a = _arr(np.ones((4, 2)), "write"), _arr(np.ones((4, 2)), "add")
    for a in (blocked_w, blocked_a):
        a.grad[:] = 7.0
    for step in range(3):
        with ag.record():
            h = sg.nd.FullyConnected(x, w, no_bias=True, num_hidden=2)
            loss = (sg.nd.tanh(h) * u + sg.nd.BlockGrad(blocked_w) * sg.nd.BlockGrad(
                blocked_a)).sum()
        loss.backward()
        t = np.tanh(x0 @ w0.T)
        np.testing.assert_allclose(loss.asnumpy(), [(t * u0).sum() + 8.0], rtol=1e-12)
        np.testing.assert_allclose(w.grad.asnumpy(), ((1 - t ** 2) * u0).T @ x0, rtol=1e-10)
        np.testing.assert_allclose(u.grad.asnumpy(), (step + 1) * t, rtol=1e-10)
        assert not blocked_w.grad.asnumpy().any()
        np.testing.assert_array_equal(blocked_a.grad.asnumpy(), np.full((4, 2), 7.0))


def test_same_results_as_executor_train_step(rng: np.random.Generator) -> None:
    """BatchNorm in training mode (its running statistics are aux leaves the run updates),
    a head gradient and a kept intermediate: backward() and Executor.train_step agree."""
    x0, g0, b0 = rng.normal(size=(6, 3, 4)), rng.normal(size=3), rng.normal(size=3)
    head = rng.normal(size=(6, 3, 4))
    x, gamma, beta = _arr(x0), _arr(g0, "write"), _arr(b0, "write")
    mean, var = _arr(np.zeros(3)), _arr(np.ones(3))
    with ag.record():
        y = sg.nd.BatchNorm(x, gamma, beta, mean, var, fix_gamma=False, momentum=0.75)
        out = sg.nd.square(y)
    out.backward(_arr(head))

    sym = sg.sym.square(sg.sym.BatchNorm(sg.sym.var("x"), sg.sym.var("g"), sg.sym.var("b"),
                                         sg.sym.var("m"), sg.sym.var("v"), fix_gamma=False,
                                         momentum=0.75, name="bn"))
    args = {"x": _arr(x0), "g": _arr(g0), "b": _arr(b0)}
    grads = {"g": _arr(np.zeros(3)), "b": _arr(np.zeros(3))}
    aux = {"m": _arr(np.zeros(3)), "v": _arr(np.ones(3))}
    exe = sym.bind(sg.cpu(), args, grads, {"x": "null", "g": "write", "b": "write"}, aux)
    ref = exe.train_step(out_grads=[_arr(head)])[0].asnumpy()
    np.testing.assert_allclose(out.asnumpy(), ref, rtol=1e-12)
    np.testing.assert_allclose(gamma.grad.asnumpy(), grads["g"].asnumpy(), rtol=1e-12)
    np.testing.assert_allclose(beta.grad.asnumpy(), grads["b"].asnumpy(), rtol=1e-12)
    np.testing.assert_allclose(mean.asnumpy(), aux["m"].asnumpy(), rtol=1e-12)
    np.testing.assert_allclose(var.asnumpy(), aux["v"].asnumpy(), rtol=1e-12)
    mu, sd = x0.mean(axis=(0, 2)), x0.var(axis=(0, 2))
    np.testing.assert_allclose(mean.asnumpy(), 0.25 * mu, rtol=1e-10)  # 0.75 * 0 + 0.25 * mu
    yn = (x0 - mu[None, :, None]) / np.sqrt(sd[None, :, None] + 1e-3)
    np.testing.assert_allclose(y.asnumpy(), yn * g0[None, :, None] + b0[None, :, None],
                               rtol=1e-8)
    np.testing.assert_allclose(beta.grad.asnumpy(), (2 * y.asnumpy() * head).sum(axis=(0, 2)),
                               rtol=1e-8)


def test_recorded_outputs_have_every_slot() -> None:
    """record() writes a pending array's slots inline (not through NDArray.__init__): every
    slot NDArray declares is set, to the values __init__ gives where record has none."""
    x = _arr(np.ones((2, 3)))
    for out in (sg.nd.relu(x), sg.nd.FullyConnected(x, _arr(np.ones((4, 3))), no_bias=True,
                                                    num_hidden=4)):
        fresh = sg.nd.NDArray(None, out.context)
        for slot in sg.nd.NDArray.__slots__:
            if slot == "__weakref__":
                continue
            getattr(out, slot)  # AttributeError if record() left it unset
            if slot not in ("_entry", "_shape", "_dtype", "_recorded"):
                assert getattr(out, slot) == getattr(fresh, slot), slot
