"""Control flow (``contrib.foreach``, ``while_loop``, ``cond``): an LSTM cell unrolled by
foreach against a float64 numpy LSTM (values and central-difference gradients), the GPU path
(the unrolled graph: same values, no host step in its CUDA lowering), ``sg.nd``'s versions,
errors, and MXNet 1.9.1 live (JSON both ways, values and gradients)."""
from __future__ import annotations

import json

import numpy as np
import pytest

import symgraph as sg
from symgraph.core.base import BindError, GraphError, ShapeError
from symgraph.runtime.cuda.actions import Host, flat_actions
from symgraph.runtime.cuda.plan import lower_schedule
from symgraph.core.types.infer_shape import infer_shapes
from symgraph.core.types.infer_type import infer_types
from symgraph.compiler.passes.unroll_control_flow import unroll_control_flow
from symgraph.core.types.table import TypeTable

from .mxnet_live import mxnet_json

S = sg.sym
T, N, D, H = 4, 2, 3, 5


def lstm_step(x, states, w_x, w_h, b):
    h, c = states
    gates = S.FullyConnected(x, w_x, b, num_hidden=4 * H) + \
        S.FullyConnected(h, w_h, num_hidden=4 * H, no_bias=True)
    i, f, g, o = S.SliceChannel(gates, num_outputs=4, axis=1)
    c_new = S.sigmoid(f) * c + S.sigmoid(i) * S.tanh(g)
    h_new = S.sigmoid(o) * S.tanh(c_new)
    return h_new, [h_new, c_new]


def lstm_symbol():
    w_x, w_h, b = S.var("w_x"), S.var("w_h"), S.var("b")
    outs, (h, c) = S.contrib.foreach(lambda x, st: lstm_step(x, st, w_x, w_h, b),
                                     S.var("data"), [S.var("h0"), S.var("c0")])
    return S.Group([outs, h, c])


def lstm_numpy(data, h0, c0, w_x, w_h, b):
    def sig(v):
        return 1 / (1 + np.exp(-v))
    h, c, rows = h0, c0, []
    for t in range(data.shape[0]):
        z = data[t] @ w_x.T + b + h @ w_h.T
        i, f, g, o = np.split(z, 4, axis=1)
        c = sig(f) * c + sig(i) * np.tanh(g)
        h = sig(o) * np.tanh(c)
        rows.append(h)
    return [np.stack(rows), h, c]


SHAPES = {"data": (T, N, D), "h0": (N, H), "c0": (N, H), "w_x": (4 * H, D),
          "w_h": (4 * H, H), "b": (4 * H,)}


def _values(seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    return {k: rng.normal(size=s) * 0.5 for k, s in SHAPES.items()}


def _nd(vals: dict) -> dict:
    return {k: sg.nd.array(v, dtype="float64") for k, v in vals.items()}


def _run(sym, vals: dict, heads: list) -> tuple[list, dict]:
    """Outputs and gradients (head gradients ``heads``) in float64 on the CPU."""
    grads = {k: sg.nd.zeros(v.shape, dtype="float64") for k, v in vals.items()}
    exe = sym.bind(sg.cpu(), _nd(vals), args_grad=grads)
    outs = [o.asnumpy() for o in exe.forward(is_train=True)]
    exe.backward([sg.nd.array(h, dtype="float64") for h in heads])
    return outs, {k: g.asnumpy() for k, g in grads.items()}


def _central(fn, vals: dict, name: str, eps: float = 1e-6) -> np.ndarray:
    out = np.zeros_like(vals[name])
    for idx in np.ndindex(out.shape):
        up = {k: v.copy() for k, v in vals.items()}
        up[name][idx] += eps
        down = {k: v.copy() for k, v in vals.items()}
        down[name][idx] -= eps
        out[idx] = (fn(up) - fn(down)) / (2 * eps)
    return out


def _heads(seed: int = 1) -> list:
    rng = np.random.default_rng(seed)
    return [rng.normal(size=(T, N, H)), rng.normal(size=(N, H)), rng.normal(size=(N, H))]


def test_lstm_foreach_matches_numpy_values_and_gradients() -> None:
    vals, heads = _values(), _heads()
    outs, grads = _run(lstm_symbol(), vals, heads)
    for got, want in zip(outs, lstm_numpy(**vals)):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)

    def loss(v: dict) -> float:
        return sum(float((o * h).sum()) for o, h in zip(lstm_numpy(**v), heads))
    for name in SHAPES:
        np.testing.assert_allclose(grads[name], _central(loss, vals, name), rtol=1e-6,
                                   atol=1e-8, err_msg=name)


def _unrolled(sym, shapes: dict, dtype: str = "float32"):
    graph = sym.graph()
    table = TypeTable(infer_shapes(graph, shapes),
                      infer_types(graph, {k: dtype for k in shapes}))
    return S.Symbol(unroll_control_flow(graph.with_types(table)).outputs)


