"""What a newcomer meets first on the command line and in logs: ``--init`` choices, ``--curve``
without matplotlib or ``--prefix``, the ``--shape`` spellings, Speedometer columns, and drawing a
network without Graphviz's ``dot`` program."""
from __future__ import annotations

import ast
import importlib.util
import itertools
import logging
import re
import types

import numpy as np
import pytest

import symgraph as sg
from symgraph.interop import cli
from symgraph.core.base import ExecutionError


def _usage_error(capsys, argv: list[str]) -> str:
    with pytest.raises(SystemExit) as stop:
        cli.main(argv)
    assert stop.value.code == 2
    return capsys.readouterr().err


def test_unknown_init_lists_pytorch_too(capsys) -> None:
    err = _usage_error(capsys, ["train", "mlp", "--init", "foo"])
    known = re.search(r"known: (\[.*\])", err)
    assert "argument --init: unknown initializer 'foo'" in err and known
    names = ast.literal_eval(known.group(1))
    assert names[0] == "pytorch" and set(sg.init.names()) <= set(names)


def test_known_inits_parse(capsys) -> None:
    from symgraph.interop.models.runner import init_name
    assert [init_name(n) for n in ("pytorch", "Xavier", '["uniform", {"scale": 0.1}]')] == \
        ["pytorch", "Xavier", '["uniform", {"scale": 0.1}]']


def test_curve_without_matplotlib_names_the_plot_extra(capsys, monkeypatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "matplotlib" else real(name, *a))
    err = _usage_error(capsys, ["train", "mlp", "--curve", "--prefix", "m"])
    assert "argument --curve: needs matplotlib: pip install 'symgraph[plot]'" in err


def test_curve_without_prefix_is_refused_before_training(capsys, monkeypatch) -> None:
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: object())
    monkeypatch.delenv("SYMGRAPH_DATA", raising=False)  # refused before the data is looked for
    assert cli.main(["train", "mlp", "--curve"]) == 2
    assert "--curve writes PREFIX-curve.png: give --prefix too" in capsys.readouterr().err


@pytest.mark.parametrize("text", ["data=1,784", "data=1x784", "data=(1,784)", "data=( 1, 784 )"])
def test_shape_spellings(text: str) -> None:
    assert cli.shape_arg(text) == ("data", (1, 784))


@pytest.mark.parametrize("text", ["data=1,,784", "data=1X784", "data=1 784", "data=1,784,",
                                  "data=0,3", "data=1x-3", "data=", "=1,784", "data:1,784"])
def test_shape_refused_by_name(capsys, text: str) -> None:
    err = _usage_error(capsys, ["summary", "g.json", "--shape", text])
    assert f"argument --shape: {text!r} is not NAME=D1,D2,... (or D1xD2)" in err


def test_speedometer_columns_line_up(caplog, monkeypatch) -> None:
    """Lines whose batch numbers, epochs and speeds (up to 640000 samples/s) change their
    number of digits keep their columns."""
    steps = itertools.cycle([0.01, 1.0, 50.0])  # seconds between two readings of the clock
    now = itertools.accumulate(steps)
    monkeypatch.setattr(sg.callback, "time", types.SimpleNamespace(time=lambda: next(now)))
    metric = sg.metric.create("acc")
    speedo = sg.callback.Speedometer(batch_size=64, frequent=100)
    with caplog.at_level(logging.INFO, logger="symgraph"):
        for epoch in (9, 10):
            for nbatch in range(0, 1101, 50):
                metric.update([sg.nd.array(np.array([1.0, 0.0]))],
                              [sg.nd.array(np.array([[0.2, 0.8], [0.3, 0.7]]))])
                speedo(sg.callback.BatchEndParam(epoch, nbatch, metric, None))
    lines = [r.getMessage() for r in caplog.records if "Speed:" in r.getMessage()]
    assert len(lines) == 22 and "Batch [0-100]" in lines[0] and "[1000-1100]" in lines[10]
    assert len({line.index("Speed:") for line in lines}) == 1
    assert len({line.index("accuracy=") for line in lines}) == 1
    assert len({len(line.split("Speed: ")[1].split()[0]) for line in lines}) > 1
    accuracy = [float(line.split("accuracy=")[1]) for line in lines]
    np.testing.assert_allclose(accuracy, 0.5)  # one of each pair right, by construction


def test_drawing_without_dot_names_the_system_package(monkeypatch, tmp_path) -> None:
    pytest.importorskip("graphviz")
    monkeypatch.setenv("PATH", str(tmp_path))  # no dot here, installed or not
    net = sg.sym.FullyConnected(sg.sym.var("data"), num_hidden=3, name="fc")
    dot = sg.viz.plot_network(net, save_format="png")
    for render in (lambda: dot.render(str(tmp_path / "net")), lambda: dot.pipe(format="svg"),
                   dot._repr_mimebundle_):
        with pytest.raises(ExecutionError, match="'dot' program is not on PATH; install the "
                                                 "system package graphviz: apt install"):
            render()
    assert "fc" in dot.source and not (tmp_path / "net.png").exists()
