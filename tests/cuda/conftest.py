"""The CUDA tests' CPU side runs the numpy backend: the reference they compare with, and the
schedules some of them lower with the CUDA backend's lowering (``graphs.all_graphs(cpu_schedules
=True)``) are then the graph as the user built it, without the compiled CPU backend's own
layout pass (``passes/channel_last`` with oneDNN's policy pools NHWC, which the CUDA kernels do
not)."""
from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _numpy_cpu_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SYMGRAPH_CPU", "numpy")
