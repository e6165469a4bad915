"""``gluon.rnn`` layers with ``dropout`` run one fused ``RNN`` op with ``p``: inference equals
the layer without dropout, training drops between layers (reproducible under
``sg.random.seed``) and differs from inference."""
from __future__ import annotations

import json

import numpy as np

import symgraph as sg
from symgraph.gluon import rnn


def _pair() -> tuple:
    """An LSTM with dropout and the same LSTM without, sharing the parameter values."""
    a = rnn.LSTM(5, num_layers=3, dropout=0.5, input_size=4, prefix="a_")
    b = rnn.LSTM(5, num_layers=3, input_size=4, prefix="b_")
    a.initialize(sg.init.Uniform(0.5))
    b.initialize()
    for pa, pb in zip(a.collect_params().values(), b.collect_params().values()):
        pb.set_data(pa.data())
    return a, b


def test_one_fused_op_carries_p() -> None:
    a, _ = _pair()
    a.hybridize()
    a(sg.nd.ones((6, 2, 4)))
    nodes = json.loads(a._cached_graph[1].tojson())["nodes"]
    rnns = [n for n in nodes if n["op"] == "RNN"]
    assert len(rnns) == 1 and float(rnns[0]["attrs"]["p"]) == 0.5
    assert not [n for n in nodes if n["op"] == "Dropout"]


def test_inference_ignores_dropout_and_training_drops() -> None:
    a, b = _pair()
    x = sg.nd.array(np.random.default_rng(0).normal(size=(6, 2, 4)))
    plain = b(x).asnumpy()
    np.testing.assert_allclose(a(x).asnumpy(), plain, rtol=1e-6)
    outs = []
    for seed in (3, 3, 4):
        sg.random.seed(seed)
        with sg.autograd.record():
            outs.append(a(x).asnumpy())
    np.testing.assert_array_equal(outs[0], outs[1])
    assert not np.allclose(outs[0], plain) and not np.allclose(outs[0], outs[2])
