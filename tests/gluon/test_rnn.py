"""gluon.rnn layers and cells against the independent float64 numpy equations of
``rnn_reference.py``: outputs, states and gradients (central differences of the reference);
hybridized equals imperative; errors; a small LSTM language model trains."""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import symgraph as sg
from symgraph.frontend import autograd
from symgraph import gluon
from symgraph.core.base import AttrError, GraphError, ShapeError
from symgraph.gluon import rnn

from . import rnn_reference as ref

nd = sg.nd
T, N, C, H = 4, 3, 5, 6
LAYERS = {"RNN-relu": (rnn.RNN, "rnn_relu", {"activation": "relu"}),
          "RNN-tanh": (rnn.RNN, "rnn_tanh", {"activation": "tanh"}),
          "LSTM": (rnn.LSTM, "lstm", {}), "GRU": (rnn.GRU, "gru", {})}
# name: (layers, bidirectional, layout, projection, valid lengths)
CONFIGS = {"2x-bi-NTC": (2, True, "NTC", 0, False), "1x-TNC": (1, False, "TNC", 0, False),
           "2x-bi-lengths": (2, True, "TNC", 0, True)}


def _layer(kind: str, config: str) -> tuple[Any, str, tuple]:
    cls, mode, kw = LAYERS[kind]
    layers, bi, layout, proj, lengths = CONFIGS[config]
    if proj:
        kw = {**kw, "projection_size": proj}
    if lengths:
        kw = {**kw, "use_sequence_length": True}
    layer = cls(H, num_layers=layers, layout=layout, bidirectional=bi, input_size=C,
                dtype="float64", **kw)
    layer.initialize(sg.init.Uniform(0.5))
    return layer, mode, (layers, bi, layout, lengths)


def _values(layer: Any, seed: int) -> tuple[np.ndarray, list, dict]:
    rng = np.random.default_rng(seed)
    for p in layer.collect_params().values():
        p.set_data(nd.array(rng.uniform(-0.5, 0.5, p.shape), dtype=np.float64))
    x = rng.normal(size=(T, N, C))
    states = [rng.normal(size=i["shape"]) * 0.5 for i in layer.state_info(N)]
    params = {k[len(layer.prefix):]: v.data().asnumpy()
              for k, v in layer.collect_params().items()}
    return x, states, params


LENGTHS = np.array([2.0, 4.0, 1.0])


def _run(layer: Any, x: np.ndarray, states: list, layout: str, lengths: bool,
         heads: list) -> tuple[list, dict]:
    """Outputs and gradients (data, states, parameters) of sum(out_k * heads_k)."""
    xs = nd.array(x if layout == "TNC" else x.swapaxes(0, 1), dtype=np.float64)
    ss = [nd.array(s, dtype=np.float64) for s in states]
    for a in [xs] + ss:
        a.attach_grad()
    with autograd.record():
        extra = [nd.array(LENGTHS, dtype=np.float64)] if lengths else []
        out, new = layer(xs, ss, *extra)
        if layout == "NTC":
            out = nd.swapaxes(out, dim1=0, dim2=1)
        loss = sum(nd.sum(o * nd.array(h, dtype=np.float64)) for o, h in zip([out] + new, heads))
    loss.backward()
    grads = {"x": xs.grad.asnumpy(), **{f"s{i}": s.grad.asnumpy() for i, s in enumerate(ss)}}
    grads.update({k[len(layer.prefix):]: p.grad().asnumpy()
                  for k, p in layer.collect_params().items()})
    if layout == "NTC":
        grads["x"] = grads["x"].swapaxes(0, 1)
    return [out.asnumpy()] + [s.asnumpy() for s in new], grads


def _check_grads(loss: Any, values: dict, grads: dict, rng: np.random.Generator) -> None:
    """Central differences of ``loss(values)`` at 3 random coordinates of every input."""
    for name, v in values.items():
        for i in rng.choice(v.size, size=min(3, v.size), replace=False):
            bumped = []
            for sign in (1, -1):
                w = {k: a.copy() for k, a in values.items()}
                w[name].reshape(-1)[i] += sign * 1e-6
                bumped.append(loss(w))
            num = (bumped[0] - bumped[1]) / 2e-6
            np.testing.assert_allclose(grads[name].reshape(-1)[i], num, rtol=1e-5, atol=1e-8,
                                       err_msg=f"gradient of {name}[{i}]")


