"""Pending arrays recorded on the tape are registered in PENDING only when something other than
``backward()``'s tape path needs them there (``Tape.settle``): a walk, a flush, ``waitall``, an
executor run that overwrites arrays they read, an in-place write, a backward that fails. Each
case checks that every such array is still found and computed, with float64 numpy's values."""
from __future__ import annotations

import numpy as np
import pytest

import symgraph as sg
from symgraph.frontend import autograd as ag
from symgraph.core.base import SymgraphError


def _arr(x: np.ndarray, grad: bool = False) -> sg.nd.NDArray:
    a = sg.nd.array(x, dtype=np.float64)
    if grad:
        a.attach_grad()
    return a


@pytest.fixture
def data(rng: np.random.Generator) -> tuple:
    return rng.normal(size=(4, 3)), rng.normal(size=(2, 3))


def test_a_metric_beside_the_loss(data: tuple) -> None:
    """The loss does not need the metric: backward walks, the metric stays pending (PENDING
    must know it) and waitall computes it."""
    x0, w0 = data
    x, w = _arr(x0), _arr(w0, grad=True)
    with ag.record():
        h = sg.nd.FullyConnected(x, w, no_bias=True, num_hidden=2)
        loss = sg.nd.square(h).sum()
        metric = sg.nd.tanh(h)
    loss.backward()
    assert metric.is_pending
    sg.nd.waitall()
    assert not metric.is_pending
    np.testing.assert_allclose(metric.asnumpy(), np.tanh(x0 @ w0.T), rtol=1e-12)
    np.testing.assert_allclose(w.grad.asnumpy(), (2 * x0 @ w0.T).T @ x0, rtol=1e-10)


def test_waitall_and_in_place_inside_record(data: tuple) -> None:
    """waitall() inside record() computes the recorded arrays; `h += 1` on a pending one
    makes it stand for the new value; backward still follows the tape and is right."""
    x0, w0 = data
    x, w = _arr(x0), _arr(w0, grad=True)
    with ag.record():
        h = sg.nd.FullyConnected(x, w, no_bias=True, num_hidden=2)
        sg.nd.waitall()
        assert not h.is_pending
        g = sg.nd.relu(h)
        g += 1.0
        assert g.is_pending
        loss = (g * g).sum()
    loss.backward()
    assert not g.is_pending  # (backward computes every live array of its graph)
    h0 = x0 @ w0.T
    g0 = np.maximum(h0, 0) + 1
    np.testing.assert_allclose(g.asnumpy(), g0, rtol=1e-12)
    np.testing.assert_allclose(loss.asnumpy(), [(g0 * g0).sum()], rtol=1e-12)
    np.testing.assert_allclose(w.grad.asnumpy(), (2 * g0 * (h0 > 0)).T @ x0, rtol=1e-10)


def test_an_executor_run_computes_recorded_arrays_first(data: tuple) -> None:
    """An executor about to overwrite an array (its gradient buffer) that a recorded, pending
    op reads computes that op first, with the old value."""
    x0, w0 = data
    w = _arr(w0, grad=True)
    grad_buf = _arr(np.full((4, 3), 5.0))
    with ag.record():
        seen = sg.nd.relu(grad_buf) * 2.0
        loss = (sg.nd.FullyConnected(_arr(x0), w, no_bias=True, num_hidden=2) ** 2).sum()
    sym = sg.sym.sum(sg.sym.square(sg.sym.var("a")))
    exe = sym.bind(sg.cpu(), {"a": _arr(x0)}, {"a": grad_buf}, "write")
    assert seen.is_pending
    exe.forward(is_train=True)
    exe.backward()  # writes 2 * x0 into grad_buf
    np.testing.assert_allclose(grad_buf.asnumpy(), 2 * x0, rtol=1e-12)
    np.testing.assert_allclose(seen.asnumpy(), np.full((4, 3), 10.0), rtol=1e-12)
    loss.backward()
    np.testing.assert_allclose(w.grad.asnumpy(), (2 * x0 @ w0.T).T @ x0, rtol=1e-10)


def test_a_failed_backward_leaves_arrays_pending_and_computable(data: tuple) -> None:
    """A head gradient of the wrong shape: backward() raises, the recorded arrays are still
    pending and computable; a second, correct backward() works."""
    x0, w0 = data
    x, w = _arr(x0), _arr(w0, grad=True)
    with ag.record():
        h = sg.nd.FullyConnected(x, w, no_bias=True, num_hidden=2)
        out = sg.nd.tanh(h)
    with pytest.raises(SymgraphError):
        out.backward(_arr(np.ones((3, 3))))
    assert h.is_pending
    sg.nd.waitall()
    np.testing.assert_allclose(h.asnumpy(), x0 @ w0.T, rtol=1e-12)
    with ag.record():
        out = sg.nd.tanh(sg.nd.FullyConnected(x, w, no_bias=True, num_hidden=2))
    out.backward()
    t = np.tanh(x0 @ w0.T)
    np.testing.assert_allclose(w.grad.asnumpy(), (1 - t ** 2).T @ x0, rtol=1e-10)


def test_two_scopes_and_a_new_scope_without_backward(data: tuple) -> None:
    """A scope recorded and left without backward, then another: the first scope's arrays
    are still computed by waitall and a loss over both scopes differentiates through both."""
    x0, w0 = data
    x, w = _arr(x0), _arr(w0, grad=True)
    with ag.record():
        first = sg.nd.FullyConnected(x, w, no_bias=True, num_hidden=2)
        unused = sg.nd.exp(first)
    with ag.record():
        loss = (sg.nd.sigmoid(first) * 3.0).sum()
    loss.backward()
    h0 = x0 @ w0.T
    s = 1 / (1 + np.exp(-h0))
    np.testing.assert_allclose(w.grad.asnumpy(), (3 * s * (1 - s)).T @ x0, rtol=1e-10)
    sg.nd.waitall()
    np.testing.assert_allclose(unused.asnumpy(), np.exp(h0), rtol=1e-12)
