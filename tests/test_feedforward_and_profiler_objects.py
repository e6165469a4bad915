"""``sg.model.FeedForward`` (MXNet's legacy model API over Module), ``model.load_params(prefix,
epoch)``, and the profiler's annotation objects (Domain, Task, Frame, Event, Counter, Marker)."""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import symgraph as sg
from symgraph.core.base import AttrError, DataError


def _net() -> Any:
    x = sg.sym.Variable("data")
    return sg.sym.SoftmaxOutput(sg.sym.FullyConnected(x, num_hidden=2, name="fc"),
                                name="softmax")


def _softmax_ref(X: np.ndarray, arg: dict) -> np.ndarray:
    z = X.astype(np.float64) @ arg["fc_weight"].asnumpy().T.astype(np.float64) + \
        arg["fc_bias"].asnumpy()
    e = np.exp(z - z.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)


def test_feedforward_fits_predicts_saves_and_loads(tmp_path: Any) -> None:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(64, 3)).astype(np.float32)
    y = (X[:, 0] + X[:, 1] > 0).astype(np.float32)
    model = sg.model.FeedForward(_net(), num_epoch=20, learning_rate=0.5,
                                 numpy_batch_size=16)
    model.fit(X, y)
    prob = model.predict(X)
    np.testing.assert_allclose(prob, _softmax_ref(X, model.arg_params), rtol=1e-5, atol=1e-6)
    assert (prob.argmax(1) == y).mean() > 0.9  # a separable problem is learnt
    prefix = str(tmp_path / "ff")
    model.save(prefix)
    arg, _ = sg.model.load_params(prefix, 20)
    np.testing.assert_array_equal(arg["fc_weight"].asnumpy(),
                                  model.arg_params["fc_weight"].asnumpy())
    again = sg.model.FeedForward.load(prefix, 20)
    np.testing.assert_allclose(again.predict(X), prob, rtol=1e-6)
    with pytest.raises(DataError, match="no parameters"):
        sg.model.FeedForward(_net()).predict(X)
    with pytest.raises(DataError, match="num_epoch"):
        sg.model.FeedForward(_net()).fit(X, y)


def test_profiler_objects_record_only_while_running() -> None:
    sg.profiler.reset_for_tests()
    dom = sg.profiler.Domain("io")
    task, counter = dom.new_task("decode"), dom.new_counter("queue", 1)
    task.start()
    task.stop()
    assert sg.profiler.events() == []  # stopped: nothing recorded
    sg.profiler.set_state("run")
    try:
        with sg.profiler.Event("load"):
            pass
        frame = dom.new_frame("batch")
        frame.start()
        frame.stop()
        counter += 4
        counter -= 2
        dom.new_marker("epoch").mark("global")
    finally:
        sg.profiler.set_state("stop")
    got = sg.profiler.events()
    assert [(e["name"], e["ph"]) for e in got] == [
        ("load", "X"), ("batch", "X"), ("queue", "C"), ("queue", "C"), ("epoch", "i")]
    assert [e["args"]["queue"] for e in got if e["ph"] == "C"] == [5, 3]
    assert got[1]["cat"] == "io" and got[1]["dur"] >= 0
    assert "frame batch" in sg.profiler.dumps()  # ranges join the aggregate table
    with pytest.raises(AttrError, match="scope"):
        dom.new_marker("m").mark("galaxy")
    sg.profiler.reset_for_tests()