@pytest.mark.parametrize("config", sorted(CONFIGS))
@pytest.mark.parametrize("kind", sorted(LAYERS))
def test_layer_matches_numpy_equations(kind: str, config: str) -> None:
    layer, mode, (layers, bi, layout, lengths) = _layer(kind, config)
    x, states, params = _values(layer, 1)
    lens = LENGTHS if lengths else None
    want = ref.layer(mode, x, states, params, layers, bi, lens)
    rng = np.random.default_rng(2)
    heads = [rng.normal(size=want[0].shape)] + [rng.normal(size=s.shape) for s in want[1]]
    got, grads = _run(layer, x, states, layout, lengths, heads)
    for g, w in zip(got, [want[0]] + want[1]):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)

    def loss(v: dict) -> float:
        out, new = ref.layer(mode, v["x"], [v[f"s{i}"] for i in range(len(states))],
                             {k: v[k] for k in params}, layers, bi, lens)
        return float(sum(np.sum(o * h) for o, h in zip([out] + new, heads)))
    values = {"x": x, **{f"s{i}": s for i, s in enumerate(states)}, **params}
    _check_grads(loss, values, grads, rng)


def test_lstm_projection_matches_numpy() -> None:
    layer = rnn.LSTM(H, num_layers=2, projection_size=3, input_size=C, dtype="float64")
    layer.initialize()
    x, states, params = _values(layer, 3)
    assert [s.shape for s in states] == [(2, N, 3), (2, N, H)]
    want = ref.layer("lstm", x, states, params, 2, False)
    rng = np.random.default_rng(4)
    heads = [rng.normal(size=want[0].shape)] + [rng.normal(size=s.shape) for s in want[1]]
    got, grads = _run(layer, x, states, "TNC", False, heads)
    for g, w in zip(got, [want[0]] + want[1]):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(
        grads["l1_h2r_weight"][0, 0],
        (_proj_loss(x, states, params, heads, 1e-6) - _proj_loss(x, states, params, heads,
                                                                  -1e-6)) / 2e-6, rtol=1e-5)


def _proj_loss(x: np.ndarray, states: list, params: dict, heads: list, eps: float) -> float:
    p = {k: v.copy() for k, v in params.items()}
    p["l1_h2r_weight"][0, 0] += eps
    out, new = ref.layer("lstm", x, states, p, 2, False)
    return float(sum(np.sum(o * h) for o, h in zip([out] + new, heads)))


def test_hybridized_equals_imperative_and_skips_states() -> None:
    layer = rnn.GRU(H, num_layers=2, layout="NTC", bidirectional=True)
    layer.initialize()
    x = nd.array(np.random.default_rng(5).normal(size=(N, T, C)))
    eager = layer(x).asnumpy()
    assert eager.shape == (N, T, 2 * H)
    layer.hybridize()
    np.testing.assert_allclose(layer(x).asnumpy(), eager, rtol=1e-6)
    out, states = layer(x, layer.begin_state(N))
    np.testing.assert_allclose(out.asnumpy(), eager, rtol=1e-6)
    assert [s.shape for s in states] == [(4, N, H)]


def test_bidirectional_layer_in_a_hybridized_block_infers_its_input_size() -> None:
    """Both directions' first i2h weights have an unknown width inside a parent's trace: the
    flat parameters' shape rule (``_rnn_param_concat``) shares the rest equally."""
    net = sg.gluon.nn.HybridSequential()
    net.add(rnn.LSTM(H, bidirectional=True, dtype="float64"))
    net.hybridize()
    net.initialize()
    x = np.random.default_rng(6).normal(size=(T, N, C))
    got = net(nd.array(x, dtype=np.float64)).asnumpy()
    layer = net[0]
    assert layer.l0_i2h_weight.shape == layer.r0_i2h_weight.shape == (4 * H, C)
    params = {k[len(layer.prefix):]: v.data().asnumpy() for k, v in
              layer.collect_params().items()}
    zeros = [np.zeros((2, N, H)), np.zeros((2, N, H))]
    np.testing.assert_allclose(got, ref.layer("lstm", x, zeros, params, 1, True)[0],
                               rtol=1e-10, atol=1e-12)


