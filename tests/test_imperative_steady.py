"""The steady backward (``imperative.steady``): a tape that repeats the previous backward takes
its plan instead of building one. Every step of every case checks the loss and the gradients
against float64 numpy, and counts the reuses (``STATS['steady']``): a step that differs from the
previous one in an op, an attribute, a shape, a gradient buffer, a leaf, a live output or the
head gradients must not reuse the previous plan, and must still give its own results."""
from __future__ import annotations

from typing import Callable, Optional

import numpy as np
import pytest

import symgraph as sg
from symgraph.frontend import autograd as ag
from symgraph.frontend import imperative
from symgraph.frontend.imperative.engine import STATS

ACTS: dict[str, tuple[Callable, Callable]] = {  # name: (value, derivative from the input)
    "relu": (lambda h: np.maximum(h, 0), lambda h: (h > 0).astype(np.float64)),
    "sigmoid": (lambda h: 1 / (1 + np.exp(-h)), lambda h: np.exp(-h) / (1 + np.exp(-h)) ** 2),
}


def _var(x: np.ndarray, req: str = "write") -> sg.nd.NDArray:
    a = sg.nd.array(x, dtype=np.float64)
    a.attach_grad(req)
    return a


def _ref(x: np.ndarray, w: np.ndarray, b: np.ndarray, c: np.ndarray, act: str = "relu",
         scale: float = 1.0, head: float = 1.0) -> tuple:
    """loss = sum(act(scale * (x w^T + b)) * c), and head * its gradients of w and b."""
    h = scale * (x @ w.T + b)
    dh = head * ACTS[act][1](h) * c * scale
    return float((ACTS[act][0](h) * c).sum()), dh.T @ x, dh.sum(axis=0)


def _step(x: np.ndarray, w: sg.nd.NDArray, b: sg.nd.NDArray, c: sg.nd.NDArray,
          act: str = "relu", scale: float = 1.0, keep: Optional[list] = None,
          head: Optional[float] = None) -> sg.nd.NDArray:
    """One recorded step on a new input array; ``keep`` gets the hidden array (a live output)."""
    xa = sg.nd.array(x, dtype=np.float64)
    with ag.record():
        h = sg.nd.FullyConnected(xa, w, b, num_hidden=w.shape[0])
        if scale != 1.0:
            h = h * scale
        loss = (getattr(sg.nd, act)(h) * c).sum()
    if keep is not None:
        keep.append(h)
    del h
    if head is None:
        loss.backward()
    else:
        loss.backward(sg.nd.array(np.full((1,), head), dtype=np.float64))
    return loss


