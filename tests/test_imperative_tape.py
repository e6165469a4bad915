"""The tape (``imperative.trace.Tape``): ``backward()`` takes the nodes recorded since recording
started as its trace instead of walking, when the heads need exactly those nodes. Every case
checks the gradients against float64 numpy, and which path ran (the walk is counted)."""
from __future__ import annotations

import numpy as np
import pytest

import symgraph as sg
from symgraph.frontend import autograd as ag
from symgraph.frontend import imperative
from symgraph.frontend.imperative import compute, trace


def _var(x: np.ndarray) -> sg.nd.NDArray:
    a = sg.nd.array(x, dtype=np.float64)
    a.attach_grad()
    return a


@pytest.fixture
def walks(monkeypatch: pytest.MonkeyPatch) -> list:
    """Counts backward's walks (each appends its roots; forcing a value walks too, apart)."""
    seen: list = []
    real = compute.walk

    def counted(roots, for_backward):  # noqa: ANN001, ANN202
        if for_backward:
            seen.append(roots)
        return real(roots, for_backward)
    monkeypatch.setattr(compute, "walk", counted)
    return seen


def _mlp_ref(x: np.ndarray, w: np.ndarray, b: np.ndarray, c: np.ndarray) -> tuple:
    """loss = sum(relu(x w^T + b) * c): value and gradients of w and b (float64)."""
    h = x @ w.T + b
    mask = (h > 0).astype(np.float64)
    dh = mask * c
    return float((np.maximum(h, 0) * c).sum()), dh.T @ x, dh.sum(axis=0)


def _data(rng: np.random.Generator) -> tuple:
    return (rng.normal(size=(5, 4)), rng.normal(size=(3, 4)), rng.normal(size=3),
            rng.normal(size=(5, 3)))


