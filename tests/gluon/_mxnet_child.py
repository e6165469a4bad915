"""Run a script under MXNet 1.9.1 (``SYMGRAPH_MXNET_PYTHON``) on arrays saved for it."""
from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np

from .test_mxnet_gluon import _mxnet


def run_child(tmp: Path, code: str, arrays: dict, out_name: str) -> Path:
    """Save ``arrays`` to ``tmp/in.npz``, run ``code`` as ``child.py in.npz <out>`` under
    MXNet (skips the test without MXNet) and return the path of the output it wrote."""
    exe = _mxnet()
    np.savez(tmp / "in.npz", **arrays)
    (tmp / "child.py").write_text(code)
    out = tmp / out_name
    run = subprocess.run([exe, str(tmp / "child.py"), str(tmp / "in.npz"), str(out)],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    return out
