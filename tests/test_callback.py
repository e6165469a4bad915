"""Callbacks: Speedometer output, progress bar off without a terminal, do_checkpoint period,
training curve without matplotlib."""
from __future__ import annotations

import builtins
import io
import logging
import sys
import types

import numpy as np
import pytest

import symgraph as sg
from symgraph.training.callback import BatchEndParam


def test_speedometer_logs_every_frequent(caplog):
    speedo = sg.callback.Speedometer(batch_size=8, frequent=2)
    metric = sg.metric.Accuracy()
    metric.update([np.array([1, 0])], [np.array([[0.1, 0.9], [0.2, 0.8]])])
    with caplog.at_level(logging.INFO):
        for nbatch in range(5):
            speedo(BatchEndParam(0, nbatch, metric, None))
    lines = [r.getMessage() for r in caplog.records if "Speed" in r.getMessage()]
    assert len(lines) == 2  # batches 2 and 4 (batch 0 starts the clock)
    assert lines[0].startswith("Epoch[0] Batch [0-2]") and "accuracy=0.500000" in lines[0]


def test_progress_bar_off_without_terminal():
    stream = io.StringIO()
    bar = sg.callback.ProgressBar(10, stream=stream)
    assert not bar.enabled()
    bar(BatchEndParam(0, 0, None, None))
    assert stream.getvalue() == ""


def test_progress_bar_on_terminal():
    pytest.importorskip("tqdm")

    class Tty(io.StringIO):
        def isatty(self):
            return True
    stream = Tty()
    bar = sg.callback.ProgressBar(4, stream=stream)
    for i in range(4):
        bar(BatchEndParam(0, i, None, None))
    bar.close()
    assert "epoch 0" in stream.getvalue() and bar._bar is None


def test_do_checkpoint_period(tmp_path):
    net = sg.sym.SoftmaxOutput(sg.sym.FullyConnected(sg.sym.var("data"), num_hidden=2,
                                                     name="fc"), name="softmax")
    cb = sg.callback.do_checkpoint(str(tmp_path / "m"), period=2)
    arg = {"fc_weight": sg.nd.ones((2, 3)), "fc_bias": sg.nd.zeros((2,))}
    for epoch in range(4):
        cb(epoch, net, arg, {})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m-0002.params", "m-0004.params",
                                                          "m-symbol.json"]
    sym, arg2, aux2 = sg.model.load_checkpoint(str(tmp_path / "m"), 4)
    assert sym.list_arguments() == net.list_arguments() and aux2 == {}
    np.testing.assert_array_equal(arg2["fc_weight"].asnumpy(), np.ones((2, 3)))


def test_curve_without_matplotlib(tmp_path, monkeypatch, caplog):
    real_import = builtins.__import__

    def no_mpl(name, *a, **k):
        if name.startswith("matplotlib"):
            raise ImportError(name)
        return real_import(name, *a, **k)
    monkeypatch.setattr(builtins, "__import__", no_mpl)
    from symgraph.training.plot import plot_history
    with caplog.at_level(logging.WARNING):
        assert plot_history([{"epoch": 0, "train-accuracy": 0.5}], str(tmp_path / "c.png"),
                            logging) is False
    assert "matplotlib is not installed (pip install 'symgraph[plot]')" in caplog.text
    assert not (tmp_path / "c.png").exists()


def _read_events(folder):
    """(tag, step, value) of every scalar in the TFRecord event files of ``folder``, parsed
    with the protobuf classes only (no TensorBoard reader)."""
    import struct
    from pathlib import Path
    event_pb2 = pytest.importorskip("tensorboardX.proto.event_pb2")
    out = []
    for path in sorted(Path(folder).glob("events.out.tfevents.*")):
        data = path.read_bytes()
        pos = 0
        while pos < len(data):
            (length,) = struct.unpack("<Q", data[pos:pos + 8])
            event = event_pb2.Event.FromString(data[pos + 12:pos + 12 + length])
            pos += 12 + length + 4
            for v in event.summary.value:
                out.append((v.tag, event.step, v.simple_value))
    return out


