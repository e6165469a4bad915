"""gluon.rnn details MXNet 1.9.1's tests rely on: unrolled outputs named ``t<i>_out``,
symbolic begin states whose batch comes from the data (even a batch of 1, even inside a
hybridized block), ``infer_shape`` with a list of states, ``init.LSTMBias``, and parameters of
unruled names initialised by the default's weight rule. References are numpy."""
from __future__ import annotations

import numpy as np
import pytest

import symgraph as sg
from symgraph.core.base import AttrError
from symgraph.gluon import ParameterDict, rnn

nd = sg.nd


@pytest.mark.parametrize("cls", [rnn.RNNCell, rnn.LSTMCell, rnn.GRUCell])
def test_unrolled_output_names(cls: type) -> None:
    cell = cls(6, prefix="rnn_")
    outputs, _ = cell.unroll(2, [sg.sym.var(f"rnn_t{i}_data") for i in range(2)])
    assert sg.sym.Group(outputs).list_outputs() == ["rnn_t0_out_output", "rnn_t1_out_output"]


def test_residual_cell_symbolic_batch_of_one_evaluates() -> None:
    cell = rnn.ResidualCell(rnn.GRUCell(4, prefix="rnn_"))
    outputs, _ = cell.unroll(2, [sg.sym.var(f"rnn_t{i}_data") for i in range(2)])
    group = sg.sym.Group(outputs)
    assert group.infer_shape(rnn_t0_data=(1, 4), rnn_t1_data=(1, 4))[1] == [(1, 4), (1, 4)]
    zeros = {n: nd.zeros(s) for n, s in (("rnn_i2h_weight", (12, 4)), ("rnn_i2h_bias", (12,)),
                                        ("rnn_h2h_weight", (12, 4)), ("rnn_h2h_bias", (12,)))}
    got = group.eval(rnn_t0_data=nd.ones((1, 4)), rnn_t1_data=nd.ones((1, 4)), **zeros)
    # zero weights: n = tanh(0) = 0, z = 1/2, h = h/2 from h = 0; the residual adds the input
    for out in got:
        np.testing.assert_allclose(out.asnumpy(), np.ones((1, 4)))


def test_hybridized_unroll_takes_batch_from_data() -> None:
    class Layer(sg.gluon.HybridBlock):
        def __init__(self) -> None:
            super().__init__()
            with self.name_scope():
                self.cell = rnn.LSTMCell(3, input_size=2)

        def hybrid_forward(self, F, seq):
            return self.cell.unroll(4, seq, merge_outputs=True)[0]

    layer = Layer()
    layer.initialize()
    x = nd.array(np.random.default_rng(0).normal(size=(1, 4, 2)))
    eager = layer(x).asnumpy()
    layer.hybridize()
    np.testing.assert_allclose(layer(x).asnumpy(), eager, rtol=1e-5, atol=1e-6)


def test_layer_infer_shape_with_state_list() -> None:
    layer = rnn.LSTM(5, projection_size=3, layout="TNC")
    layer.initialize()
    x = nd.ones((4, 2, 7))
    layer.infer_shape(x, layer.begin_state(2))
    assert layer.l0_i2h_weight.shape == (20, 7)
    assert layer.l0_h2r_weight.shape == (3, 5)


def test_lstm_bias() -> None:
    cell = rnn.LSTMCell(3, i2h_bias_initializer=sg.init.LSTMBias(1.5), input_size=2)
    cell.initialize()
    want = np.zeros(12)
    want[3:6] = 1.5
    np.testing.assert_array_equal(cell.i2h_bias.data().asnumpy(), want)
    with pytest.raises(AttrError, match="4 gates"):
        sg.init.LSTMBias()(sg.init.InitDesc("b", {"__init__": sg.init.LSTMBias().dumps()}),
                           nd.zeros((6,)))


def test_unruled_parameter_name_gets_default_weight_rule() -> None:
    params = ParameterDict()
    x = params.get("x", shape=(10,))
    params.initialize(init="ones")
    np.testing.assert_array_equal(x.data().asnumpy(), np.ones(10))
