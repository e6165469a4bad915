"""``sg.rnn`` (MXNet's symbolic cells): names, shapes, and unrolled forward values against
MXNet 1.9.1 run live (``mxnet``) on the same weights, and against a float64 numpy LSTM."""
from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest

import symgraph as sg
from symgraph.core.base import DataError, GraphError

from ..mxnet_live import mxnet_json

T, N, C = 3, 2, 4

# each case builds (cell, merge_outputs) from a module that is mx.rnn or sg.rnn
BUILD = {
    "rnn": "R.RNNCell(5, activation='relu', prefix='a_')",
    "lstm": "R.LSTMCell(5, prefix='b_', forget_bias=2.0)",
    "gru": "R.GRUCell(5, prefix='c_')",
    "stack": "_stack(R)",
    "bi": "R.BidirectionalCell(R.GRUCell(3, prefix='l_'), R.LSTMCell(3, prefix='r_'),"
          " output_prefix='bi_')",
    "unfused": "R.FusedRNNCell(4, num_layers=2, mode='gru', bidirectional=True,"
               " prefix='f_').unfuse()",
    "fused": "R.FusedRNNCell(3, num_layers=2, mode='lstm', bidirectional=True, prefix='u_')",
}
STACK = '''
def _stack(R):
    s = R.SequentialRNNCell()
    s.add(R.LSTMCell(4, prefix='s0_'))
    s.add(R.ResidualCell(R.GRUCell(4, prefix='s1_')))
    s.add(R.DropoutCell(0.0))
    return s
'''

MX_SCRIPT = STACK + r'''
import json, sys
import numpy as np
import mxnet as mx
R = mx.rnn
job = json.load(sys.stdin)
out = {}
for key, src in job["build"].items():
    cell = eval(src)
    outs, _ = cell.unroll(%d, mx.sym.Variable("data"), layout="NTC", merge_outputs=True)
    args = {k: mx.nd.array(np.array(v)) for k, v in job["weights"][key].items()}
    got = outs.eval(ctx=mx.cpu(), **args)[0].asnumpy()
    out[key] = {"names": sorted(cell.params._params), "value": got.tolist(),
                "unpacked": sorted(cell.unpack_weights(args))}
print(json.dumps(out))
''' % T


def _stack(R: Any) -> Any:
    s = R.SequentialRNNCell()
    s.add(R.LSTMCell(4, prefix="s0_"))
    s.add(R.ResidualCell(R.GRUCell(4, prefix="s1_")))
    s.add(R.DropoutCell(0.0))
    return s


def _build(key: str) -> Any:
    return eval(BUILD[key], {"R": sg.rnn, "_stack": _stack})  # the same text MXNet runs


def _weights(key: str) -> dict[str, np.ndarray]:
    cell = _build(key)
    outs, _ = cell.unroll(T, sg.sym.Variable("data"), layout="NTC", merge_outputs=True)
    shapes = dict(zip(outs.list_arguments(), outs.infer_shape(data=(N, T, C))[0]))
    rng = np.random.default_rng(7)
    return {k: rng.uniform(-0.5, 0.5, s).round(3) for k, s in shapes.items()}


def _forward(key: str, weights: dict) -> np.ndarray:
    cell = _build(key)
    outs, _ = cell.unroll(T, sg.sym.Variable("data"), layout="NTC", merge_outputs=True)
    return outs.eval(**{k: sg.nd.array(v) for k, v in weights.items()})[0].asnumpy()


@pytest.mark.mxnet
def test_unrolled_cells_match_mxnet() -> None:
    weights = {k: _weights(k) for k in BUILD}
    want = mxnet_json(MX_SCRIPT, {"build": BUILD, "weights": {
        k: {n: v.tolist() for n, v in w.items()} for k, w in weights.items()}})
    for key in BUILD:
        cell = _build(key)
        assert sorted(cell.params._params) == want[key]["names"], key
        assert sorted(cell.unpack_weights(weights[key])) == want[key]["unpacked"], key
        np.testing.assert_allclose(_forward(key, weights[key]), want[key]["value"],
                                   rtol=1e-5, atol=1e-6, err_msg=key)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-x))