def _check(loss: sg.nd.NDArray, w: sg.nd.NDArray, b: sg.nd.NDArray, ref: tuple) -> None:
    np.testing.assert_allclose(loss.asnumpy().sum(), ref[0], rtol=1e-10)
    np.testing.assert_allclose(w.grad.asnumpy(), ref[1], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(b.grad.asnumpy(), ref[2], rtol=1e-10, atol=1e-12)


def test_steady_loop_takes_the_tape(rng: np.random.Generator, walks: list) -> None:
    x0, w0, b0, c0 = _data(rng)
    w, b = _var(w0), _var(b0)
    c = sg.nd.array(c0, dtype=np.float64)
    before = imperative.compile_count()
    for step in range(4):
        x = sg.nd.array(x0 + step, dtype=np.float64)  # a new input array every step
        with ag.record():
            loss = (sg.nd.relu(sg.nd.FullyConnected(x, w, b, num_hidden=3)) * c).sum()
        loss.backward()
        _check(loss, w, b, _mlp_ref(x0 + step, w0, b0, c0))
    assert walks == []
    assert imperative.compile_count() - before == 1


@pytest.mark.parametrize("case", ["graph_break", "computed_outside", "pending_outside",
                                  "two_scopes", "two_scopes_computed", "part_of_tape",
                                  "no_tape"])
def test_tape_and_walk_agree(case: str, rng: np.random.Generator, walks: list,
                             monkeypatch: pytest.MonkeyPatch) -> None:
    """Each case as the tape or the walk handles it; gradients always the float64 ones."""
    x0, w0, b0, c0 = _data(rng)
    w, b = _var(w0), _var(b0)
    x = sg.nd.array(x0, dtype=np.float64)
    c = sg.nd.array(c0, dtype=np.float64)
    if case == "no_tape":
        monkeypatch.setattr(trace, "MAX_TAPE", 0)
    scale = sg.nd.array(np.ones((5, 3)), dtype=np.float64)
    if case == "computed_outside":
        scale = sg.nd.ones_like(scale) * 1.0
        scale.wait_to_read()  # a computed value, not recorded: a leaf of the tape
    if case == "pending_outside":
        scale = sg.nd.ones_like(scale) * 1.0  # pending, read under record(): BlockGrad
    rec = ag.record()
    rec.__enter__()
    h = sg.nd.FullyConnected(x, w, b, num_hidden=3)
    if case in ("graph_break", "two_scopes_computed"):
        assert h.asnumpy().shape == (5, 3)
    extra = sg.nd.sum(h * 3.0) if case == "part_of_tape" else None
    if case.startswith("two_scopes"):  # recording stops and starts again: a new tape
        rec.__exit__(None, None, None)
        rec = ag.record()
        rec.__enter__()
    loss = (sg.nd.relu(h) * c * scale).sum()
    rec.__exit__(None, None, None)
    loss.backward()
    _check(loss, w, b, _mlp_ref(x0, w0, b0, c0))
    walked = case in ("pending_outside", "two_scopes", "two_scopes_computed", "part_of_tape",
                      "no_tape")
    assert len(walks) == int(walked)
    if extra is not None:  # not needed by the loss: still pending, computes on its own
        np.testing.assert_allclose(extra.asnumpy(), (x0 @ w0.T + b0).sum() * 3.0)


def test_retain_graph_second_backward_walks(rng: np.random.Generator, walks: list) -> None:
    x0, w0, b0, c0 = _data(rng)
    w, b = _var(w0), _var(b0)
    x, c = sg.nd.array(x0, dtype=np.float64), sg.nd.array(c0, dtype=np.float64)
    with ag.record():
        loss = (sg.nd.relu(sg.nd.FullyConnected(x, w, b, num_hidden=3)) * c).sum()
    loss.backward(retain_graph=True)
    loss.backward()
    assert len(walks) == 1  # the tape ended with the first backward
    _check(loss, w, b, _mlp_ref(x0, w0, b0, c0))


def test_attach_grad_between_steps_changes_the_program(rng: np.random.Generator) -> None:
    """A new attach_grad (another variable node) is another key: gradients land in the new
    buffer (grad_req 'add' accumulates)."""
    x0, w0, b0, c0 = _data(rng)
    w, b = _var(w0), _var(b0)
    x, c = sg.nd.array(x0, dtype=np.float64), sg.nd.array(c0, dtype=np.float64)

    def step() -> None:
        with ag.record():
            loss = (sg.nd.relu(sg.nd.FullyConnected(x, w, b, num_hidden=3)) * c).sum()
        loss.backward()
    step()
    w.attach_grad("add")
    step()
    step()
    ref = _mlp_ref(x0, w0, b0, c0)
    np.testing.assert_allclose(w.grad.asnumpy(), 2 * ref[1], rtol=1e-10)
    np.testing.assert_allclose(b.grad.asnumpy(), ref[2], rtol=1e-10)


def test_failed_call_is_not_on_the_tape(rng: np.random.Generator, walks: list) -> None:
    x0, w0, b0, c0 = _data(rng)
    w, b = _var(w0), _var(b0)
    x, c = sg.nd.array(x0, dtype=np.float64), sg.nd.array(c0, dtype=np.float64)
    with ag.record():
        h = sg.nd.FullyConnected(x, w, b, num_hidden=3)
        with pytest.raises(sg.base.ShapeError):
            sg.nd.dot(h, c)  # (5, 3) x (5, 3): raised at the call
        loss = (sg.nd.relu(h) * c).sum()
    loss.backward()
    assert walks == []
    _check(loss, w, b, _mlp_ref(x0, w0, b0, c0))


def test_long_recording_stops_following(rng: np.random.Generator, walks: list,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(trace, "MAX_TAPE", 3)
    x0, w0, b0, c0 = _data(rng)
    w, b = _var(w0), _var(b0)
    x, c = sg.nd.array(x0, dtype=np.float64), sg.nd.array(c0, dtype=np.float64)
    with ag.record():
        loss = (sg.nd.relu(sg.nd.FullyConnected(x, w, b, num_hidden=3)) * c).sum()
    tape = imperative.thread_state().tape
    assert not tape.ok and tape.nodes == []
    loss.backward()
    assert len(walks) == 1
    _check(loss, w, b, _mlp_ref(x0, w0, b0, c0))
