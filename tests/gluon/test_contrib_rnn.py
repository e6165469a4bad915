"""gluon.contrib.rnn: the convolutional cells one step against float64 numpy, their symbolic
unroll (output names, shapes from the data with unknown batch), ``dynamic_unroll`` against
the static ``unroll``, and the cells' arguments checked."""
from __future__ import annotations

import numpy as np
import pytest

import symgraph as sg
from symgraph.core.base import AttrError
from symgraph.gluon import contrib, rnn

nd = sg.nd
RNG = np.random.default_rng(3)


def _conv1d(x: np.ndarray, w: np.ndarray, b: np.ndarray, pad: int) -> np.ndarray:
    """NCW cross-correlation, stride 1."""
    x = np.pad(x, ((0, 0), (0, 0), (pad, pad)))
    k = w.shape[2]
    cols = np.stack([x[:, :, i:i + k] for i in range(x.shape[2] - k + 1)], axis=2)
    return np.einsum("nciw,ocw->noi", cols, w) + b[None, :, None]


def _sig(v: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-v))


def _step_ref(kind: str, x: np.ndarray, states: list, p: dict) -> list:
    """One step of a Conv1D cell (i2h kernel 3 pad 1, h2h kernel 3)."""
    i2h = _conv1d(x, p["i2h_weight"], p["i2h_bias"], 1)
    h2h = _conv1d(states[0], p["h2h_weight"], p["h2h_bias"], 1)
    if kind == "RNN":
        return [np.tanh(i2h + h2h)]
    if kind == "LSTM":
        i, f, g, o = np.split(i2h + h2h, 4, axis=1)
        c = _sig(f) * states[1] + _sig(i) * np.tanh(g)
        return [_sig(o) * np.tanh(c), c]
    xr, xz, xn = np.split(i2h, 3, axis=1)
    hr, hz, hn = np.split(h2h, 3, axis=1)
    r, z = _sig(xr + hr), _sig(xz + hz)
    n = np.tanh(xn + r * hn)
    return [(1 - z) * n + z * states[0]]


@pytest.mark.parametrize("kind", ["RNN", "LSTM", "GRU"])
def test_conv1d_cell_step(kind: str) -> None:
    cls = {"RNN": contrib.rnn.Conv1DRNNCell, "LSTM": contrib.rnn.Conv1DLSTMCell,
           "GRU": contrib.rnn.Conv1DGRUCell}[kind]
    cell = cls((2, 6), 3, 3, 3, i2h_pad=1, prefix="c_")
    cell.initialize(sg.init.Uniform(0.5))
    cell.cast("float64")
    x = RNG.normal(size=(2, 2, 6))
    states = [RNG.normal(size=i["shape"]) for i in cell.state_info(2)]
    out, new = cell(nd.array(x, dtype=np.float64),
                    [nd.array(s, dtype=np.float64) for s in states])
    p = {k[len("c_"):]: v.data().asnumpy() for k, v in cell.collect_params().items()}
    want = _step_ref(kind, x, states, p)
    for got, ref in zip([out] + list(new), [want[0]] + want):
        np.testing.assert_allclose(got.asnumpy(), ref, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("cls,in_shape,out_shape", [
    (contrib.rnn.Conv2DLSTMCell, (1, 3, 8, 9), (1, 5, 6, 7)),
    (contrib.rnn.Conv3DGRUCell, (2, 3, 4, 5, 6), (2, 5, 2, 3, 4))])
def test_symbolic_unroll_names_and_shapes(cls: type, in_shape: tuple, out_shape: tuple) -> None:
    cell = cls(in_shape[1:], 5, 3, 3, prefix="rnn_")
    inputs = [sg.sym.var(f"rnn_t{i}_data") for i in range(3)]
    outputs, _ = cell.unroll(3, inputs)
    group = sg.sym.Group(outputs)
    assert group.list_outputs() == [f"rnn_t{i}_out_output" for i in range(3)]
    _, outs, _ = group.infer_shape(**{f"rnn_t{i}_data": in_shape for i in range(3)})
    assert outs == [out_shape] * 3  # batch 1 included: the state's batch comes from the data


@pytest.mark.parametrize("layout", ["TNC", "NTC"])
def test_dynamic_unroll_matches_unroll(layout: str) -> None:
    cell = rnn.LSTMCell(4, input_size=3, prefix="l_")
    cell.initialize(sg.init.Uniform(0.5))
    shape = (5, 2, 3) if layout == "TNC" else (2, 5, 3)
    x = nd.array(RNG.normal(size=shape))
    states = [nd.array(RNG.normal(size=(2, 4))) for _ in range(2)]
    valid = nd.array([3, 5])
    want, want_states = cell.unroll(5, x, states, layout=layout, merge_outputs=True,
                                    valid_length=valid)
    got, got_states = contrib.rnn.rnn_cell.dynamic_unroll(cell, x, states, layout=layout,
                                                          valid_length=valid)
    np.testing.assert_allclose(got.asnumpy(), want.asnumpy(), rtol=1e-5, atol=1e-6)
    for g, w in zip(got_states, want_states):
        np.testing.assert_allclose(g.asnumpy(), w.asnumpy(), rtol=1e-5, atol=1e-6)
    assert np.all(got.asnumpy()[(slice(3, None), 0) if layout == "TNC" else (0, slice(3, None))]
                  == 0)


class _Unrolled(sg.gluon.HybridBlock):
    def __init__(self) -> None:
        super().__init__(prefix="u_")
        with self.name_scope():
            self.cell = rnn.RNNCell(4, prefix="rnn_")  # input size left to inference

    def hybrid_forward(self, F, x, states):
        return contrib.rnn.rnn_cell.dynamic_unroll(self.cell, x, states, layout="TNC")


def test_hybridized_dynamic_unroll_infers_deferred_weights() -> None:
    """The loop body's weight declares (4, 0): the 0 is unknown, filled from the data."""
    net = _Unrolled()
    net.initialize(sg.init.Uniform(0.5))
    net.hybridize()
    x, h0 = RNG.normal(size=(3, 2, 5)), RNG.normal(size=(2, 4))
    out, _ = net(nd.array(x), [nd.array(h0)])
    p = {k[len("u_rnn_"):]: v.data().asnumpy().astype(np.float64)
         for k, v in net.collect_params().items()}
    assert p["i2h_weight"].shape == (4, 5)
    h, want = h0, []
    for t in range(3):  # h = tanh(x W^T + b + h U^T + c), float64
        h = np.tanh(x[t] @ p["i2h_weight"].T + p["i2h_bias"] + h @ p["h2h_weight"].T
                    + p["h2h_bias"])
        want.append(h)
    np.testing.assert_allclose(out.asnumpy(), np.stack(want), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kwargs,what", [
    ({"h2h_kernel": 2}, "odd"), ({"conv_layout": "NCHW"}, "conv_layout"),
    ({"i2h_pad": (1, 1)}, "i2h_pad")])
def test_conv_cell_bad_arguments(kwargs: dict, what: str) -> None:
    args = {"input_shape": (2, 6), "hidden_channels": 3, "i2h_kernel": 3, "h2h_kernel": 3}
    with pytest.raises(AttrError, match=what):
        contrib.rnn.Conv1DLSTMCell(**{**args, **kwargs})