def test_lstm_matches_a_float64_numpy_lstm() -> None:
    w = _weights("lstm")
    x = w.pop("data")
    h = c = np.zeros((N, 5))
    want = []
    for t in range(T):
        z = x[:, t] @ w["b_i2h_weight"].T + w["b_i2h_bias"] + h @ w["b_h2h_weight"].T + \
            w["b_h2h_bias"]
        i, f, g, o = np.split(z, 4, axis=1)
        c = _sigmoid(f) * c + _sigmoid(i) * np.tanh(g)
        h = _sigmoid(o) * np.tanh(c)
        want.append(h)
    np.testing.assert_allclose(_forward("lstm", {**w, "data": x}), np.stack(want, 1),
                               rtol=1e-5, atol=1e-6)


def test_names_shapes_and_forget_bias_init() -> None:
    cell = sg.rnn.LSTMCell(6, prefix="l_", forget_bias=3.0)
    outs, states = cell.unroll(2, [sg.sym.Variable(f"x{i}") for i in range(2)])
    group = sg.sym.Group(outs)
    assert group.list_outputs() == ["l_t0_out_output", "l_t1_out_output"]
    assert group.infer_shape(x0=(4, 3), x1=(4, 3))[1] == [(4, 6), (4, 6)]
    mod = sg.mod.Module(outs[-1], data_names=["x0", "x1"], label_names=None)
    mod.bind(data_shapes=[("x0", (4, 3)), ("x1", (4, 3))])
    mod.init_params()
    bias = mod.get_params()[0]["l_i2h_bias"].asnumpy()
    np.testing.assert_array_equal(bias, np.r_[np.zeros(6), np.full(6, 3.0), np.zeros(12)])


def test_pack_inverts_unpack_and_bad_use_is_typed() -> None:
    cell = sg.rnn.GRUCell(2, prefix="g_")
    args = {"g_i2h_weight": np.arange(12.0).reshape(6, 2), "g_i2h_bias": np.arange(6.0),
            "g_h2h_weight": np.arange(12.0).reshape(6, 2) + 1, "g_h2h_bias": np.arange(6.0)}
    packed = cell.pack_weights(cell.unpack_weights(args))
    assert sorted(packed) == sorted(args)
    for k, v in args.items():
        np.testing.assert_array_equal(packed[k], v)
    wrapped = sg.rnn.ZoneoutCell(cell, zoneout_states=0.5)
    with pytest.raises(GraphError, match="modifier"):
        cell.begin_state()
    assert len(wrapped.begin_state()) == 1
    with pytest.raises(GraphError, match="unroll"):
        sg.rnn.BidirectionalCell(sg.rnn.GRUCell(2), sg.rnn.GRUCell(2))(None, [])


def test_encode_sentences_and_bucket_iterator() -> None:
    coded, vocab = sg.rnn.encode_sentences([["a", "b", "c"], ["b", "c", "d"]],
                                           vocab={"a": 1, "b": 2, "c": 3},
                                           unknown_token="UNK")
    assert coded == [[1, 2, 3], [2, 3, 0]] and vocab["UNK"] == 0
    with pytest.raises(DataError, match="'z'"):
        sg.rnn.encode_sentences([["z"]], vocab={"a": 1})
    sents = [[1, 2], [3, 4], [5, 6, 7], [8, 9, 10], [11]]
    it = sg.rnn.BucketSentenceIter(sents, batch_size=2, buckets=[2, 3], invalid_label=0)
    batches = {b.bucket_key: b for b in it}
    assert sorted(batches) == [2, 3]  # the one-word sentence pads into bucket 2, unbatched
    data, label = batches[3].data[0].asnumpy(), batches[3].label[0].asnumpy()
    assert sorted(map(tuple, data.tolist())) == [(5, 6, 7), (8, 9, 10)]
    np.testing.assert_array_equal(label[:, :-1], data[:, 1:])
    np.testing.assert_array_equal(label[:, -1], 0)


