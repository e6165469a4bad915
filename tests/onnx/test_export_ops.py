"""Every op export_model converts: the file passes onnx.checker's full check and onnxruntime
gives symgraph's outputs; the exporter's defects (duplicate node names, N-D dot, a dynamic
batch through Reshape and SoftmaxOutput, an output that is an input) stay fixed."""
from __future__ import annotations

import numpy as np
import pytest

import symgraph as sg
from symgraph.interop.onnx.export_ops import EXPORTERS

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
S = sg.sym
X = S.var("x")
Y = S.var("y")

# op -> (symbol of x (and y), input shapes); inputs are drawn in (0.5, 1.5) so log, sqrt,
# reciprocal and powers stay finite
CASES = {
    "Activation": (S.Activation(X, act_type="softrelu"), [(2, 3)]),
    "BatchNorm": (S.BatchNorm(X, fix_gamma=False, name="bn"), [(2, 3, 4, 4)]),
    "BlockGrad": (S.BlockGrad(X) * 2, [(2, 3)]),
    "Cast": (S.Cast(X, dtype="float64"), [(2, 3)]),
    "Concat": (S.Concat(X, Y, dim=1), [(2, 3), (2, 2)]),
    "Convolution": (S.Convolution(X, kernel=(3, 3), num_filter=2, pad=(1, 1), name="c"),
                    [(1, 2, 5, 5)]),
    "Deconvolution": (S.Deconvolution(X, kernel=(2, 2), stride=(2, 2), num_filter=2,
                                      name="d"), [(1, 2, 3, 3)]),
    "Dropout": (S.Dropout(X, p=0.5), [(2, 3)]),
    "Embedding": (S.Embedding(X, input_dim=5, output_dim=3, name="e"), [(2, 4)]),
    "Flatten": (S.Flatten(X), [(2, 3, 2)]),
    "FullyConnected": (S.FullyConnected(X, num_hidden=4, name="fc"), [(2, 3, 2)]),
    "LeakyReLU": (S.LeakyReLU(X - 1, act_type="elu", slope=0.3), [(2, 3)]),
    "LinearRegressionOutput": (S.LinearRegressionOutput(X, name="lro"), [(2, 3)]),
    "LogisticRegressionOutput": (S.LogisticRegressionOutput(X, name="lgo"), [(2, 3)]),
    "MAERegressionOutput": (S.MAERegressionOutput(X, name="mae"), [(2, 3)]),
    "Pooling": (S.Pooling(X, kernel=(2, 2), stride=(2, 2), pool_type="sum"), [(1, 2, 4, 4)]),
    "Reshape": (S.Reshape(X, shape=(0, -1)), [(2, 3, 2)]),
    "SoftmaxActivation": (S.SoftmaxActivation(X), [(2, 3)]),
    "SoftmaxOutput": (S.SoftmaxOutput(X, name="so"), [(2, 3, 2)]),
    "add_n": (S.add_n(X, X, X), [(2, 3)]),
    "clip": (S.clip(X, a_min=0.8, a_max=1.2), [(2, 3)]),
    "dot": (S.dot(X, Y), [(2, 3), (3, 4)]),
    "expand_dims": (S.expand_dims(X, axis=1), [(2, 3)]),
    "log_softmax": (S.log_softmax(X, axis=0), [(2, 3)]),
    "softmax": (S.softmax(X, axis=-1, temperature=2.0), [(2, 3)]),
    "reshape_like": (S.reshape_like(X, Y), [(2, 3), (3, 2)]),
    "square": (S.square(X), [(2, 3)]),
    "squeeze": (S.squeeze(X, axis=1), [(2, 1, 3)]),
    "transpose": (S.transpose(X, axes=(1, 0, 2)), [(2, 3, 2)]),
    "identity": (S.identity(X) + 1, [(2, 3)]),
}
for _op in ("sum", "mean", "max", "min"):
    CASES[_op] = (getattr(S, _op)(X, axis=1, keepdims=True), [(2, 3, 2)])
for _op in ("abs", "exp", "log", "negative", "reciprocal", "relu", "sigmoid", "sign",
            "softrelu", "softsign", "sqrt", "tanh"):
    CASES[_op] = (getattr(S, _op)(X), [(2, 3)])
for _op in ("broadcast_add", "broadcast_div", "broadcast_maximum", "broadcast_minimum",
            "broadcast_mul", "broadcast_power", "broadcast_sub"):
    CASES[_op] = (getattr(S, _op)(X, Y), [(2, 3), (1, 3)])
for _op in ("elemwise_add", "elemwise_div", "elemwise_mul", "elemwise_sub", "_maximum",
            "_minimum", "_power"):
    CASES[_op] = (getattr(S, _op)(X, Y), [(2, 3), (2, 3)])
for _op in ("_div_scalar", "_maximum_scalar", "_minimum_scalar", "_minus_scalar",
            "_mul_scalar", "_plus_scalar", "_power_scalar", "_rdiv_scalar", "_rminus_scalar",
            "_rpower_scalar"):
    CASES[_op] = (getattr(S, _op)(X, scalar=1.25), [(2, 3)])


def _random_params(net, shapes, rng):
    arg_shapes, _, aux_shapes = net.infer_shape(**shapes)
    arg = {n: rng.uniform(0.5, 1.5, s).astype(np.float32)
           for n, s in zip(net.list_arguments(), arg_shapes) if n not in shapes}
    aux = {n: rng.uniform(0.5, 1.5, s).astype(np.float32)
           for n, s in zip(net.list_auxiliary_states(), aux_shapes)}
    return arg, aux


