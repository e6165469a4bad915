"""import_model: ONNX files made with onnx.helper (and torch.onnx.export where torch is
installed) import and run on symgraph with onnxruntime's outputs; export -> import round trip."""
from __future__ import annotations

import importlib

import numpy as np
import pytest

import symgraph as sg

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402


def _run_symgraph(sym, arg, aux, feeds):
    exe = sym.simple_bind(sg.cpu(), grad_req="null", **{k: v.shape for k, v in feeds.items()})
    for k, v in {**arg, **feeds}.items():
        exe.arg_dict[k][:] = v
    for k, v in aux.items():
        exe.aux_dict[k][:] = v
    return [o.asnumpy() for o in exe.forward(is_train=False)]


def _check(path, feeds):
    sym, arg, aux = sg.onnx.import_model(str(path))
    got = _run_symgraph(sym, arg, aux, feeds)
    want = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, feeds)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
    return sym, arg, aux


def _init(name, value):
    return numpy_helper.from_array(np.asarray(value, np.float32), name)


def _save(path, nodes, name, inputs, outputs, inits):
    """Write the opset-17 model of ``nodes`` to ``path`` once onnx's checker accepts it;
    ``inputs`` and ``outputs`` are ``(name, element type, shape)``."""
    graph = helper.make_graph(nodes, name, [helper.make_tensor_value_info(*i) for i in inputs],
                              [helper.make_tensor_value_info(*o) for o in outputs], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


def test_helper_made_cnn(tmp_path):
    rng = np.random.default_rng(0)
    inits = [
        _init("W1", rng.normal(0, 0.3, (4, 3, 3, 3))), _init("B1", rng.normal(0, 0.1, 4)),
        _init("g", rng.uniform(0.5, 1.5, 4)), _init("b", rng.normal(0, 0.1, 4)),
        _init("m", rng.normal(0, 0.1, 4)), _init("v", rng.uniform(0.5, 2, 4)),
        _init("W2", rng.normal(0, 0.3, (6, 4 * 4 * 4))), _init("B2", rng.normal(0, 0.1, 6)),
        _init("W3", rng.normal(0, 0.3, (6, 5))), _init("two", [2.0]),
        numpy_helper.from_array(np.array([0, -1], np.int64), "flat_shape"),
    ]
    nodes = [
        helper.make_node("Conv", ["x", "W1", "B1"], ["c1"], kernel_shape=[3, 3],
                         pads=[1, 1, 1, 1], strides=[1, 1]),
        helper.make_node("BatchNormalization", ["c1", "g", "b", "m", "v"], ["bn"],
                         epsilon=1e-5),
        helper.make_node("Relu", ["bn"], ["r1"]),
        helper.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Reshape", ["p1", "flat_shape"], ["flat"]),
        helper.make_node("Gemm", ["flat", "W2", "B2"], ["fc"], transB=1),
        helper.make_node("Tanh", ["fc"], ["t"]),
        helper.make_node("Mul", ["t", "two"], ["t2"]),
        helper.make_node("MatMul", ["t2", "W3"], ["mm"]),
        helper.make_node("Softmax", ["mm"], ["prob"], axis=1),
    ]
    path = _save(tmp_path / "cnn.onnx", nodes, "cnn", [("x", TensorProto.FLOAT, [2, 3, 8, 8])],
                 [("prob", TensorProto.FLOAT, [2, 5])], inits)
    x = rng.random((2, 3, 8, 8)).astype(np.float32)
    sym, arg, aux = _check(path, {"x": x})
    assert sorted(aux) == ["m", "v"] and "W1" in arg and "flat_shape" not in arg
    assert sym.list_auxiliary_states() == ["m", "v"]
    assert sg.contrib.onnx.get_model_metadata(str(path)) == {  # MXNet 1.x's contrib path
        "input_tensor_data": [("x", (2, 3, 8, 8), TensorProto.FLOAT)],
        "output_tensor_data": [("prob", (2, 5))]}


def test_metadata_skips_initializers_listed_as_inputs(tmp_path):
    """Old exporters list parameters among the graph inputs too; a dynamic axis reads 0."""
    w = _init("w", np.ones((3, 4)))
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"])], "mm",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3]),
         helper.make_tensor_value_info("w", TensorProto.FLOAT, [3, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4])], [w])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path = tmp_path / "mm.onnx"
    onnx.save(model, str(path))
    assert sg.onnx.get_model_metadata(str(path)) == {
        "input_tensor_data": [("x", (0, 3), TensorProto.FLOAT)],
        "output_tensor_data": [("y", (0, 4))]}
    sym, arg, _ = sg.onnx.import_model(str(path))
    assert sym.list_arguments() == ["x", "w"] and list(arg) == ["w"]