def test_rnn_param_concat_shares_the_unknown_sizes_equally() -> None:
    S = sg.sym
    a, b, c, d = (S.var(n) for n in "abcd")
    joined = S.elemwise_add(S._rnn_param_concat(a, b, c, dim=0, num_args=3), d)
    shapes, _, _ = joined.infer_shape_partial(c=(4,), d=(10,))
    assert dict(zip(joined.list_arguments(), shapes)) == {"a": (3,), "b": (3,), "c": (4,),
                                                          "d": (10,)}
    with pytest.raises(ShapeError, match="5 along dim 0 cannot be shared equally"):
        joined.infer_shape_partial(c=(4,), d=(9,))


def test_parameter_names_and_shapes_are_mxnets() -> None:
    layer = rnn.LSTM(H, num_layers=2, bidirectional=True, input_size=C, prefix="lstm0_")
    names = {k: v.shape for k, v in layer.collect_params().items()}
    assert list(names)[:5] == ["lstm0_l0_i2h_weight", "lstm0_l0_h2h_weight",
                               "lstm0_l0_i2h_bias", "lstm0_l0_h2h_bias", "lstm0_r0_i2h_weight"]
    assert names["lstm0_l1_i2h_weight"] == (4 * H, 2 * H)
    assert names["lstm0_r1_h2h_bias"] == (4 * H,)


def test_errors_name_the_layer_and_values() -> None:
    layer = rnn.LSTM(H, input_size=C, prefix="lm_")
    layer.initialize()
    x = nd.ones((T, N, C))
    with pytest.raises(ShapeError, match=r"lm.*state 0 has shape \(1, 2, 6\).*\(1, 3, 6\)"):
        layer(x, [nd.zeros((1, 2, H)), nd.zeros((1, N, H))])
    with pytest.raises(AttrError, match="sequence_length"):
        layer(x, layer.begin_state(N), nd.ones((N,)))
    with pytest.raises(AttrError, match="layout='CTN'"):
        rnn.GRU(H, layout="CTN")
    with pytest.raises(AttrError, match="state_clip_min"):
        rnn.LSTM(H, state_clip_min=-1.0)
    with pytest.raises(GraphError, match="Bidirectional cannot be stepped"):
        rnn.BidirectionalCell(rnn.GRUCell(H), rnn.GRUCell(H))(x[0], [])
    np.testing.assert_array_equal(x.asnumpy(), 1.0)  # the user's data is untouched


CELLS = {"RNNCell": (lambda: rnn.RNNCell(H, input_size=C), "rnn_tanh"),
         "RNNCell-relu": (lambda: rnn.RNNCell(H, "relu", input_size=C), "rnn_relu"),
         "LSTMCell": (lambda: rnn.LSTMCell(H, input_size=C), "lstm"),
         "GRUCell": (lambda: rnn.GRUCell(H, input_size=C), "gru"),
         "LSTMPCell": (lambda: rnn.LSTMPCell(H, 3, input_size=C), "lstm")}


def _cell_values(cell: Any, seed: int) -> tuple[np.ndarray, dict]:
    cell.initialize()
    rng = np.random.default_rng(seed)
    for p in cell.collect_params().values():
        p.set_data(nd.array(rng.uniform(-0.5, 0.5, p.shape)))
    return rng.normal(size=(N, T, C)), {k[len(cell.prefix):]: v.data().asnumpy().astype(
        np.float64) for k, v in cell.collect_params().items()}


@pytest.mark.parametrize("lengths", [False, True])
@pytest.mark.parametrize("name", sorted(CELLS))
def test_cell_unroll_matches_numpy(name: str, lengths: bool) -> None:
    cell = CELLS[name][0]()
    x, params = _cell_values(cell, 6)
    lens = LENGTHS if lengths else None
    states = [np.zeros(i["shape"]) for i in cell.state_info(N)]
    want, want_states = ref.direction(CELLS[name][1], x.swapaxes(0, 1), states, params, lens,
                                      False)
    out, got_states = cell.unroll(T, nd.array(x), layout="NTC", merge_outputs=True,
                                  valid_length=None if lens is None else nd.array(lens))
    np.testing.assert_allclose(out.asnumpy().swapaxes(0, 1), want, rtol=1e-5, atol=1e-6)
    for g, w in zip(got_states, want_states):
        np.testing.assert_allclose(g.asnumpy(), w, rtol=1e-5, atol=1e-6)