def test_rnn_checkpoint_round_trip(tmp_path: Any) -> None:
    cell = sg.rnn.LSTMCell(2, prefix="k_")
    outs, _ = cell.unroll(1, [sg.sym.Variable("x")])
    rng = np.random.default_rng(0)
    args = {"k_i2h_weight": rng.normal(size=(8, 3)), "k_i2h_bias": rng.normal(size=8),
            "k_h2h_weight": rng.normal(size=(8, 2)), "k_h2h_bias": rng.normal(size=8)}
    args = {k: sg.nd.array(v) for k, v in args.items()}
    prefix = str(tmp_path / "m")
    sg.rnn.do_rnn_checkpoint(cell, prefix)(0, outs[0], args, {})
    saved = sg.model.load_checkpoint(prefix, 1)[1]
    assert "k_i2h_f_weight" in saved and "k_i2h_weight" not in saved
    _, loaded, _ = sg.rnn.load_rnn_checkpoint(cell, prefix, 1)
    for k, v in args.items():
        np.testing.assert_allclose(loaded[k].asnumpy(), v.asnumpy(), rtol=1e-6)


def test_fused_pack_inverts_unpack_and_matches_unfused_names() -> None:
    fused = sg.rnn.FusedRNNCell(3, num_layers=2, mode="gru", bidirectional=True, prefix="q_")
    flat = sg.nd.array(np.arange(_weights_size(fused), dtype=np.float32))
    parts = fused.unpack_weights({"q_parameters": flat})
    unfused = fused.unfuse()
    outs, _ = unfused.unroll(2, sg.sym.Variable("data"), merge_outputs=True)
    shapes = dict(zip(outs.list_arguments(), outs.infer_shape(data=(1, 2, 5))[0]))
    # the unfused cells keep gates together: their pack_weights joins the fused cell's pieces
    assert {k: tuple(v.shape) for k, v in unfused.pack_weights(parts).items()} == \
        {k: s for k, s in shapes.items() if k != "data"}
    back = fused.pack_weights(parts)["q_parameters"].asnumpy()
    np.testing.assert_array_equal(back, flat.asnumpy())


def _weights_size(cell: Any) -> int:
    outs, _ = cell.unroll(2, sg.sym.Variable("data"), merge_outputs=True)
    return dict(zip(outs.list_arguments(), outs.infer_shape(data=(1, 2, 5))[0]))[
        f"{cell._prefix}parameters"][0]


CONV = {"crnn": "R.ConvRNNCell((2, 3, 5, 4), 4, prefix='cr_')",
        "clstm": "R.ConvLSTMCell((2, 3, 5, 4), 4, prefix='cl_', i2h_kernel=(3, 3))",
        "cgru": "R.ConvGRUCell((2, 3, 5, 4), 4, prefix='cg_', h2h_kernel=(5, 5))"}
CONV_SCRIPT = r'''
import json, sys
import numpy as np
import mxnet as mx
R = mx.rnn
job = json.load(sys.stdin)
out = {}
for key, src in job["build"].items():
    cell = eval(src)
    outs, _ = cell.unroll(2, [mx.sym.Variable("x0"), mx.sym.Variable("x1")])
    args = {k: mx.nd.array(np.array(v)) for k, v in job["weights"][key].items()}
    out[key] = {"names": mx.sym.Group(outs).list_outputs(),
                "value": mx.sym.Group(outs).eval(ctx=mx.cpu(), **args)[1].asnumpy().tolist()}
print(json.dumps(out))
'''


@pytest.mark.mxnet
def test_conv_cells_match_mxnet() -> None:
    rng, weights, mine = np.random.default_rng(3), {}, {}
    for key, src in CONV.items():
        outs, _ = eval(src, {"R": sg.rnn}).unroll(2, [sg.sym.Variable("x0"),
                                                      sg.sym.Variable("x1")])
        group = sg.sym.Group(outs)
        shapes = group.infer_shape(x0=(2, 3, 5, 4), x1=(2, 3, 5, 4))[0]
        weights[key] = {k: rng.uniform(-0.5, 0.5, s).round(3)
                        for k, s in zip(group.list_arguments(), shapes)}
        mine[key] = (group.list_outputs(), group.eval(
            **{k: sg.nd.array(v) for k, v in weights[key].items()})[1].asnumpy())
    want = mxnet_json(CONV_SCRIPT, {"build": CONV, "weights": {
        k: {n: v.tolist() for n, v in w.items()} for k, w in weights.items()}})
    for key in CONV:
        assert mine[key][0] == want[key]["names"], key
        np.testing.assert_allclose(mine[key][1], want[key]["value"], rtol=1e-5, atol=1e-6,
                                   err_msg=key)
