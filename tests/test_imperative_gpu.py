"""Imperative code on the GPU: programs cached by structure (one compile for a training loop),
changing data copied into program-owned buffers (the user's arrays are never written), results
of earlier steps kept (the program's output buffers are reused), CUDA-graph replay."""
from __future__ import annotations

import numpy as np
import pytest

import symgraph as sg
from symgraph.frontend import autograd as ag
from symgraph.frontend import imperative
from symgraph.interop.test_utils import assert_almost_equal

pytestmark = pytest.mark.gpu


def _step(x, y, params):
    w1, b1, w2, b2 = params
    with ag.record():
        h = sg.nd.relu(sg.nd.FullyConnected(x, w1, b1, num_hidden=32))
        out = sg.nd.FullyConnected(h, w2, b2, num_hidden=10)
        loss = sg.nd.softmax_cross_entropy(out, y)
    loss.backward()
    return loss, out


def _cpu_reference(xs, ys, params):
    cpu = [sg.nd.array(p.asnumpy()) for p in params]
    for p in cpu:
        p.attach_grad()
    return [(_step(sg.nd.array(x), sg.nd.array(y), cpu)[0].asnumpy(),
             [p.grad.asnumpy() for p in cpu]) for x, y in zip(xs, ys)]


def test_loop_compiles_once_and_keeps_every_result(rng) -> None:
    ctx = sg.gpu()
    shapes = [(32, 20), (32,), (10, 32), (10,)]
    params = [sg.nd.array(rng.normal(size=s) * 0.3, ctx) for s in shapes]
    for p in params:
        p.attach_grad()
    xs = [rng.normal(size=(16, 20)).astype(np.float32) for _ in range(6)]
    ys = [rng.integers(0, 10, 16).astype(np.float32) for _ in range(6)]
    want = _cpu_reference(xs, ys, params)
    inputs = [(sg.nd.array(x, ctx), sg.nd.array(y, ctx)) for x, y in zip(xs, ys)]
    losses, count = [], None
    for i, (x, y) in enumerate(inputs):
        loss, _ = _step(x, y, params)
        losses.append(loss)
        assert_almost_equal(params[0].grad.asnumpy(), want[i][1][0], 1e-4, 1e-5)
        if i == 0:
            count = imperative.compile_count()
    assert imperative.compile_count() == count
    for loss, (w, _) in zip(losses, want):  # earlier steps' results are not overwritten
        assert_almost_equal(loss.asnumpy(), w, 1e-5, 1e-6)
    for (x, y), x0, y0 in zip(inputs, xs, ys):  # data copied in, never written
        np.testing.assert_array_equal(x.asnumpy(), x0)
        np.testing.assert_array_equal(y.asnumpy(), y0)


def test_forward_values_and_in_place_updates(rng) -> None:
    ctx = sg.gpu()
    a = sg.nd.array(rng.normal(size=(4, 5)), ctx)
    b = sg.nd.exp(a) * 2 + 1
    assert b.is_pending and b.context == ctx
    assert_almost_equal(b.asnumpy(), np.exp(a.asnumpy()) * 2 + 1, 1e-5, 1e-6)
    old = a.asnumpy()
    c = a * 3
    a[:] = 0  # c was recorded reading the old value
    assert_almost_equal(c.asnumpy(), 3 * old, 1e-6, 1e-6)
    assert float(a.sum().asscalar()) == 0.0
    w = sg.nd.ones(3, ctx)
    w.attach_grad()
    for _ in range(3):
        with ag.record():
            loss = (w * w).sum()
        loss.backward()
        w[:] = w - 0.25 * w.grad
    np.testing.assert_allclose(w.asnumpy(), np.full(3, 0.125), rtol=1e-6)


EXIT_SCRIPT = """
import numpy as np, symgraph as sg
from symgraph import autograd
x = sg.nd.array(np.ones((4, 6), np.float32), ctx=sg.gpu(0))
y = x * 2
x.attach_grad()
with autograd.record():
    loss = (sg.nd.log_softmax(x) * y).sum()
loss.backward()
print(float(y.asnumpy().sum()), float(x.grad.asnumpy().sum()))
"""


def test_a_script_leaving_device_arrays_alive_exits_cleanly() -> None:
    """The script's globals (pool-allocated results among them) are freed after atexit has
    popped the device context; the pool must not take a context then (pycuda aborts)."""
    import subprocess
    import sys
    out = subprocess.run([sys.executable, "-c", EXIT_SCRIPT], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "terminate called" not in out.stderr and "Aborted" not in out.stderr, out.stderr
    assert out.stdout.split()[0] == "48.0"
