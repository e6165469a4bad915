"""Symbol JSON declares the MXNet version it matches, so MXNet 1.9 loads it without its legacy
upgrade ("Loading symbol saved by previous version v0.8.0"). Runs MXNet 1.9.1 from
$SYMGRAPH_MXNET_PYTHON (default /tmp/mxvenv/bin/python) when it exists."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

import symgraph as sg

MXPY = Path(os.environ.get("SYMGRAPH_MXNET_PYTHON", "/tmp/mxvenv/bin/python"))
LOAD = ("import sys, mxnet as mx; s = mx.sym.load(sys.argv[1]); "
        "print(s.infer_shape(data=(2, 1, 28, 28))[1])")


def _cnn() -> sg.sym.Symbol:
    from symgraph.interop.models.simple_cnn import build
    return build()


def test_json_declares_mxnet_version():
    doc = json.loads(_cnn().tojson())
    assert doc["attrs"]["mxnet_version"] == ["int", 10901]


@pytest.mark.skipif(not MXPY.exists(), reason="MXNet 1.9.1 interpreter not available")
def test_mxnet_loads_without_legacy_upgrade(tmp_path):
    path = tmp_path / "cnn-symbol.json"
    _cnn().save(str(path))
    r = subprocess.run([str(MXPY), "-c", LOAD, str(path)], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[(2, 10)]"
    assert "previous version" not in r.stderr, r.stderr
    # the check can fail: the same graph without the declaration makes MXNet warn
    doc = json.loads(path.read_text())
    del doc["attrs"]["mxnet_version"]
    old = tmp_path / "old-symbol.json"
    old.write_text(json.dumps(doc))
    r = subprocess.run([str(MXPY), "-c", LOAD, str(old)], capture_output=True, text=True,
                       timeout=120)
    assert "previous version v0.8.0" in r.stderr + r.stdout
