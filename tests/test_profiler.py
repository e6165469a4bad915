"""sg.profiler: a trace of two CPU training steps is Chrome-trace JSON with one event per
schedule step, named by user-level nodes and ops; dumps() aggregates; MXNet's argument checks."""
from __future__ import annotations

import json
import sys
import types

import numpy as np
import pytest

import symgraph as sg
from symgraph.runtime import profiler


@pytest.fixture(autouse=True)
def clean_profiler():
    profiler.reset_for_tests()
    yield
    profiler.reset_for_tests()


def _module():
    x = sg.sym.var("data")
    x = sg.sym.FullyConnected(x, num_hidden=8, name="fc1")
    x = sg.sym.Activation(x, act_type="relu", name="relu1")
    x = sg.sym.FullyConnected(x, num_hidden=3, name="fc2")
    mod = sg.mod.Module(sg.sym.SoftmaxOutput(x, name="softmax"))
    mod.bind([("data", (4, 6))], [("softmax_label", (4,))])
    mod.init_params()
    mod.init_optimizer()
    rng = np.random.default_rng(0)
    batch = sg.io.DataBatch([sg.nd.array(rng.random((4, 6)))],
                            [sg.nd.array(rng.integers(0, 3, 4).astype(np.float32))])
    return mod, batch


def _train_two_steps(mod, batch):
    for _ in range(2):
        mod.forward_backward(batch)
        mod.update()


def test_trace_of_two_training_steps(tmp_path):
    mod, batch = _module()
    _train_two_steps(mod, batch)  # warm: compile outside the trace
    path = tmp_path / "trace.json"
    sg.profiler.set_config(filename=str(path), profile_all=True)
    sg.profiler.set_state("run")
    _train_two_steps(mod, batch)
    sg.profiler.set_state("stop")
    _train_two_steps(mod, batch)  # not recorded
    sg.profiler.dump()
    trace = json.loads(path.read_text())
    steps = mod._exec._train.schedule.steps
    xs = [e for e in trace["traceEvents"] if e["ph"] == "X" and e["cat"] != "update"]
    assert len(xs) == 2 * len(steps)
    assert [e["args"]["step"] for e in xs] == list(range(len(steps))) * 2
    for e in xs:
        assert set(e) >= {"name", "ph", "ts", "dur", "pid", "tid", "cat"}
        assert e["dur"] >= 0 and e["cat"] in ("forward", "backward")
    assert all(a["ts"] + a["dur"] <= b["ts"] + 1e-3 for a, b in zip(xs, xs[1:]))
    names = [e["name"] for e in xs]
    # CPU fusion puts relu1 with fc1; gradient steps name the forward node they differentiate
    assert "fc1 (FullyConnected) + relu1 (Activation)" in names
    assert any(n.startswith("d relu1 (Activation)") or "d relu1 (Activation)" in n
               for n in names)
    assert not any("fused_" in n for n in names)
    # each optimizer step is one event after its backward steps (it is no schedule step)
    updates = [e for e in trace["traceEvents"] if e.get("cat") == "update"]
    assert [e["name"] for e in updates] == ["update (SGD)"] * 2
    last_backward = [e for e in xs if e["args"]["step"] == len(steps) - 1]
    assert all(b["ts"] + b["dur"] <= u["ts"] + 1e-3 for b, u in zip(last_backward, updates))
    meta = [e for e in trace["traceEvents"] if e["ph"] == "M"]
    assert meta[0]["args"]["name"] == "cpu(0)"
    assert sg.profiler.events() == []  # dump(finished=True) cleared them


def test_dumps_aggregates(tmp_path):
    mod, batch = _module()
    _train_two_steps(mod, batch)
    sg.profiler.set_state("run")
    _train_two_steps(mod, batch)
    sg.profiler.set_state("stop")
    evs = sg.profiler.events()
    stats = json.loads(sg.profiler.dumps(format="json"))["cpu(0)"]
    assert sum(v["count"] for v in stats.values()) == len(evs)
    fc = stats["FullyConnected + Activation"]
    assert fc["count"] == 2
    durs = [e["dur"] / 1000 for e in evs if e["args"]["ops"] == "FullyConnected + Activation"]
    assert fc["total_ms"] == pytest.approx(sum(durs))
    table = sg.profiler.dumps(sort_by="count", reset=True)
    assert "Device cpu(0)" in table and "FullyConnected + Activation" in table
    assert sg.profiler.events() == []


