"""MXNet's FusedRNN initializer on a FusedRNNCell's flat ``parameters`` (no name rule covers
it): Module.init_params fills it per piece, against MXNet 1.9.1's rule written out here."""
from __future__ import annotations

import numpy as np
import pytest

import symgraph as sg
from symgraph.core.base import AttrError
from symgraph.interop.rnn.fused_init import FusedRNN


def _module(cell, shape=(2, 3, 5)):
    y, _ = cell.unroll(shape[1], sg.sym.Variable("data"), layout="NTC", merge_outputs=True)
    mod = sg.mod.Module(y, label_names=None)
    mod.bind(data_shapes=[("data", shape)], label_shapes=None)
    return mod


@pytest.mark.parametrize("mode", ["lstm", "gru"])
def test_module_initialises_fused_parameters(mode: str) -> None:
    cell = sg.rnn.FusedRNNCell(4, num_layers=2, mode=mode, bidirectional=True, prefix="",
                               forget_bias=2.5)
    mod = _module(cell)
    mod.init_params(initializer=sg.init.Uniform(0.3))
    pieces = cell.unpack_weights(mod.get_params()[0])
    weights = [v.asnumpy() for k, v in pieces.items() if k.endswith("_weight")]
    assert all(np.abs(w).max() <= 0.3 for w in weights)
    assert np.concatenate([w.ravel() for w in weights]).std() > 0.1  # drawn, not constant
    for k, v in pieces.items():
        if k.endswith("_bias"):
            want = 2.5 if mode == "lstm" and k.endswith("_f_bias") else 0.0
            np.testing.assert_array_equal(v.asnumpy(), np.full(v.shape, want), err_msg=k)


def test_its_own_init_wins_and_round_trips_as_json() -> None:
    init = FusedRNN(sg.init.Constant(0.5), num_hidden=3, num_layers=1, mode="rnn_tanh")
    arr = sg.nd.zeros((3 * 2 + 3 * 3 + 3 + 3,))  # input width 2: i2h, h2h weights; biases
    sg.init.create(init.dumps())._init_weight("parameters", arr)
    np.testing.assert_array_equal(arr.asnumpy(), [0.5] * 15 + [0.0] * 6)
    with pytest.raises(AttrError, match="mode='bad'"):
        FusedRNN(None, num_hidden=3, num_layers=1, mode="bad")
