"""Parameter files cross between symgraph's Gluon and MXNet 1.9.1's (run in a subprocess): the
same network code predicts the same outputs from a file the other one saved. Marked ``mxnet``;
skipped when MXNet 1.9.1 is not available (``SYMGRAPH_MXNET_PYTHON``)."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

import symgraph as sg
from symgraph.gluon import nn

pytestmark = pytest.mark.mxnet

NET = '''
def make_net(mx, nn):
    net = nn.HybridSequential()
    with net.name_scope():
        net.add(nn.Conv2D(4, 3, padding=1, activation="relu"), nn.BatchNorm(),
                nn.MaxPool2D(), nn.Flatten(), nn.Dense(5))
    return net


def prepare(mx, np, net, x):
    net.initialize(mx.init.Normal(0.5))
    net(x)
    net[1].running_mean.set_data(mx.nd.array(np.linspace(-1, 1, 4)))
    net[1].running_var.set_data(mx.nd.array(np.linspace(0.5, 2, 4)))
'''

# The child's code after a NET's ``make_net`` and ``prepare`` (MXNet's initialisation).
CHILD_BODY = '''
import sys
import numpy as np
import mxnet as mx
from mxnet.gluon import nn
mode, params, x_file, out_file = sys.argv[1:]
net = make_net(mx, nn)
x = mx.nd.array(np.load(x_file))
if mode == "load":
    net.load_parameters(params)
else:
    prepare(mx, np, net, x)
    net.save_parameters(params)
np.save(out_file, net(x).asnumpy())
'''
CHILD = NET + CHILD_BODY


def _mxnet() -> str:
    exe = os.environ.get("SYMGRAPH_MXNET_PYTHON", "/tmp/mxvenv/bin/python")
    if not os.path.isfile(exe) or subprocess.run(
            [exe, "-c", "import mxnet"], capture_output=True, timeout=120).returncode:
        pytest.skip("MXNet 1.9.1 not available (set SYMGRAPH_MXNET_PYTHON)")
    return exe


def _make_net(source: str = NET):
    """The net of ``source``'s ``make_net`` (the code both frameworks run) in symgraph."""
    ns: dict = {}
    exec(source, ns)
    return ns["make_net"](sg, nn)


def _child(exe: str, tmp: Path, mode: str, params: Path, x: np.ndarray,
           script: str = CHILD) -> np.ndarray:
    """``script`` run by MXNet: ``mode`` load or save, ``params`` its file; its outputs."""
    path, x_file, out_file = tmp / "child.py", tmp / "x.npy", tmp / "out.npy"
    path.write_text(script)
    np.save(x_file, x)
    run = subprocess.run([exe, str(path), mode, str(params), str(x_file), str(out_file)],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    return np.load(out_file)


def test_mxnet_loads_symgraph_parameters(tmp_path: Path) -> None:
    exe = _mxnet()
    x = np.random.default_rng(0).normal(size=(2, 3, 6, 6)).astype(np.float32)
    net = _make_net()
    net.initialize(sg.init.Normal(0.5))
    net(sg.nd.array(x))
    net[1].running_mean.set_data(np.linspace(-1, 1, 4))
    net[1].running_var.set_data(np.linspace(0.5, 2, 4))
    params = tmp_path / "sg.params"
    net.save_parameters(str(params))
    theirs = _child(exe, tmp_path, "load", params, x)
    np.testing.assert_allclose(theirs, net(sg.nd.array(x)).asnumpy(), rtol=1e-5, atol=1e-5)


def test_symgraph_loads_mxnet_parameters(tmp_path: Path) -> None:
    exe = _mxnet()
    x = np.random.default_rng(1).normal(size=(2, 3, 6, 6)).astype(np.float32)
    params = tmp_path / "mx.params"
    theirs = _child(exe, tmp_path, "save", params, x)
    net = _make_net()
    net.load_parameters(str(params))
    np.testing.assert_allclose(net(sg.nd.array(x)).asnumpy(), theirs, rtol=1e-5, atol=1e-5)
