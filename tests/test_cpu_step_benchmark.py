"""``benchmarks/cpu_step.py``: its small mode prints the table (PyTorch and MXNet columns "n/a"
where they are absent), and the timing helper counts what it says it counts."""
from __future__ import annotations

import importlib.util
import re
import subprocess

import numpy as np
import pytest

from benchmarks import cpu_step
from benchmarks.cpu_models import step_times


def cells(text: str, title: str) -> dict[str, str]:
    """The table row ``title`` of the report, by column header (the second "move" is
    ``move2``)."""
    lines = [ln for ln in text.splitlines() if ln.startswith("|")]
    head = [c.strip() for c in lines[0].strip("|").split("|")]
    head[head.index("move", head.index("move") + 1)] = "move2"
    for ln in lines[2:]:
        row = [c.strip() for c in ln.strip("|").split("|")]
        if row[0] == title:
            return dict(zip(head, row))
    raise AssertionError(f"no row {title!r} in\n{text}")


def test_small_mode_prints_every_column(capsys: pytest.CaptureFixture) -> None:
    cpu_step.main(["--small", "--rows", "cnn64", "--repeat", "1"])
    got = cells(capsys.readouterr().out, "seed CNN train step, batch 64")
    assert float(got["numpy"]) > 0 and got["unit"] == "ms"
    assert (got["compiled"] == "n/a") != cpu_step.compiled_accepted()
    has_torch = importlib.util.find_spec("torch") is not None
    assert (got["torch"] == "n/a") != has_torch
    assert (got["numpy+torch"] == "n/a") != has_torch
    if got["mxnet"] == "n/a":
        assert got["numpy/mxnet"] == "n/a"
        exe = cpu_step.mxnet_python()
        assert exe is None or subprocess.run([exe, "-c", "import mxnet"]).returncode != 0
    else:  # the ratio is of the two printed medians (3 significant digits each)
        expect = float(got["numpy"]) / float(got["mxnet"])
        assert float(got["numpy/mxnet"]) == pytest.approx(expect, rel=0.02)


def test_unknown_row_is_refused_by_name(capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit):
        cpu_step.main(["--small", "--rows", "resnet50"])
    assert re.search(r"--rows: invalid choice: 'resnet50'", capsys.readouterr().err)


def test_step_times_counts_only_the_timed_calls() -> None:
    calls: list[str] = []
    times = step_times(lambda: calls.append("fn"), 3, 2, lambda: calls.append("between"))
    assert calls == ["fn", "fn"] + ["between", "fn"] * 3
    assert len(times) == 3 and all(t >= 0 for t in times)
    own = step_times(lambda: 123.5, 2, 0)  # a unit that times itself (an epoch)
    assert own == [123.5, 123.5]


def test_torch_resnet18_has_gluons_parameter_count() -> None:
    """The PyTorch ResNet-18 written here is the model zoo's resnet18_v1, layer for layer."""
    pytest.importorskip("torch")
    import symgraph as sg
    from benchmarks.cpu_models import torch_resnet18
    net = sg.gluon.model_zoo.vision.resnet18_v1()
    net.initialize()
    net(sg.nd.array(np.zeros((1, 3, 32, 32), np.float32)))
    ours = sum(int(np.prod(p.shape)) for p in net.collect_params().values()
               if "running" not in p.name)
    theirs = sum(p.numel() for p in torch_resnet18().parameters())
    assert ours == theirs == 11689512