def test_log_metrics_callback_writes_tensorboard_scalars(tmp_path):
    pytest.importorskip("tensorboardX")
    rng = np.random.default_rng(0)
    x, y = rng.random((24, 5)).astype(np.float32), rng.integers(0, 2, 24).astype(np.float32)
    net = sg.sym.SoftmaxOutput(sg.sym.FullyConnected(sg.sym.var("data"), num_hidden=2,
                                                     name="fc"), name="softmax")
    mod = sg.mod.Module(net)
    train_cb = sg.callback.LogMetricsCallback(str(tmp_path / "train"))
    val_cb = sg.callback.LogMetricsCallback(str(tmp_path / "val"), prefix="val")
    mod.fit(sg.io.NDArrayIter(x, y, 8), eval_data=sg.io.NDArrayIter(x, y, 8), num_epoch=2,
            batch_end_callback=train_cb, eval_end_callback=val_cb, progress_bar=False)
    train_cb.close()
    val_cb.close()
    train = _read_events(tmp_path / "train")
    assert [(t, s) for t, s, _ in train] == [("accuracy", i) for i in range(6)]
    val = _read_events(tmp_path / "val")
    assert [(t, s) for t, s, _ in val] == [("val-accuracy", 0), ("val-accuracy", 1)]
    accs = [dict(h)["val-accuracy"] for h in mod.history]
    np.testing.assert_allclose([v for _, _, v in val], accs, rtol=1e-6)
    assert "LogMetricsCallback(" in repr(train_cb)


def test_log_metrics_callback_without_tensorboardx(monkeypatch, tmp_path):
    real = builtins.__import__

    def fake(name, *a, **k):
        if name.startswith("tensorboardX"):
            raise ImportError("no tensorboardX")
        return real(name, *a, **k)
    monkeypatch.setattr(builtins, "__import__", fake)
    with pytest.raises(ImportError, match=r"symgraph\[tensorboard\]"):
        sg.callback.LogMetricsCallback(str(tmp_path))


def test_log_metrics_callback_with_a_fake_summary_writer(monkeypatch, tmp_path):
    """Runs without tensorboardX: a stand-in SummaryWriter records the calls. The values are
    the accuracies numpy computes from the trained module's predictions."""
    calls = []

    class SummaryWriter:
        def __init__(self, logdir):
            self.logdir = logdir

        def add_scalar(self, tag, value, global_step=None):
            calls.append((self.logdir, tag, float(value), global_step))

        def flush(self):
            calls.append((self.logdir, "flush", None, None))

        def close(self):
            pass
    monkeypatch.setitem(sys.modules, "tensorboardX", types.SimpleNamespace(
        SummaryWriter=SummaryWriter))
    rng = np.random.default_rng(3)
    x, y = rng.random((16, 5)).astype(np.float32), rng.integers(0, 2, 16).astype(np.float32)
    net = sg.sym.SoftmaxOutput(sg.sym.FullyConnected(sg.sym.var("data"), num_hidden=2,
                                                     name="fc"), name="softmax")
    mod = sg.mod.Module(net)
    cb = sg.contrib.tensorboard.LogMetricsCallback(str(tmp_path), prefix="val")  # MXNet's path
    mod.fit(sg.io.NDArrayIter(x, y, 8), eval_data=sg.io.NDArrayIter(x, y, 8), num_epoch=2,
            eval_end_callback=cb, progress_bar=False)
    scalars = [c for c in calls if c[1] != "flush"]
    assert [(d, t, s) for d, t, _, s in scalars] == [(str(tmp_path), "val-accuracy", 0),
                                                     (str(tmp_path), "val-accuracy", 1)]
    pred = mod.predict(sg.io.NDArrayIter(x, None, 8)).asnumpy().argmax(1)
    assert scalars[-1][2] == pytest.approx(float(np.mean(pred == y)))
    assert calls[-1][1] == "flush"  # written after each call, not only at close
