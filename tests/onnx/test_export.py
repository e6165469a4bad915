"""export_model: model-zoo nets and layer nets pass onnx.checker and onnxruntime gives
symgraph's inference outputs within 1e-5; unsupported ops fail with a named GraphError."""
from __future__ import annotations

import importlib

import numpy as np
import pytest

import symgraph as sg

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
S = sg.sym


def _params(net, shapes, rng):
    """Random parameters (running variances positive) from symgraph's own shape inference."""
    arg_shapes, _, aux_shapes = net.infer_shape(**shapes)
    arg = {n: rng.normal(0, 0.5, s).astype(np.float32)
           for n, s in zip(net.list_arguments(), arg_shapes) if n not in shapes}
    aux = {n: (rng.uniform(0.5, 2.0, s) if n.endswith("var") else rng.normal(0, 0.3, s))
           .astype(np.float32) for n, s in zip(net.list_auxiliary_states(), aux_shapes)}
    return arg, aux


def _symgraph_out(net, arg, aux, feeds):
    shapes = {k: v.shape for k, v in feeds.items()}
    exe = net.simple_bind(sg.cpu(), grad_req="null", **shapes)
    for k, v in {**arg, **feeds}.items():
        exe.arg_dict[k][:] = v
    for k, v in aux.items():
        exe.aux_dict[k][:] = v
    return [o.asnumpy() for o in exe.forward(is_train=False)]


def check_export(tmp_path, net, feeds, label_shape=None, in_types=np.float32, rng=None,
                 params=None):
    rng = rng or np.random.default_rng(0)
    shapes = {k: v.shape for k, v in feeds.items()}
    all_shapes = dict(shapes, **({"softmax_label": label_shape} if label_shape else {}))
    arg, aux = params or _params(net, all_shapes, rng)
    ref = _symgraph_out(net, arg, aux, dict(feeds, **(
        {"softmax_label": np.zeros(label_shape, np.float32)} if label_shape else {})))
    path = str(tmp_path / "model.onnx")
    assert sg.onnx.export_model(net, {**arg, **aux}, list(shapes.values()), in_types,
                                path) == path
    model = onnx.load(path)
    onnx.checker.check_model(model, full_check=True)
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    assert [i.name for i in sess.get_inputs()] == list(feeds)  # labels are not inputs
    got = sess.run(None, feeds)
    assert len(got) == len(ref)
    for g, r in zip(got, ref):
        np.testing.assert_allclose(g, r, rtol=1e-5, atol=1e-5)
    return model, ref


@pytest.mark.parametrize("name", ["mlp", "lenet", "simple_cnn"])
def test_model_zoo(tmp_path, name):
    mod = importlib.import_module(f"symgraph.interop.models.{name}")
    shape = (3, 784) if mod.RECIPE.get("flat") else (3, 1, 28, 28)
    x = np.random.default_rng(1).random(shape).astype(np.float32)
    model, ref = check_export(tmp_path, mod.build(), {"data": x}, label_shape=(3,))
    ops = {n.op_type for n in model.graph.node}
    assert "Softmax" in ops and np.allclose(ref[0].sum(1), 1, atol=1e-5)


@pytest.mark.parametrize("name", ["reorg_lenet", "rtc_softmax_mlp"])
def test_model_zoo_custom_ops_are_named(tmp_path, name):
    """The zoo's Python custom ops have no ONNX form: the error names the node and op."""
    net = importlib.import_module(f"symgraph.interop.models.{name}").build()
    shape = (2, 784) if name == "rtc_softmax_mlp" else (2, 1, 28, 28)
    arg, aux = _params(net, {"data": shape, "softmax_label": (2,)}, np.random.default_rng(0))
    with pytest.raises(sg.GraphError, match=r"\(Custom\): no ONNX converter"):
        sg.onnx.export_model(net, {**arg, **aux}, [shape], np.float32,
                             str(tmp_path / "m.onnx"))
    assert not (tmp_path / "m.onnx").exists()


def _res_block(x, i, ch, fix_gamma):
    y = S.Convolution(x, kernel=(3, 3), pad=(1, 1), num_filter=ch, no_bias=True, name=f"c{i}a")
    y = S.BatchNorm(y, fix_gamma=fix_gamma, eps=1e-5, name=f"bn{i}a")
    y = S.Activation(y, act_type="relu", name=f"r{i}a")
    y = S.Convolution(y, kernel=(3, 3), pad=(1, 1), num_filter=ch, name=f"c{i}b")
    y = S.BatchNorm(y, fix_gamma=False, name=f"bn{i}b")
    return S.Activation(x + y, act_type="relu", name=f"r{i}b")


@pytest.mark.parametrize("fix_gamma", [False, True])
def test_resnet_style_with_batchnorm(tmp_path, fix_gamma):
    x = S.Convolution(S.var("data"), kernel=(3, 3), stride=(2, 2), pad=(1, 1), num_filter=8,
                      name="stem")
    x = S.BatchNorm(x, fix_gamma=fix_gamma, name="bn0")
    x = S.Activation(x, act_type="relu", name="r0")
    x = _res_block(x, 1, 8, fix_gamma)
    x = _res_block(x, 2, 8, fix_gamma)
    x = S.Pooling(x, global_pool=True, pool_type="avg", kernel=(1, 1), name="gap")
    x = S.FullyConnected(S.Flatten(x), num_hidden=5, name="fc")
    net = S.SoftmaxOutput(x, name="softmax")
    feeds = {"data": np.random.default_rng(2).random((2, 3, 16, 16)).astype(np.float32)}
    model, _ = check_export(tmp_path, net, feeds, label_shape=(2,))
    assert sum(n.op_type == "BatchNormalization" for n in model.graph.node) == 5