def _check(loss: sg.nd.NDArray, w: sg.nd.NDArray, b: sg.nd.NDArray, ref: tuple) -> None:
    np.testing.assert_allclose(loss.asnumpy().sum(), ref[0], rtol=1e-10)
    np.testing.assert_allclose(w.grad.asnumpy(), ref[1], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(b.grad.asnumpy(), ref[2], rtol=1e-10, atol=1e-12)


@pytest.fixture
def net(rng: np.random.Generator) -> tuple:
    w0, b0, c0 = rng.normal(size=(3, 7)), rng.normal(size=3), rng.normal(size=(6, 3))
    return w0, b0, c0, _var(w0), _var(b0), sg.nd.array(c0, dtype=np.float64)


def test_a_loop_reuses_the_plan_with_a_new_batch_each_step(net: tuple,
                                                           rng: np.random.Generator) -> None:
    w0, b0, c0, w, b, c = net
    before, compiled = STATS["steady"], imperative.compile_count()
    for _ in range(5):
        x = rng.normal(size=(6, 7))
        _check(_step(x, w, b, c), w, b, _ref(x, w0, b0, c0))
    assert STATS["steady"] - before == 4  # every step after the first
    assert imperative.compile_count() - compiled == 1


@pytest.mark.parametrize("change", ["op", "attribute", "shape"])
def test_another_trace_does_not_reuse_the_plan(change: str, net: tuple,
                                               rng: np.random.Generator) -> None:
    """Steps alternate between two traces that differ in one op, one attribute value or one
    input shape: neither takes the other's plan."""
    w0, b0, c0, w, b, c = net
    kinds = {"op": [dict(act="relu"), dict(act="sigmoid")],
             "attribute": [dict(scale=2.0), dict(scale=3.0)],
             "shape": [dict(), dict()]}[change]
    before = STATS["steady"]
    for i in range(4):
        kw = kinds[i % 2]
        n = 9 if change == "shape" and i % 2 else 6
        x = rng.normal(size=(n, 7))
        cc = c if n == 6 else sg.nd.array(np.resize(c0, (n, 3)), dtype=np.float64)
        loss = _step(x, w, b, cc, **kw)
        _check(loss, w, b, _ref(x, w0, b0, cc.asnumpy(), **kw))
    assert STATS["steady"] == before


def test_attach_grad_between_steps(net: tuple, rng: np.random.Generator) -> None:
    """A new gradient buffer (and grad_req 'add') after a step: the next step writes into it,
    the old buffer keeps the earlier step's gradient."""
    w0, b0, c0, w, b, c = net
    x1, x2, x3 = (rng.normal(size=(6, 7)) for _ in range(3))
    _step(x1, w, b, c)
    old = w.grad
    before = STATS["steady"]
    w.attach_grad("add")
    _step(x2, w, b, c)
    _step(x3, w, b, c)
    ref1, ref2, ref3 = (_ref(x, w0, b0, c0) for x in (x1, x2, x3))
    np.testing.assert_allclose(old.asnumpy(), ref1[1], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(w.grad.asnumpy(), ref2[1] + ref3[1], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(b.grad.asnumpy(), ref3[2], rtol=1e-10, atol=1e-12)
    assert STATS["steady"] - before == 1  # the third step repeats the second


def test_a_parameter_replaced_by_a_plain_array(net: tuple, rng: np.random.Generator) -> None:
    """The same trace with a plain array where the weight was: no gradient for it (the weight's
    gradient stays the previous step's); back to the weight: its gradient again."""
    w0, b0, c0, w, b, c = net
    plain = sg.nd.array(w0, dtype=np.float64)
    xs = [rng.normal(size=(6, 7)) for _ in range(3)]
    before = STATS["steady"]
    _check(_step(xs[0], w, b, c), w, b, _ref(xs[0], w0, b0, c0))
    loss = _step(xs[1], plain, b, c)
    ref = _ref(xs[1], w0, b0, c0)
    np.testing.assert_allclose(loss.asnumpy().sum(), ref[0], rtol=1e-10)
    np.testing.assert_allclose(w.grad.asnumpy(), _ref(xs[0], w0, b0, c0)[1], rtol=1e-10)
    np.testing.assert_allclose(b.grad.asnumpy(), ref[2], rtol=1e-10, atol=1e-12)
    _check(_step(xs[2], w, b, c), w, b, _ref(xs[2], w0, b0, c0))
    assert STATS["steady"] == before


def test_live_outputs_and_head_gradients_change(net: tuple, rng: np.random.Generator) -> None:
    """Keeping the hidden array alive in one step and not the next, and a head gradient given
    in one step: each step's kept arrays are computed and its gradients scaled by its head."""
    w0, b0, c0, w, b, c = net
    plan = [dict(), dict(keep=[]), dict(keep=[]), dict(), dict(head=2.5), dict(head=0.5)]
    hits = []
    for kw in plan:
        x = rng.normal(size=(6, 7))
        before = STATS["steady"]
        loss = _step(x, w, b, c, keep=kw.get("keep"), head=kw.get("head"))
        hits.append(STATS["steady"] - before)
        _check(loss, w, b, _ref(x, w0, b0, c0, head=kw.get("head") or 1.0))
        if "keep" in kw:
            h = kw["keep"][0]
            assert not h.is_pending
            np.testing.assert_allclose(h.asnumpy(), x @ w0.T + b0, rtol=1e-10)
    # reused: step 3 (repeats step 2) and step 6 (a head gradient again, another value)
    assert hits == [0, 0, 1, 0, 0, 1]


def test_values_read_between_steps(net: tuple, rng: np.random.Generator) -> None:
    """A graph break (the hidden value read inside record()) leaves the tape: the steps
    around it still reuse nothing they should not, and every gradient is right."""
    w0, b0, c0, w, b, c = net
    for i in range(4):
        x = rng.normal(size=(6, 7))
        xa = sg.nd.array(x, dtype=np.float64)
        with ag.record():
            h = sg.nd.FullyConnected(xa, w, b, num_hidden=3)
            if i == 2:
                np.testing.assert_allclose(h.asnumpy(), x @ w0.T + b0, rtol=1e-10)
            loss = (sg.nd.relu(h) * c).sum()
        loss.backward()
        _check(loss, w, b, _ref(x, w0, b0, c0))


def test_attach_grad_between_record_and_backward(net: tuple, rng: np.random.Generator) -> None:
    """attach_grad after recording a repeated trace: the recorded variable has no gradient
    buffer any more, so its old buffer keeps the previous step's gradient, the new one stays
    zero (what the full plan does: the previous plan must not be reused)."""
    w0, b0, c0, w, b, c = net
    x1, x2, x3 = (rng.normal(size=(6, 7)) for _ in range(3))
    _step(x1, w, b, c)
    _step(x2, w, b, c)
    old = w.grad
    xa = sg.nd.array(x3, dtype=np.float64)
    with ag.record():
        loss = (sg.nd.relu(sg.nd.FullyConnected(xa, w, b, num_hidden=3)) * c).sum()
    w.attach_grad()
    loss.backward()
    np.testing.assert_allclose(old.asnumpy(), _ref(x2, w0, b0, c0)[1], rtol=1e-10, atol=1e-12)
    assert not w.grad.asnumpy().any()
    np.testing.assert_allclose(b.grad.asnumpy(), _ref(x3, w0, b0, c0)[2], rtol=1e-10,
                               atol=1e-12)
