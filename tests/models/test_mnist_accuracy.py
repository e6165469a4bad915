"""The quick start's promise: ``symgraph train simple_cnn --ctx cpu --epochs 1`` reaches 97.0%
MNIST test accuracy (PyTorch with the same recipe: 97.45%), printing progress."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_simple_cnn_one_cpu_epoch_through_the_cli(mnist_dir) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "symgraph", "train", "simple_cnn", "--ctx", "cpu", "--epochs", "1",
         "--data-dir", str(mnist_dir), "--log-every", "300"],
        cwd=ROOT, capture_output=True, text=True, timeout=900,
        env={"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "Speed:" in proc.stdout  # progress was printed
    acc = float(re.search(r"test accuracy ([\d.]+)%", proc.stdout).group(1))
    assert acc >= 97.0, proc.stdout[-1000:]
