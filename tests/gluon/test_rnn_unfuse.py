"""``gluon.rnn.RNN/LSTM/GRU._unfuse()`` (MXNet 1.9.1's): the stack of cells shares the layer's
parameters (the same objects) and unrolls to the fused layer's outputs and to the float64
numpy reference of ``rnn_reference.py``; its structure is MXNet's (cells per layer,
BidirectionalCell, DropoutCell between layers); a projection layer is refused."""
from __future__ import annotations

import numpy as np
import pytest

import symgraph as sg
from symgraph.core.base import AttrError
from symgraph.gluon import rnn

from . import rnn_reference

LAYERS = [(rnn.LSTM, {}, "lstm"), (rnn.GRU, {}, "gru"),
          (rnn.RNN, {"activation": "relu"}, "rnn_relu"),
          (rnn.RNN, {"activation": "tanh"}, "rnn_tanh")]


@pytest.mark.parametrize("bidirectional", [False, True])
@pytest.mark.parametrize("cls,kwargs,mode", LAYERS)
def test_unfused_cells_give_the_layer_outputs(cls, kwargs: dict, mode: str,
                                              bidirectional: bool) -> None:
    layer = cls(5, num_layers=2, bidirectional=bidirectional, **kwargs)
    stack = layer._unfuse()
    layer.initialize(sg.init.Uniform(0.5))
    rng = np.random.default_rng(0)
    x = rng.normal(size=(4, 3, 6))  # TNC
    fused = layer(sg.nd.array(x.astype(np.float32))).asnumpy()
    cells, _ = stack.unroll(4, sg.nd.array(x.astype(np.float32)), layout="TNC",
                            merge_outputs=True)
    params = {k[len(layer.prefix):]: p.data().asnumpy().astype(np.float64)
              for k, p in layer.collect_params().items()}
    zeros = [np.zeros((2 * (2 if bidirectional else 1), 3, 5))] * (2 if mode == "lstm" else 1)
    want, _ = rnn_reference.layer(mode, x, zeros, params, 2, bidirectional)
    np.testing.assert_allclose(cells.asnumpy(), want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(fused, want, rtol=1e-5, atol=1e-5)


def test_structure_and_shared_parameters() -> None:
    layer = rnn.LSTM(4, num_layers=3, bidirectional=True, dropout=0.5, input_size=2)
    stack = layer._unfuse()
    kinds = [type(c).__name__ for c in stack._children.values()]
    assert kinds == ["BidirectionalCell", "DropoutCell"] * 2 + ["BidirectionalCell"]
    ours, theirs = stack.collect_params(), layer.collect_params()
    assert sorted(ours.keys()) == sorted(theirs.keys())
    assert all(ours[k] is theirs[k] for k in theirs)
    assert ours[layer.prefix + "l1_i2h_weight"].shape == (16, 8)
    gru = rnn.GRU(3, input_size=2)._unfuse()
    assert [type(c).__name__ for c in gru._children.values()] == ["GRUCell"]


def test_training_the_cells_trains_the_layer() -> None:
    layer = rnn.GRU(3, input_size=2)
    stack = layer._unfuse()
    layer.initialize()
    x = sg.nd.ones((2, 1, 2))
    with sg.autograd.record():
        out, _ = stack.unroll(2, x, layout="TNC", merge_outputs=True)
    out.backward()
    grad = layer.collect_params()[layer.prefix + "l0_h2h_bias"].grad().asnumpy()
    assert np.abs(grad).sum() > 0


def test_projection_is_refused() -> None:
    layer = rnn.LSTM(4, projection_size=2)
    with pytest.raises(AttrError, match="projection_size"):
        layer._unfuse()