def _symgraph(net, arg, aux, feeds):
    exe = net.bind(sg.cpu(), {**{k: sg.nd.array(v) for k, v in {**arg, **feeds}.items()},
                              **{k: sg.nd.zeros(s) for k, s in _labels(net, feeds).items()}},
                   grad_req="null", aux_states={k: sg.nd.array(v) for k, v in aux.items()})
    return [o.asnumpy() for o in exe.forward(is_train=False)]


def _labels(net, feeds):
    shapes = dict(zip(net.list_arguments(),
                      net.infer_shape(**{k: v.shape for k, v in feeds.items()})[0]))
    return {n: shapes[n] for n in net.list_arguments() if n.endswith("label")}


def export_and_compare(tmp_path, net, feeds, dynamic=False, run_feeds=None, arg_aux=None):
    """Export ``net``; check the file fully; compare onnxruntime with symgraph on
    ``run_feeds`` (default ``feeds``)."""
    rng = np.random.default_rng(0)
    shapes = {k: v.shape for k, v in feeds.items()}
    arg, aux = arg_aux or _random_params(net, shapes, rng)
    path = str(tmp_path / "m.onnx")
    sg.onnx.export_model(net, {**arg, **aux}, list(shapes.values()), np.float32, path,
                         dynamic=dynamic)
    model = onnx.load(path)
    onnx.checker.check_model(model, full_check=True)
    names = [n.name for n in model.graph.node]
    assert len(names) == len(set(names))
    run_feeds = run_feeds or feeds
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    got = sess.run(None, {i.name: run_feeds[i.name] for i in sess.get_inputs()})
    want = _symgraph(net, arg, aux, run_feeds)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    return model


def test_every_exporter_has_a_case():
    assert sorted(EXPORTERS) == sorted(CASES)


@pytest.mark.parametrize("op", sorted(CASES))
def test_export_op(tmp_path, op):
    net, shapes = CASES[op]
    rng = np.random.default_rng(1)
    names = [n for n in net.list_arguments() if n in ("x", "y")]
    feeds = {n: rng.uniform(0.5, 1.5, s).astype(np.float32) for n, s in zip(names, shapes)}
    if op == "Embedding":
        feeds["x"] = rng.integers(0, 5, shapes[0]).astype(np.float32)
    export_and_compare(tmp_path, net, feeds)


def test_nodes_sharing_a_name_export_uniquely(tmp_path):
    a = S.relu(X, name="act")
    net = S.relu(a * 2, name="act")
    x = np.random.default_rng(2).normal(size=(2, 3)).astype(np.float32)
    model = export_and_compare(tmp_path, net, {"x": x})
    assert len({o for n in model.graph.node for o in n.output}) == \
        sum(len(n.output) for n in model.graph.node)


def test_nd_dot_contracts_the_first_axis_of_b(tmp_path):
    rng = np.random.default_rng(3)
    x = rng.normal(size=(2, 3, 4)).astype(np.float32)
    y = rng.normal(size=(4, 2, 3)).astype(np.float32)
    export_and_compare(tmp_path, S.dot(X, Y), {"x": x, "y": y})
    sess = ort.InferenceSession(str(tmp_path / "m.onnx"), providers=["CPUExecutionProvider"])
    (got,) = sess.run(None, {"x": x, "y": y})
    np.testing.assert_allclose(got, np.tensordot(x.astype(np.float64), y, axes=1),
                               rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("flag", ["transpose_a", "transpose_b"])
def test_nd_dot_with_transposes(tmp_path, flag):
    """transpose_a contracts a's first axis, transpose_b b's last (MXNet 1.9's dot)."""
    rng = np.random.default_rng(4)
    x = rng.normal(size=(4, 3, 2) if flag == "transpose_a" else (3, 4)).astype(np.float32)
    y = rng.normal(size=(4, 5) if flag == "transpose_a" else (2, 5, 4)).astype(np.float32)
    export_and_compare(tmp_path, S.dot(X, Y, **{flag: True}), {"x": x, "y": y})
    sess = ort.InferenceSession(str(tmp_path / "m.onnx"), providers=["CPUExecutionProvider"])
    (got,) = sess.run(None, {"x": x, "y": y})
    xx, yy = x.astype(np.float64), y.astype(np.float64)
    want = (np.tensordot(xx, yy, axes=([0], [0])) if flag == "transpose_a"
            else np.tensordot(xx, yy, axes=([1], [2])))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_output_that_is_an_input(tmp_path):
    x = np.random.default_rng(5).normal(size=(2, 3)).astype(np.float32)
    model = export_and_compare(tmp_path, S.Group([S.relu(X), X]), {"x": x})
    assert [i.name for i in model.graph.input] == ["x"]


@pytest.mark.parametrize("head", ["Reshape", "SoftmaxOutput"])
def test_dynamic_batch_runs_at_another_size_without_warnings(tmp_path, capfd, head):
    body = S.FullyConnected(S.Reshape(X, shape=(0, -1)), num_hidden=6, name="fc")
    body = S.Reshape(body, shape=(0, 2, 3))
    net = S.SoftmaxOutput(body, name="so") if head == "SoftmaxOutput" else body
    rng = np.random.default_rng(6)
    arg_aux = _random_params(net, {"x": (1, 2, 2)}, rng)
    capfd.readouterr()
    export_and_compare(tmp_path, net, {"x": rng.normal(size=(1, 2, 2)).astype(np.float32)},
                       dynamic=True, arg_aux=arg_aux,
                       run_feeds={"x": rng.normal(size=(5, 2, 2)).astype(np.float32)})
    err = capfd.readouterr().err
    assert "[W:" not in err and "does not match" not in err, err