def test_bidirectional_and_sequential_cells_match_the_layer_equations() -> None:
    bi = rnn.BidirectionalCell(rnn.LSTMCell(H, input_size=C, prefix="l0_"),
                               rnn.LSTMCell(H, input_size=C, prefix="r0_"))
    x, params = _cell_values(bi, 7)
    states = [np.zeros((2, N, H)), np.zeros((2, N, H))]
    want, _ = ref.layer("lstm", x.swapaxes(0, 1), states, params, 1, True, LENGTHS)
    out, _ = bi.unroll(T, nd.array(x.swapaxes(0, 1)), layout="TNC", merge_outputs=True,
                       valid_length=nd.array(LENGTHS))
    np.testing.assert_allclose(out.asnumpy(), want, rtol=1e-5, atol=1e-6)
    seq = rnn.HybridSequentialRNNCell()
    with seq.name_scope():
        seq.add(rnn.GRUCell(H, input_size=C, prefix="l0_"))
        seq.add(rnn.GRUCell(H, input_size=H, prefix="l1_"))
    x, params = _cell_values(seq, 8)
    want, _ = ref.layer("gru", x.swapaxes(0, 1), [np.zeros((2, N, H))], params, 2, False)
    out, states = seq.unroll(T, nd.array(x), merge_outputs=True)
    np.testing.assert_allclose(out.asnumpy().swapaxes(0, 1), want, rtol=1e-5, atol=1e-6)
    assert len(states) == 2 and len(seq.state_info()) == 2


def test_modifier_cells() -> None:
    base = rnn.GRUCell(H, input_size=H)
    res = rnn.ResidualCell(base)
    res.initialize()
    x = nd.array(np.random.default_rng(9).normal(size=(N, T, H)))
    plain, _ = base.unroll(T, x, begin_state=res.begin_state(N), merge_outputs=True)
    out, _ = res.unroll(T, x, merge_outputs=True)
    np.testing.assert_allclose(out.asnumpy(), plain.asnumpy() + x.asnumpy(), rtol=1e-6)
    with pytest.raises(GraphError, match="modifier"):
        base.begin_state(N)
    for cell in (rnn.ZoneoutCell(rnn.GRUCell(H, input_size=H), 0.5, 0.5),
                 rnn.VariationalDropoutCell(rnn.GRUCell(H, input_size=H), 0.5, 0.5, 0.5)):
        cell.initialize()
        inference, _ = cell.unroll(T, x, merge_outputs=True)  # no dropout outside record()
        with autograd.record():
            train, _ = cell.unroll(T, x, merge_outputs=True)
        assert not np.allclose(train.asnumpy(), inference.asnumpy())
    drop = rnn.DropoutCell(0.5)
    with autograd.record():
        y, _ = drop.unroll(T, nd.ones((N, T, 100)), merge_outputs=True)
    share = float((y.asnumpy() == 0).mean())
    assert 0.4 < share < 0.6 and set(np.unique(y.asnumpy())) == {0.0, 2.0}


def test_lstm_language_model_trains() -> None:
    """Embedding -> 2-layer LSTM -> Dense learns to predict the next token of a fixed
    sequence: the loss falls, hybridized, through autograd.record and Trainer."""
    vocab, steps, batch = 12, 8, 4
    sg.random.seed(0)
    net = gluon.nn.HybridSequential()
    with net.name_scope():
        net.add(gluon.nn.Embedding(vocab, 16), rnn.LSTM(32, num_layers=2, layout="NTC"),
                gluon.nn.Dense(vocab, flatten=False))
    net.initialize(sg.init.Xavier())
    net.hybridize()
    trainer = gluon.Trainer(net.collect_params(), "adam", {"learning_rate": 0.01})
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    seq = (np.arange(batch * (steps + 1)).reshape(batch, steps + 1) * 5) % vocab
    data, label = nd.array(seq[:, :-1]), nd.array(seq[:, 1:])
    losses = []
    for _ in range(30):
        with autograd.record():
            loss = loss_fn(net(data), label)
        loss.backward()
        trainer.step(batch)
        losses.append(loss.mean().asnumpy().item())
    assert losses[-1] < 0.5 * losses[0], losses