def test_nvtx_ranges_when_installed(monkeypatch):
    opened = []

    class Annotate:
        def __init__(self, message, domain):
            opened.append((message, domain))

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False
    monkeypatch.setitem(sys.modules, "nvtx", types.SimpleNamespace(annotate=Annotate))
    mod, batch = _module()
    sg.profiler.set_state("run")
    mod.forward_backward(batch)
    sg.profiler.set_state("stop")
    assert len(opened) == len(sg.profiler.events()) > 0
    assert {d for _, d in opened} == {"symgraph"}
    assert opened[0][0] == sg.profiler.events()[0]["name"]


def test_pause_resume_and_errors():
    mod, batch = _module()
    sg.profiler.set_state("run")
    sg.profiler.pause()
    mod.forward_backward(batch)
    assert sg.profiler.events() == []
    sg.profiler.resume()
    mod.forward(batch, is_train=False)
    assert sg.profiler.events() and sg.profiler.state() == "run"
    with pytest.raises(sg.AttrError, match="state='go'"):
        sg.profiler.set_state("go")
    with pytest.raises(sg.AttrError, match="nosuch"):
        sg.profiler.set_config(nosuch=1)
    with pytest.raises(sg.AttrError, match="profile_memory=True is not implemented"):
        sg.profiler.set_config(profile_memory=True)
    with pytest.raises(sg.AttrError, match="sort_by='speed'"):
        sg.profiler.dumps(sort_by="speed")


@pytest.mark.gpu
def test_gpu_trace_uses_device_time(tmp_path):
    mod = sg.mod.Module(__import__("symgraph.interop.models.simple_cnn", fromlist=["build"]).build(),
                        context=sg.gpu(0))
    mod.bind([("data", (64, 1, 28, 28))], [("softmax_label", (64,))])
    mod.init_params()
    mod.init_optimizer()
    rng = np.random.default_rng(0)
    batch = sg.io.DataBatch([sg.nd.array(rng.random((64, 1, 28, 28)).astype(np.float32))],
                            [sg.nd.array(rng.integers(0, 10, 64).astype(np.float32))])
    _train_two_steps(mod, batch)
    path = tmp_path / "gpu.json"
    sg.profiler.set_config(filename=str(path), profile_all=True)
    sg.profiler.set_state("run")
    _train_two_steps(mod, batch)
    sg.profiler.set_state("stop")
    print(sg.profiler.dumps())
    sg.profiler.dump()
    trace = json.loads(path.read_text())
    xs = [e for e in trace["traceEvents"] if e["ph"] == "X" and e["cat"] != "update"]
    assert len(xs) == 2 * len(mod._exec._train.schedule.steps)
    meta = [e for e in trace["traceEvents"] if e["ph"] == "M"]
    assert [m["args"]["name"] for m in meta] == ["gpu(0)"]  # updates on the same device
    assert all(e["dur"] > 0 for e in xs)
    updates = [e for e in trace["traceEvents"] if e.get("cat") == "update"]
    assert len(updates) == 2 and all(e["dur"] > 0 for e in updates)


def test_fit_records_each_optimizer_step():
    """A profiled fit: every batch has its schedule steps and one update event."""
    x = sg.sym.FullyConnected(sg.sym.var("data"), num_hidden=3, name="fc")
    mod = sg.mod.Module(sg.sym.SoftmaxOutput(x, name="softmax"))
    rng = np.random.default_rng(1)
    it = sg.io.NDArrayIter(rng.random((12, 5)), rng.integers(0, 3, 12).astype(np.float32), 4)
    sg.profiler.set_state("run")
    mod.fit(it, num_epoch=1, optimizer="adam", progress_bar=False)
    sg.profiler.set_state("stop")
    evs = sg.profiler.events()
    assert [e["name"] for e in evs if e["cat"] == "update"] == ["update (Adam)"] * 3
    steps = len(mod._exec._train.schedule.steps)
    assert sum(e["cat"] in ("forward", "backward") for e in evs) == 3 * steps
    assert "update (Adam)" in sg.profiler.dumps()
