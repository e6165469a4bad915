"""gluon.rnn layers against MXNet 1.9.1 run live (marked ``mxnet``): MXNet builds each layer,
saves its parameters and computes outputs, last states and gradients (data, states,
parameters) of a fixed linear loss in float64; symgraph loads the file into the same layer and
must agree."""
from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest

import symgraph as sg
from symgraph.frontend import autograd
from symgraph.gluon import rnn
from tests.test_mxnet_interop import mxnet_python

pytestmark = pytest.mark.mxnet
nd = sg.nd
LAYERS = {"lstm-2x-bi": "LSTM(5, num_layers=2, bidirectional=True, input_size=3, "
                        "layout='NTC', dtype='float64', prefix='m_')",
          "gru-2x": "GRU(5, num_layers=2, input_size=3, dtype='float64', prefix='m_')",
          "rnn-tanh-bi": "RNN(5, activation='tanh', bidirectional=True, input_size=3, "
                         "dtype='float64', prefix='m_')"}
# (LSTM with projection_size: MXNet 1.9.1's CPU refuses to train it, so no live gradient)
CHILD = '''
import sys
import numpy as np
import mxnet as mx
from mxnet.gluon import rnn
spec, params, data = sys.argv[1:]
layer = eval("rnn." + spec)
layer.initialize(mx.init.Uniform(0.5))
d = np.load(data)
x = mx.nd.array(d["x"], dtype="float64")
states = [mx.nd.array(d["s%d" % i], dtype="float64") for i in range(len(layer.state_info()))]
for a in [x] + states:
    a.attach_grad()
with mx.autograd.record():
    out, new = layer(x, states)
    loss = sum((o * mx.nd.array(d["h%d" % k], dtype="float64")).sum()
               for k, o in enumerate([out] + new))
loss.backward()
layer.save_parameters(params)
res = {"out%d" % k: o.asnumpy() for k, o in enumerate([out] + new)}
res["dx"] = x.grad.asnumpy()
res.update({"ds%d" % i: s.grad.asnumpy() for i, s in enumerate(states)})
res.update({"d_" + k: p.grad().asnumpy() for k, p in layer.collect_params().items()})
np.savez(data + ".out.npz", **res)
'''


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_layer_matches_mxnet(name: str, tmp_path: Path) -> None:
    exe = mxnet_python()
    if exe is None:
        pytest.skip("MXNet 1.9.1 not available (set SYMGRAPH_MXNET_PYTHON)")
    layer = eval("rnn." + LAYERS[name])  # noqa: S307  (our own spec strings)
    ntc = "NTC" in LAYERS[name]
    rng = np.random.default_rng(0)
    x = rng.normal(size=(2, 4, 3) if ntc else (4, 2, 3))
    states = [rng.normal(size=i["shape"]) for i in layer.state_info(2)]
    data = {"x": x, **{f"s{i}": s for i, s in enumerate(states)}}
    layer.initialize()
    out_shapes = [(2, 4) if ntc else (4, 2)] + [s.shape for s in states]
    probe, _ = layer(nd.array(x, dtype=np.float64), [nd.array(s, dtype=np.float64)
                                                     for s in states])
    heads = [rng.normal(size=probe.shape)] + [rng.normal(size=s.shape) for s in states]
    data.update({f"h{k}": h for k, h in enumerate(heads)})
    np.savez(tmp_path / "d.npz", **data)
    (tmp_path / "child.py").write_text(CHILD)
    run = subprocess.run([exe, str(tmp_path / "child.py"), LAYERS[name], str(tmp_path / "p"),
                          str(tmp_path / "d.npz")], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    theirs = np.load(str(tmp_path / "d.npz") + ".out.npz")
    layer.load_parameters(str(tmp_path / "p"))
    xs = nd.array(x, dtype=np.float64)
    ss = [nd.array(s, dtype=np.float64) for s in states]
    for a in [xs] + ss:
        a.attach_grad()
    with autograd.record():
        out, new = layer(xs, ss)
        loss = sum(nd.sum(o * nd.array(h, dtype=np.float64)) for o, h in zip([out] + new, heads))
    loss.backward()
    assert len(out_shapes) == len(new) + 1
    for k, o in enumerate([out] + new):
        np.testing.assert_allclose(o.asnumpy(), theirs[f"out{k}"], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(xs.grad.asnumpy(), theirs["dx"], rtol=1e-9, atol=1e-12)
    for i, s in enumerate(ss):
        np.testing.assert_allclose(s.grad.asnumpy(), theirs[f"ds{i}"], rtol=1e-9, atol=1e-12)
    for k, p in layer.collect_params().items():
        np.testing.assert_allclose(p.grad().asnumpy(), theirs["d_" + k], rtol=1e-9,
                                   atol=1e-12, err_msg=k)
