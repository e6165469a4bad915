"""Run a script under MXNet 1.9.1 (``SYMGRAPH_MXNET_PYTHON``) with JSON in and out; the
calling test is skipped when MXNet is not installed."""
from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest

from .test_mxnet_interop import mxnet_python


def mxnet_json(script: str, payload: Any, timeout: float = 300) -> Any:
    """``script`` reads ``payload`` as JSON on stdin and prints one JSON line last."""
    exe = mxnet_python()
    if exe is None:
        pytest.skip("MXNet 1.9.1 not available (set SYMGRAPH_MXNET_PYTHON)")
    got = subprocess.run([exe, "-c", script], input=json.dumps(payload), capture_output=True,
                         text=True, timeout=timeout)
    assert got.returncode == 0, got.stderr[-3000:]
    return json.loads(got.stdout.strip().splitlines()[-1])
