"""Host-side CUDA tests without a GPU: a script run in a fresh interpreter with a mock standing
in for pycuda (the mock must not leak into other tests, so it never enters this process)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# What every such script starts with: the mock modules, then symgraph told pycuda is there.
PRELUDE = r'''
import sys, types
from unittest import mock
pycuda = types.ModuleType("pycuda"); drv = mock.MagicMock(); pycuda.driver = drv
sys.modules["pycuda"] = pycuda; sys.modules["pycuda.driver"] = drv
sys.modules["pycuda.gpuarray"] = mock.MagicMock(); pycuda.gpuarray = sys.modules["pycuda.gpuarray"]
import symgraph as sg
from symgraph.runtime.cuda import libs
libs.require_pycuda = lambda: None
'''


def run_with_mock_pycuda(script: str) -> None:
    """Run ``PRELUDE + script`` in a child interpreter; it must exit 0 with ``OK`` last."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", PRELUDE + script], capture_output=True,
                         text=True, env=env, cwd=ROOT, timeout=300)
    assert out.returncode == 0 and out.stdout.strip().endswith("OK"), out.stdout + out.stderr