def test_helper_made_layers(tmp_path):
    rng = np.random.default_rng(1)
    inits = [_init("table", rng.normal(0, 1, (9, 4))),
             _init("Wt", rng.normal(0, 0.3, (3, 2, 3, 3))),
             numpy_helper.from_array(np.array([1], np.int64), "ax")]
    nodes = [
        helper.make_node("Gather", ["table", "ids"], ["emb"], axis=0),          # (2, 3, 4)
        helper.make_node("Unsqueeze", ["emb", "ax"], ["e4"]),                   # (2, 1, 3, 4)
        helper.make_node("Concat", ["e4", "e4", "e4"], ["e3"], axis=1),          # (2, 3, 3, 4)
        helper.make_node("ConvTranspose", ["e3", "Wt"], ["up"], kernel_shape=[3, 3],
                         strides=[2, 2], pads=[1, 1, 1, 1], output_padding=[1, 1]),
        helper.make_node("LeakyRelu", ["up"], ["lr"], alpha=0.2),
        helper.make_node("GlobalAveragePool", ["lr"], ["gap"]),
        helper.make_node("Flatten", ["gap"], ["f"], axis=1),
        helper.make_node("Sub", ["f", "f"], ["z"]),
        helper.make_node("Add", ["z", "f"], ["s"]),
        helper.make_node("Exp", ["s"], ["out"]),
    ]
    path = _save(tmp_path / "layers.onnx", nodes, "layers", [("ids", TensorProto.INT64, [2, 3])],
                 [("out", TensorProto.FLOAT, [2, 2])], inits)
    ids = rng.integers(0, 9, (2, 3))
    sym, arg, _ = sg.onnx.import_model(str(path))
    got = _run_symgraph(sym, arg, {}, {"ids": ids.astype(np.float32)})[0]
    want = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(
        None, {"ids": ids})[0]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_unsupported_operator_is_named(tmp_path):
    node = helper.make_node("Hardmax", ["x"], ["y"])
    graph = helper.make_graph(
        [node], "e", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 2])])
    path = tmp_path / "e.onnx"
    onnx.save(helper.make_model(graph), str(path))
    with pytest.raises(sg.GraphError, match=r"\(Hardmax\): no importer.*supports"):
        sg.onnx.import_model(str(path))


@pytest.mark.parametrize("name", ["mlp", "simple_cnn"])
def test_round_trip(tmp_path, name):
    net = importlib.import_module(f"symgraph.interop.models.{name}").build()
    shape = (2, 784) if name == "mlp" else (2, 1, 28, 28)
    mod = sg.mod.Module(net)
    mod.bind([("data", shape)], [("softmax_label", (2,))], for_training=False)
    mod.init_params(sg.init.Xavier())
    arg, aux = mod.get_params()
    path = tmp_path / "m.onnx"
    sg.onnx.export_model(net, {**arg, **aux}, [shape], np.float32, str(path))
    x = np.random.default_rng(0).random(shape).astype(np.float32)
    _, arg2, _ = _check(path, {"data": x})
    for k, v in arg.items():
        if k in arg2:
            np.testing.assert_array_equal(arg2[k].asnumpy(), v.asnumpy())