def test_unrolled_lstm_has_no_host_step_and_same_values() -> None:
    """The CUDA backend's graph (foreach unrolled) lowers with no Host action, training and
    inference, and computes what the op's numpy reference computes."""
    sym = lstm_symbol()
    flat = _unrolled(sym, SHAPES)
    assert not any(n.op == "_foreach" for n in flat.graph().nodes())
    exe = flat.simple_bind(sg.cpu(), **SHAPES)
    for schedule in (exe._infer.schedule, exe._train.schedule):
        low = lower_schedule(schedule, 132)
        hosts = [a for acts in low.actions for a in flat_actions(acts) if isinstance(a, Host)]
        assert not hosts, [h.step.node.op for h in hosts]
    vals, heads = _values(2), _heads(3)
    want, want_g = _run(sym, vals, heads)
    got, got_g = _run(flat, vals, heads)
    for g, w in zip(got + [got_g[k] for k in SHAPES], want + [want_g[k] for k in SHAPES]):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)


def test_lowering_refuses_an_unrolled_op_by_name() -> None:
    exe = lstm_symbol().simple_bind(sg.cpu(), grad_req="null", **SHAPES)
    with pytest.raises(BindError, match=r"_foreach\d+ \(_foreach\).*unroll_control_flow"):
        lower_schedule(exe._infer.schedule, 132)


@pytest.mark.parametrize("start", [1.0, 9.0])
def test_while_and_cond_unrolled_match_reference(start: float) -> None:
    i, s, w = S.var("i"), S.var("s"), S.var("w")
    outs, (i_end, s_end) = S.contrib.while_loop(
        lambda i, s: i < 4, lambda i, s: ([S.exp(s * w)], [i + 1, s * w]), [i, s],
        max_iterations=5)
    out = S.contrib.cond(S.sum(s_end) > 0, lambda: s_end * 2, lambda: s_end - i_end)
    sym = S.Group([outs[0], i_end, out])
    shapes = {"i": (1,), "s": (3,), "w": (3,)}
    rng = np.random.default_rng(4)
    vals = {"i": np.array([start]), "s": rng.normal(size=3), "w": rng.normal(size=3)}
    heads = [rng.normal(size=(5, 3)), rng.normal(size=1), rng.normal(size=3)]
    want, want_g = _run(sym, vals, heads)
    got, got_g = _run(_unrolled(sym, shapes, "float64"), vals, heads)
    for g, w_ in zip(got + [got_g["s"], got_g["w"]], want + [want_g["s"], want_g["w"]]):
        np.testing.assert_allclose(g, w_, rtol=1e-10, atol=1e-12)
    steps = max(0, 4 - int(start))
    assert (want[0][steps:] == 0).all() and want[1][0] == start + steps


def test_nd_versions_match_numpy() -> None:
    vals = _values(5)
    x, h0, c0 = (sg.nd.array(vals[k], dtype="float64") for k in ("data", "h0", "c0"))
    w_x, w_h, b = (sg.nd.array(vals[k], dtype="float64") for k in ("w_x", "w_h", "b"))

    def step(xt, st):
        z = sg.nd.dot(xt, w_x, transpose_b=True) + b + sg.nd.dot(st[0], w_h, transpose_b=True)
        i, f, g, o = sg.nd.split(z, num_outputs=4, axis=1)
        c = sg.nd.sigmoid(f) * st[1] + sg.nd.sigmoid(i) * sg.nd.tanh(g)
        return sg.nd.sigmoid(o) * sg.nd.tanh(c), [sg.nd.sigmoid(o) * sg.nd.tanh(c), c]
    outs, (h, c) = sg.nd.contrib.foreach(step, x, [h0, c0])
    for got, want in zip((outs, h, c), lstm_numpy(**vals)):
        np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-10)
    rows, (n,) = sg.nd.contrib.while_loop(lambda n: n < 3, lambda n: (n * 10, [n + 1]),
                                          [sg.nd.array([0.0])], max_iterations=5)
    assert rows.asnumpy().ravel().tolist() == [0.0, 10.0, 20.0, 0.0, 0.0]
    assert n.asnumpy().tolist() == [3.0]
    picked = sg.nd.contrib.cond(sg.nd.array([0.0]), lambda: x, lambda: x * 2)
    np.testing.assert_allclose(picked.asnumpy(), vals["data"] * 2)


