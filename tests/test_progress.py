"""Progress on a terminal: log lines print above the tqdm bar (logging_redirect_tqdm), a bar
for validation too, no ``accuracy=nan`` after a Speedometer reset, the ``symgraph`` logger."""
from __future__ import annotations

import io
import logging
import sys

import numpy as np
import pytest

import symgraph as sg

pytest.importorskip("tqdm")


class FakeTTY(io.StringIO):
    def isatty(self) -> bool:
        return True


def _fit(num_epoch: int = 1, monitor: object = None) -> None:
    rng = np.random.default_rng(0)
    x, y = rng.random((40, 6)).astype(np.float32), rng.integers(0, 3, 40).astype(np.float32)
    net = sg.sym.FullyConnected(sg.sym.var("data"), num_hidden=3, name="fc")
    mod = sg.mod.Module(sg.sym.SoftmaxOutput(net, name="softmax"))
    mod.fit(sg.io.NDArrayIter(x, y, 4), eval_data=sg.io.NDArrayIter(x, y, 8),
            num_epoch=num_epoch, batch_end_callback=sg.callback.Speedometer(4, 2),
            monitor=monitor)


@pytest.fixture
def terminal(monkeypatch):
    """A terminal for stdout; the symgraph logger prints to it (as logging.basicConfig would).
    The test installs it as sys.stdout itself: pytest's capture resets sys.stdout after
    fixtures run."""
    tty = FakeTTY()
    handler = logging.StreamHandler(tty)
    logger = logging.getLogger("symgraph")
    old = logger.level, logger.propagate
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    yield tty
    logger.removeHandler(handler)
    logger.setLevel(old[0])
    logger.propagate = old[1]


def test_logs_print_above_the_bar(terminal, monkeypatch):
    monkeypatch.setattr(sys, "stdout", terminal)
    _fit()
    text = terminal.getvalue()
    speed = [line for line in text.split("\n") if "Speed:" in line]
    assert len(speed) == 4  # batches 2, 4, 6, 8 of 10
    for line in speed:  # each log line starts a line of its own, not glued after the bar
        assert line.split("\r")[-1].startswith("Epoch[0] Batch"), repr(line)
    assert "epoch 0" in text and "validate 0" in text  # a bar for training and validation
    assert "nan" not in text  # the bar keeps its last values after Speedometer's reset
    assert "Validation-accuracy" in text


def test_messages_use_the_symgraph_logger(caplog):
    with caplog.at_level(logging.INFO, logger="symgraph"):
        _fit()
    names = {r.name for r in caplog.records}
    assert names == {"symgraph"}
    assert any("Validation-accuracy" in r.getMessage() for r in caplog.records)
    assert sg.mod.Module(sg.sym.var("data")).logger is logging.getLogger("symgraph")


def test_monitor_logs_to_the_symgraph_logger(caplog):
    """Module.fit(monitor=...) reports through sg.monitor.Monitor, on the symgraph logger."""
    with caplog.at_level(logging.INFO, logger="symgraph"):
        _fit(monitor=sg.monitor.Monitor(5, pattern="fc_output"))
    lines = [r for r in caplog.records if "fc_output" in r.getMessage()]
    assert len(lines) == 2 and {r.name for r in lines} == {"symgraph"}  # batches 0 and 5 of 10
    assert lines[0].getMessage().startswith("Batch:       1 fc_output")


def test_each_log_line_once_with_a_configured_root(monkeypatch):
    """As ``symgraph train`` sets up logging (``basicConfig`` on stdout; the symgraph logger
    propagates to it): every message once, above the bar."""
    tty = FakeTTY()
    monkeypatch.setattr(sys, "stdout", tty)
    monkeypatch.setattr(sys, "stderr", tty)  # one terminal shows both streams
    root = logging.getLogger()
    saved = root.handlers[:], root.level
    root.handlers = [logging.StreamHandler(sys.stdout)]
    root.setLevel(logging.INFO)
    try:
        _fit()
        after = root.handlers[:]
    finally:
        root.handlers, _ = saved[0], root.setLevel(saved[1])
    lines = [ln.split("\r")[-1] for ln in tty.getvalue().split("\n")]
    assert sum(ln.startswith("Epoch[0] Batch") for ln in lines) == 4, tty.getvalue()
    assert sum(ln.startswith("Epoch[0] Validation-accuracy") for ln in lines) == 1
    assert "epoch 0" in tty.getvalue()  # the bar was drawn
    assert len(after) == 1 and not logging.getLogger("symgraph").handlers  # restored