def test_torch_export(tmp_path):
    torch = pytest.importorskip("torch")
    net = torch.nn.Sequential(
        torch.nn.Conv2d(1, 4, 3, padding=1), torch.nn.BatchNorm2d(4), torch.nn.ReLU(),
        torch.nn.MaxPool2d(2), torch.nn.Flatten(), torch.nn.Linear(4 * 4 * 4, 10),
        torch.nn.Softmax(dim=1)).eval()
    x = torch.rand(2, 1, 8, 8)
    path = tmp_path / "torch.onnx"
    import inspect
    legacy = {"dynamo": False} if "dynamo" in inspect.signature(torch.onnx.export).parameters \
        else {}
    torch.onnx.export(net, (x,), str(path), input_names=["data"], output_names=["prob"],
                      opset_version=17, **legacy)
    _check(path, {"data": x.numpy()})


def test_torch_style_names_and_constants(tmp_path):
    """What torch.onnx.export writes even without torch here: '/block/Conv'-style node names,
    'onnx::'-prefixed tensors, Constant nodes for shapes and scalars, default-valued attrs."""
    rng = np.random.default_rng(4)
    inits = [_init("onnx::Conv_5", rng.normal(0, 0.3, (3, 2, 3, 3))),
             _init("onnx::Conv_6", rng.normal(0, 0.1, 3)),
             _init("fc.weight", rng.normal(0, 0.3, (4, 3 * 3 * 3))),
             _init("fc.bias", rng.normal(0, 0.1, 4))]
    shape = helper.make_tensor("v", TensorProto.INT64, [2], [2, -1])
    half = helper.make_tensor("h", TensorProto.FLOAT, [], [0.5])
    nodes = [
        helper.make_node("Conv", ["input", "onnx::Conv_5", "onnx::Conv_6"],
                         ["/features/0/Conv_output_0"], name="/features/0/Conv",
                         kernel_shape=[3, 3], pads=[0, 0, 0, 0], strides=[1, 1],
                         dilations=[1, 1], group=1),
        helper.make_node("Relu", ["/features/0/Conv_output_0"], ["/features/1/Relu_output_0"],
                         name="/features/1/Relu"),
        helper.make_node("MaxPool", ["/features/1/Relu_output_0"], ["/pool/MaxPool_output_0"],
                         name="/pool/MaxPool", kernel_shape=[2, 2], strides=[2, 2],
                         pads=[0, 0, 0, 0], dilations=[1, 1], ceil_mode=0),
        helper.make_node("Constant", [], ["/Constant_output_0"], name="/Constant", value=shape),
        helper.make_node("Reshape", ["/pool/MaxPool_output_0", "/Constant_output_0"],
                         ["/Reshape_output_0"], name="/Reshape"),
        helper.make_node("Gemm", ["/Reshape_output_0", "fc.weight", "fc.bias"], ["/fc/Gemm"],
                         name="/fc/Gemm", alpha=1.0, beta=1.0, transB=1),
        helper.make_node("Constant", [], ["/Constant_1_output_0"], name="/Constant_1",
                         value=half),
        helper.make_node("Div", ["/fc/Gemm", "/Constant_1_output_0"], ["output"], name="/Div"),
    ]
    path = _save(tmp_path / "torchlike.onnx", nodes, "main_graph",
                 [("input", TensorProto.FLOAT, [2, 2, 8, 8])],
                 [("output", TensorProto.FLOAT, [2, 4])], inits)
    sym, arg, _ = _check(path, {"input": rng.random((2, 2, 8, 8)).astype(np.float32)})
    assert "/Constant_output_0" not in arg  # a shape is an attribute, not a parameter
    assert sym.list_arguments() == ["input", "onnx::Conv_5", "onnx::Conv_6", "fc.weight",
                                    "fc.bias"]
