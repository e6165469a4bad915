"""Callbacks: Speedometer output, progress bar off without a terminal, do_checkpoint period,
training curve without matplotlib."""
from __future__ import annotations

import builtins
import io
import logging

import numpy as np
import pytest

import symgraph as sg
from symgraph.callback import BatchEndParam


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
    from symgraph.plot import plot_history
    with caplog.at_level(logging.WARNING):
        assert plot_history([{"epoch": 0, "train-accuracy": 0.5}], str(tmp_path / "c.png"),
                            logging) is False
    assert "matplotlib is not installed" in caplog.text
    assert not (tmp_path / "c.png").exists()
