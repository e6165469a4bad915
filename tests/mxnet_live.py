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


ND_CASES = """
import json, sys
import mxnet as mx
import numpy as np
nd = mx.nd
out = {}
for name, (expr, inputs, wrt) in json.load(sys.stdin).items():
    xs = [nd.array(v) for v in inputs]
    for k in wrt:
        xs[k].attach_grad()
    with mx.autograd.record():
        y = eval(expr, {"nd": nd}, dict(zip("abcdef", xs)))
    ys = list(y) if isinstance(y, (list, tuple)) else [y]
    if wrt:
        ys[0].backward(nd.array(np.arange(1, ys[0].size + 1).reshape(ys[0].shape)))
    out[name] = [v.asnumpy().astype(float).tolist() for v in ys] + [
        xs[k].grad.asnumpy().tolist() for k in wrt]
print(json.dumps(out))
"""
"""MXNet's side of ``nd_cases``: ``{name: (expression over nd and inputs a..f, inputs,
differentiated inputs)}`` to ``{name: [outputs..., gradients...]}``, head gradient 1, 2, 3,
... of output 0."""


def nd_case(expr: str, inputs: list, wrt: list) -> list:
    """symgraph's side of one ``ND_CASES`` entry: [output, input gradients...] as float."""
    import numpy as np

    import symgraph as sg
    xs = [sg.nd.array(np.asarray(v, np.float32)) for v in inputs]
    for k in wrt:
        xs[k].attach_grad()
    with sg.autograd.record():
        y = eval(expr, {"nd": sg.nd}, dict(zip("abcdef", xs)))  # noqa: S307 (tests' tables)
    if wrt:
        y.backward(sg.nd.array(np.arange(1, y.size + 1, dtype=np.float32).reshape(y.shape)))
    return [y.asnumpy().astype(float)] + [xs[k].grad.asnumpy() for k in wrt]


def check_nd_case(name: str, case: tuple, theirs: list, rtol: float = 1e-5) -> None:
    """``nd_case(*case)`` equals MXNet's ``theirs`` (output, then each gradient)."""
    import numpy as np
    ours = nd_case(*case)
    assert len(ours) == len(theirs)
    for k, (o, t) in enumerate(zip(ours, theirs)):
        np.testing.assert_allclose(o, np.asarray(t, float), rtol=rtol, atol=1e-5,
                                   err_msg=f"{name} {'output' if k == 0 else 'gradient'}")
