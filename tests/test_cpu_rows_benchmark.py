"""The ResNet-18, LSTM language-model and MNIST-epoch rows of ``benchmarks/cpu_step.py`` at
their small sizes: each framework's workload builds and runs (symgraph in this process,
PyTorch where installed, MXNet 1.9.1's MNIST epoch in its venv's subprocess)."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

from benchmarks import cpu_step
from benchmarks.cpu_models import SYMGRAPH, TORCH, step_times

from .test_mxnet_interop import mxnet_python

NEW_ROWS = ("resnet18_b1", "resnet18_b32", "lstm_lm", "mnist_epoch")


def _data(name: str, tmp_path: Path) -> dict | None:
    """The small MNIST-row file's arrays (random images), None for the other rows."""
    if cpu_step.ROWS[name].kind != "mnist":
        return None
    return dict(np.load(cpu_step.mnist_file(True, str(tmp_path))))


@pytest.mark.parametrize("name", NEW_ROWS)
def test_symgraph_row_runs_small(name: str, tmp_path: Path) -> None:
    row = cpu_step.ROWS[name]
    times = step_times(SYMGRAPH[row.kind](row.small, _data(name, tmp_path)), 1, row.warm)
    assert len(times) == 1 and times[0] > 0


@pytest.mark.parametrize("name", NEW_ROWS)
def test_torch_row_runs_small(name: str, tmp_path: Path) -> None:
    pytest.importorskip("torch")
    row = cpu_step.ROWS[name]
    times = step_times(TORCH[row.kind](row.small, _data(name, tmp_path)), 1, row.warm)
    assert len(times) == 1 and times[0] > 0


@pytest.mark.mxnet
def test_mxnet_mnist_row_runs_small(tmp_path: Path) -> None:
    """The MXNet side's own code (``Module.fit`` over ``NDArrayIter``; the Gluon rows share
    their code with symgraph's, run above)."""
    exe = mxnet_python()
    if exe is None:
        pytest.skip("MXNet 1.9.1 not available (set SYMGRAPH_MXNET_PYTHON)")
    script = Path(cpu_step.__file__).with_name("cpu_step_mxnet.py")
    row = cpu_step.ROWS["mnist_epoch"]
    got = subprocess.run([exe, str(script), "--kind", row.kind, "--params", json.dumps(row.small),
                          "--repeat", "1", "--warm", "0", "--data",
                          cpu_step.mnist_file(True, str(tmp_path))],
                         capture_output=True, text=True, timeout=120)
    assert got.returncode == 0, got.stderr[-3000:]
    times = json.loads(got.stdout.strip().splitlines()[-1])
    assert len(times) == 1 and times[0] > 0