def test_deconvolution_embedding_and_layers(tmp_path):
    ids = S.var("ids")
    emb = S.Embedding(ids, input_dim=11, output_dim=4, name="emb")          # (2, 6, 4)
    img = S.Reshape(emb, shape=(0, 1, 6, 4), name="to_img")
    up = S.Deconvolution(img, kernel=(3, 3), stride=(2, 2), pad=(1, 1), adj=(1, 1),
                         num_filter=3, no_bias=False, name="up")            # (2, 3, 12, 8)
    tgt = S.Deconvolution(img, kernel=(4, 4), stride=(2, 2), target_shape=(12, 8),
                          num_filter=3, name="tgt")
    y = S.Concat(up, tgt, dim=1, num_args=2, name="cat")
    y = S.LeakyReLU(y, act_type="leaky", slope=0.1, name="lrelu")
    y = S.Pooling(y, kernel=(2, 2), stride=(2, 2), pool_type="avg", name="avg")
    y = S.Dropout(y, p=0.3, name="drop")
    y = S.FullyConnected(y, num_hidden=7, name="fc")
    y = S.softmax((y * 2.0 - 1.0) / 3.0, axis=-1, name="sm")
    feeds = {"ids": np.random.default_rng(3).integers(0, 11, (2, 6)).astype(np.float32)}
    model, _ = check_export(tmp_path, y, feeds)
    ops = [n.op_type for n in model.graph.node]
    assert ops.count("ConvTranspose") == 2 and "Gather" in ops and "Concat" in ops


def test_params_forms_and_errors(tmp_path):
    net = importlib.import_module("symgraph.interop.models.mlp").build()
    arg, aux = _params(net, {"data": (1, 784)}, np.random.default_rng(0))
    path = str(tmp_path / "a.onnx")
    sg.onnx.export_model(net, [arg, aux], input_shape=[(1, 784)], onnx_file_path=path)
    prefix = str(tmp_path / "mlp")
    sg.model.save_checkpoint(prefix, 1, net, arg, aux)
    other = str(tmp_path / "b.onnx")
    sg.onnx.export_model(f"{prefix}-symbol.json", f"{prefix}-0001.params", [(1, 784)],
                         onnx_file_path=other)
    assert onnx.load(path).graph == onnx.load(other).graph
    with pytest.raises(sg.ShapeError, match="in_shapes"):
        sg.onnx.export_model(net, arg, [(1, 784), (1, 2), (3,)], onnx_file_path=path)


def test_dynamic_batch(tmp_path):
    net = importlib.import_module("symgraph.interop.models.mlp").build()
    arg, aux = _params(net, {"data": (1, 784)}, np.random.default_rng(0))
    path = str(tmp_path / "d.onnx")
    sg.onnx.export_model(net, arg, [(1, 784)], np.float32, path, dynamic=True)
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    x = np.random.default_rng(0).random((5, 784)).astype(np.float32)
    ref = _symgraph_out(net, arg, aux, {"data": x, "softmax_label": np.zeros(5, np.float32)})
    np.testing.assert_allclose(sess.run(None, {"data": x})[0], ref[0], rtol=1e-5, atol=1e-6)


def test_gluon_hybrid_block_export(tmp_path):
    """A Gluon net (as the seed programs write them) saved with HybridBlock.export, then
    exported to ONNX: onnxruntime gives the Gluon forward's outputs."""
    from symgraph.gluon import nn
    net = nn.HybridSequential()
    net.add(nn.Conv2D(8, 3, padding=1, activation="relu"), nn.BatchNorm(), nn.MaxPool2D(2),
            nn.Conv2DTranspose(4, 2, strides=2), nn.GlobalAvgPool2D(), nn.Flatten(),
            nn.Dense(16, activation="tanh"), nn.Dropout(0.5), nn.Dense(10))
    net.initialize(sg.init.Xavier())
    net.hybridize()
    x = np.random.default_rng(4).random((2, 3, 12, 12)).astype(np.float32)
    want = net(sg.nd.array(x)).asnumpy()
    prefix = str(tmp_path / "gnet")
    net.export(prefix)
    sym = sg.sym.load(prefix + "-symbol.json")
    arg, aux = sg.model.load_params(prefix + "-0000.params")
    path = sg.onnx.export_model(sym, {**arg, **aux}, [x.shape], np.float32,
                                str(tmp_path / "gnet.onnx"))
    onnx.checker.check_model(onnx.load(path), full_check=True)
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    got = sess.run(None, {sess.get_inputs()[0].name: x})[0]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    ops = {n.op_type for n in onnx.load(path).graph.node}
    assert {"BatchNormalization", "ConvTranspose", "Gemm"} <= ops or \
        {"BatchNormalization", "ConvTranspose", "MatMul"} <= ops


@pytest.mark.parametrize("layer", ["Convolution", "Pooling"])
def test_channels_last_layers_are_refused_by_name(tmp_path, layer):
    """ONNX's Conv and pools are channels first: an NHWC layer is refused, naming the node, and
    no file is written."""
    x = S.var("data")
    y = S.Convolution(x, kernel=(3, 3), num_filter=2, layout="NHWC", name="l") \
        if layer == "Convolution" else S.Pooling(x, kernel=(2, 2), layout="NHWC", name="l")
    shapes = {"data": (1, 6, 6, 3)}
    arg, aux = _params(y, shapes, np.random.default_rng(0))
    with pytest.raises(sg.GraphError, match=rf"^l \({layer}\): layout NHWC has no ONNX"):
        sg.onnx.export_model(y, {**arg, **aux}, [shapes["data"]], np.float32,
                             str(tmp_path / "m.onnx"))
    assert not (tmp_path / "m.onnx").exists()
