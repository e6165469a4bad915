"""The rest of gluon.nn and gluon.contrib.rnn against MXNet 1.9.1 run live (a subprocess):
the same code runs under both with the same inputs and parameters (convolutional cells,
transposed 1-D/3-D convolutions, 3-D and global pools, ReflectionPad2D, SyncBatchNorm in
training, LSTMBias, and which unrolls return merged outputs). Marked ``mxnet``; skipped when
MXNet 1.9.1 is not available (``SYMGRAPH_MXNET_PYTHON``)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import symgraph as sg

from ._mxnet_child import run_child

pytestmark = pytest.mark.mxnet

# run by both processes; ``d`` holds the inputs and every parameter by its name's suffix
CODE = '''
import numpy as np


def _set(mx, block, d, key):
    for name, p in block.collect_params().items():
        p.set_data(mx.nd.array(d[key + "_" + name.split("_", 1)[1]]))


def run(mx, d):
    nn, out = mx.gluon.nn, {}
    f32 = mx.nd.array  # (MXNet's unroll makes float32 begin states)
    for key, cell in (("lstm", mx.gluon.contrib.rnn.Conv1DLSTMCell((2, 6), 3, 3, 3, i2h_pad=1,
                                                                   prefix="c_")),
                      ("gru", mx.gluon.contrib.rnn.Conv2DGRUCell((2, 5, 4), 2, 3, 3,
                                                                 prefix="c_"))):
        cell.initialize()
        _set(mx, cell, d, key)
        o, s = cell.unroll(3, f32(d[key + "_x"]), layout="NTC", merge_outputs=True,
                           valid_length=mx.nd.array([2, 3]))
        out[key] = [o.asnumpy()] + [v.asnumpy() for v in s]
    for key, layer in (("deconv1", nn.Conv1DTranspose(2, 3, strides=2, in_channels=3)),
                       ("deconv3", nn.Conv3DTranspose(2, 3, padding=1, in_channels=3))):
        layer.initialize()
        _set(mx, layer, d, key)
        out[key] = layer(f32(d[key + "_x"])).asnumpy()
    x5 = f32(d["x5"])
    out["maxpool3"] = nn.MaxPool3D(3, 2, 1)(x5).asnumpy()
    out["avgpool3"] = nn.AvgPool3D(3, 2, 1, count_include_pad=False)(x5).asnumpy()
    out["gavg1"] = nn.GlobalAvgPool1D()(f32(d["x3"])).asnumpy()
    out["gmax3"] = nn.GlobalMaxPool3D()(x5).asnumpy()
    out["reflect"] = nn.ReflectionPad2D(2)(f32(d["x4"])).asnumpy()
    bn = mx.gluon.contrib.nn.SyncBatchNorm(in_channels=2, num_devices=1)
    bn.initialize()
    x4 = mx.nd.array(d["x4"])
    with mx.autograd.record():
        y = bn(x4)
    y.backward()  # (MXNet updates SyncBatchNorm's running statistics in its backward)
    out["syncbn"] = [y.asnumpy(), bn.running_mean.data().asnumpy(),
                     bn.running_var.data().asnumpy()]
    bias = mx.gluon.rnn.LSTMCell(3, i2h_bias_initializer=mx.init.LSTMBias(2.5), input_size=2)
    bias.initialize()
    out["lstmbias"] = bias.i2h_bias.data().asnumpy()
    kinds = []
    for cell in (mx.gluon.rnn.GRUCell(4), mx.gluon.rnn.BidirectionalCell(
            mx.gluon.rnn.RNNCell(4), mx.gluon.rnn.RNNCell(4)),
            mx.gluon.contrib.rnn.VariationalDropoutCell(mx.gluon.rnn.RNNCell(4))):
        cell.initialize()
        for valid in (None, mx.nd.array([2, 3])):
            o, _ = cell.unroll(3, mx.nd.ones((3, 2, 5)), layout="TNC", valid_length=valid)
            kinds.append(isinstance(o, list))
    out["returns_list"] = np.array(kinds)
    return out
'''

CHILD = CODE + '''
import pickle, sys
import numpy as np
import mxnet as mx
d = dict(np.load(sys.argv[1]))
with open(sys.argv[2], "wb") as f:
    pickle.dump(run(mx, d), f)
'''


def _inputs() -> dict:
    rng = np.random.default_rng(11)
    d = {"lstm_x": rng.normal(size=(2, 3, 2, 6)), "gru_x": rng.normal(size=(2, 3, 2, 5, 4)),
         "deconv1_x": rng.normal(size=(2, 3, 4)), "deconv3_x": rng.normal(size=(1, 3, 3, 2, 3)),
         "x5": rng.normal(size=(1, 2, 5, 4, 6)), "x3": rng.normal(size=(2, 3, 5)),
         "x4": rng.normal(size=(3, 2, 4, 5))}
    shapes = {"lstm": {"i2h_weight": (12, 2, 3), "h2h_weight": (12, 3, 3), "i2h_bias": (12,),
                       "h2h_bias": (12,)},
              "gru": {"i2h_weight": (6, 2, 3, 3), "h2h_weight": (6, 2, 3, 3), "i2h_bias": (6,),
                      "h2h_bias": (6,)},
              "deconv1": {"weight": (3, 2, 3), "bias": (2,)},
              "deconv3": {"weight": (3, 2, 3, 3, 3), "bias": (2,)}}
    for key, params in shapes.items():
        d.update({f"{key}_{n}": rng.uniform(-0.5, 0.5, size=s) for n, s in params.items()})
    return d


def test_matches_mxnet(tmp_path: Path) -> None:
    import pickle
    d = _inputs()
    theirs_file = run_child(tmp_path, CHILD, d, "out.pkl")
    with open(theirs_file, "rb") as f:
        theirs = pickle.load(f)
    scope: dict = {}
    exec(CODE, scope)  # noqa: S102  (our own test code, run under both frameworks)
    ours = scope["run"](sg, d)
    assert sorted(ours) == sorted(theirs)
    for key in sorted(theirs):
        for a, b in zip(np.atleast_1d(ours[key]) if not isinstance(ours[key], list)
                        else ours[key], np.atleast_1d(theirs[key])
                        if not isinstance(theirs[key], list) else theirs[key]):
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5, err_msg=key)