def test_bad_bodies_raise_typed_errors() -> None:
    x, h = S.var("x"), S.var("h")
    outs, st = S.contrib.foreach(lambda xt, s: (xt, [S.concat(s[0], s[0], dim=0)]), x, [h])
    with pytest.raises(ShapeError, match=r"_foreach\d+ \(_foreach\).*loop state 0.*\(6,\).*\(3,\)"):
        S.Group([outs, st[0]]).infer_shape(x=(4, 3), h=(3,))
    with pytest.raises(GraphError, match="2 states for 1 initial"):
        S.contrib.foreach(lambda xt, s: (xt, [s[0], s[0]]), x, [h])
    with pytest.raises(GraphError, match="not used by the body"):
        S.contrib.foreach(lambda xt, s: (s[0] * 2, [s[0]]), x, [h])
    with pytest.raises(GraphError, match="max_iterations"):
        S.contrib.while_loop(lambda v: v < 1, lambda v: ([], [v]), [x])
    with pytest.raises(GraphError, match="then_func gives 2 outputs, else_func 1"):
        S.contrib.cond(S.sum(x) > 0, lambda: [x, x], lambda: x)
    with pytest.raises(ShapeError, match="then_branch gives shape"):
        S.contrib.cond(S.sum(x) > 0, lambda: x, lambda: S.concat(x, x, dim=0)).infer_shape(
            x=(2,))
    with pytest.raises(GraphError, match="needs 1 subgraphs"):
        doc = json.loads(S.Group([outs]).tojson())
        next(n for n in doc["nodes"] if n["op"] == "_foreach")["subgraphs"] = []
        S.load_json(json.dumps(doc))


def test_json_round_trip_keeps_equal_attrs() -> None:
    sym = lstm_symbol()
    again = S.load_json(sym.tojson())
    node = next(n for n in sym.graph().nodes() if n.op == "_foreach")
    node2 = next(n for n in again.graph().nodes() if n.op == "_foreach")
    assert node.attrs == node2.attrs and hash(node.attrs) == hash(node2.attrs)
    assert again.tojson() == sym.tojson()


MX_SCRIPT = r"""
import json, sys
import mxnet as mx, numpy as np
job = json.load(sys.stdin)
H = job["H"]
def step(x, st):
    w_x, w_h, b = mx.sym.var("w_x"), mx.sym.var("w_h"), mx.sym.var("b")
    gates = mx.sym.FullyConnected(x, w_x, b, num_hidden=4 * H) + \
        mx.sym.FullyConnected(st[0], w_h, num_hidden=4 * H, no_bias=True)
    i, f, g, o = mx.sym.SliceChannel(gates, num_outputs=4, axis=1)
    c = mx.sym.sigmoid(f) * st[1] + mx.sym.sigmoid(i) * mx.sym.tanh(g)
    h = mx.sym.sigmoid(o) * mx.sym.tanh(c)
    return h, [h, c]
outs, (h, c) = mx.sym.contrib.foreach(step, mx.sym.var("data"),
                                      [mx.sym.var("h0"), mx.sym.var("c0")])
def run(sym):
    args = {k: mx.nd.array(v, dtype="float64") for k, v in job["vals"].items()}
    grads = {k: mx.nd.zeros(v.shape, dtype="float64") for k, v in args.items()}
    exe = sym.bind(mx.cpu(), args, args_grad=grads)
    outs = [o.asnumpy().tolist() for o in exe.forward(is_train=True)]
    exe.backward([mx.nd.array(x, dtype="float64") for x in job["heads"]])
    return outs, {k: g.asnumpy().tolist() for k, g in grads.items()}
ours = run(mx.sym.load_json(job["json"]))
theirs = run(mx.sym.Group([outs, h, c]))
print(json.dumps({"ours": ours, "theirs": theirs, "json": mx.sym.Group([outs, h, c]).tojson()}))
"""


@pytest.mark.mxnet
def test_mxnet_json_both_ways_values_and_gradients() -> None:
    vals, heads = _values(6), _heads(7)
    got = mxnet_json(MX_SCRIPT, {"H": H, "json": lstm_symbol().tojson(),
                                 "vals": {k: v.tolist() for k, v in vals.items()},
                                 "heads": [h.tolist() for h in heads]})
    want, want_g = lstm_numpy(**vals), None
    for run in (got["ours"], got["theirs"]):  # MXNet on our JSON, and on its own graph
        for o, w in zip(run[0], want):
            np.testing.assert_allclose(np.array(o), w, rtol=1e-10)
    outs, grads = _run(S.load_json(got["json"]), vals, heads)  # we run MXNet's JSON
    for o, w in zip(outs, want):
        np.testing.assert_allclose(o, w, rtol=1e-10)
    want_g = got["theirs"][1]
    for k in SHAPES:
        np.testing.assert_allclose(grads[k], np.array(want_g[k]), rtol=1e-8, atol=1e-12,
                                   err_msg=k)
        np.testing.assert_allclose(np.array(got["ours"][1][k]), np.array(want_g[k]),
                                   rtol=1e-8, atol=1e-12, err_msg=k)
