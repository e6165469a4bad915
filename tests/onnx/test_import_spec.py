"""import_model follows the ONNX operator spec at the model's opset (checked against numpy
float64 references written from the spec), and refuses invalid or malformed files with a
typed error naming the node or tensor."""
from __future__ import annotations

import numpy as np
import pytest

import symgraph as sg

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

F = TensorProto.FLOAT


def _model(nodes, inputs, outputs, inits=(), opset=17):
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(*i) for i in inputs],
                              [helper.make_tensor_value_info(*o) for o in outputs],
                              list(inits))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def import_and_run(tmp_path, model, feeds):
    """import_model (inputs not known when the symbol is built), then one forward."""
    path = str(tmp_path / "m.onnx")
    onnx.save(model, path)
    sym, arg, aux = sg.onnx.import_model(path)
    args = {**{k: sg.nd.array(v, dtype=v.dtype) for k, v in feeds.items()}, **arg}
    exe = sym.bind(sg.cpu(), args, grad_req="null", aux_states=aux)
    return [o.asnumpy() for o in exe.forward(is_train=False)]


def _init(name, value, dtype=np.float32):
    return numpy_helper.from_array(np.asarray(value, dtype), name)


RNG = np.random.default_rng(7)
A = RNG.normal(size=(2, 3)).astype(np.float32)
B = RNG.normal(size=(3, 4)).astype(np.float32)
C = RNG.normal(size=(2, 4)).astype(np.float32)


def test_gemm_alpha_scales_the_product_only(tmp_path):
    node = helper.make_node("Gemm", ["a", "b", "c"], ["y"], alpha=2.0, beta=0.5)
    model = _model([node], [("a", F, [2, 3]), ("b", F, [3, 4]), ("c", F, [4])],
                   [("y", F, [2, 4])])
    (got,) = import_and_run(tmp_path, model, {"a": A, "b": B, "c": C[0]})
    want = 2.0 * A.astype(np.float64) @ B + 0.5 * C[0]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_gemm_two_d_constant_bias(tmp_path):
    node = helper.make_node("Gemm", ["a", "b", "c"], ["y"], beta=0.5)
    model = _model([node], [("a", F, [2, 3])], [("y", F, [2, 4])],
                   [_init("b", B), _init("c", C)])
    (got,) = import_and_run(tmp_path, model, {"a": A})
    np.testing.assert_allclose(got, A.astype(np.float64) @ B + 0.5 * C, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax"])
def test_softmax_before_opset_13_normalises_the_flattened_tail(tmp_path, op):
    x = RNG.normal(size=(2, 3, 2, 2)).astype(np.float32)
    model = _model([helper.make_node(op, ["x"], ["y"], axis=1)], [("x", F, x.shape)],
                   [("y", F, x.shape)], opset=11)
    (got,) = import_and_run(tmp_path, model, {"x": x})
    rows = x.astype(np.float64).reshape(2, -1)
    soft = np.exp(rows - rows.max(1, keepdims=True))
    soft /= soft.sum(1, keepdims=True)
    want = (soft if op == "Softmax" else np.log(soft)).reshape(x.shape)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_gather_negative_index_counts_from_the_end(tmp_path):
    table = RNG.normal(size=(5, 3)).astype(np.float32)
    model = _model([helper.make_node("Gather", ["t", "i"], ["y"], axis=0)],
                   [("i", TensorProto.INT64, [2])], [("y", F, [2, 3])], [_init("t", table)])
    (got,) = import_and_run(tmp_path, model, {"i": np.array([-1, 1], np.int64)})
    np.testing.assert_array_equal(got, table[[4, 1]])


def test_gather_out_of_range_constant_index_is_refused(tmp_path):
    model = _model([helper.make_node("Gather", ["x", "i"], ["y"], axis=1, name="pick")],
                   [("x", F, [2, 3])], [("y", F, [2, 1])],
                   [_init("i", [3], np.int64)])
    with pytest.raises(sg.DataError, match=r"pick \(Gather\).*\[-3, 3\)"):
        import_and_run(tmp_path, model, {"x": A})


@pytest.mark.parametrize("c_shape", [(4,), (1, 4)])
def test_gemm_constant_weight_alpha_scales_the_product_only(tmp_path, c_shape):
    """A constant B and row C import as FullyConnected: alpha goes into the weight only."""
    node = helper.make_node("Gemm", ["a", "b", "c"], ["y"], alpha=2.0, beta=0.5, transB=1)
    model = _model([node], [("a", F, [2, 3])], [("y", F, [2, 4])],
                   [_init("b", B.T), _init("c", C[0].reshape(c_shape))])
    (got,) = import_and_run(tmp_path, model, {"a": A})
    want = 2.0 * A.astype(np.float64) @ B + 0.5 * C[0]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_gemm_two_d_bias_input(tmp_path):
    node = helper.make_node("Gemm", ["a", "b", "c"], ["y"], alpha=0.5, beta=2.0)
    model = _model([node], [("a", F, [2, 3]), ("c", F, [2, 4])], [("y", F, [2, 4])],
                   [_init("b", B)])
    (got,) = import_and_run(tmp_path, model, {"a": A, "c": C})
    want = 0.5 * A.astype(np.float64) @ B + 2.0 * C
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def _gather_input_model():
    return _model([helper.make_node("Gather", ["x", "i"], ["y"], axis=1, name="pick")],
                  [("x", F, [2, 3]), ("i", TensorProto.INT64, [2])], [("y", F, [2, 2])])


def test_gather_run_time_indices_count_from_the_end(tmp_path):
    (got,) = import_and_run(tmp_path, _gather_input_model(), {"x": A, "i": np.array([-1, -3], np.int64)})
    np.testing.assert_array_equal(got, A[:, [2, 0]])


@pytest.mark.parametrize("bad,reported", [(3, 3), (-4, -1), (2 ** 40, 2 ** 40)])
def test_gather_run_time_index_out_of_range_raises(tmp_path, bad, reported):
    """An index outside [-3, 3) arriving at run time: a DataError naming the node, never a
    wrapped or clipped row (-4 is reported after ONNX's shift by the axis size)."""
    with pytest.raises(sg.DataError, match=rf"pick \(take\): index {reported} .*\[0, 2\]"):
        import_and_run(tmp_path, _gather_input_model(), {"x": A, "i": np.array([0, bad], np.int64)})


def test_gather_elements_run_time_indices(tmp_path):
    model = _model([helper.make_node("GatherElements", ["x", "i"], ["y"], axis=1, name="ge")],
                   [("x", F, [2, 3]), ("i", TensorProto.INT64, [1, 2])], [("y", F, [1, 2])])
    (got,) = import_and_run(tmp_path, model, {"x": A, "i": np.array([[-1, 1]], np.int64)})
    np.testing.assert_array_equal(got, [[A[0, 2], A[0, 1]]])
    with pytest.raises(sg.DataError, match=r"ge \(_gather_axis\): index 3 .*\[0, 2\]"):
        import_and_run(tmp_path, model, {"x": A, "i": np.array([[0, 3]], np.int64)})


def test_raw_importer_failure_is_a_graph_error_naming_the_node(tmp_path, monkeypatch):
    """The safety net: an importer tripping on an input combination it does not map gives a
    GraphError naming the node, not a raw IndexError."""
    from symgraph.interop.onnx import import_ops

    def broken(c, node, a):
        return [][0]
    monkeypatch.setitem(import_ops.IMPORTERS, "Relu", broken)
    model = _model([helper.make_node("Relu", ["x"], ["y"], name="r1")], [("x", F, [2, 3])],
                   [("y", F, [2, 3])])
    with pytest.raises(sg.GraphError, match=r"r1 \(Relu\): cannot import it at opset 17: "
                                            r"IndexError"):
        import_and_run(tmp_path, model, {"x": A})


def test_unsqueeze_negative_axes_index_the_output(tmp_path):
    model = _model([helper.make_node("Unsqueeze", ["x", "ax"], ["y"])], [("x", F, [2, 3])],
                   [("y", F, [2, 1, 3, 1])], [_init("ax", [-1, -3], np.int64)], opset=13)
    (got,) = import_and_run(tmp_path, model, {"x": A})
    assert got.shape == (2, 1, 3, 1)
    np.testing.assert_array_equal(got.reshape(2, 3), A)


def test_reduce_mean_noop_with_empty_axes(tmp_path):
    node = helper.make_node("ReduceMean", ["x"], ["y"], noop_with_empty_axes=1)
    model = _model([node], [("x", F, [2, 3])], [("y", F, [2, 3])], opset=18)
    (got,) = import_and_run(tmp_path, model, {"x": A})
    np.testing.assert_array_equal(got, A)


def test_one_element_constant_keeps_its_rank(tmp_path):
    node = helper.make_node("Add", ["x", "k"], ["y"])
    model = _model([node], [("x", F, [2, 3])], [("y", F, [1, 2, 3])],
                   [_init("k", np.full((1, 1, 1), 2.0))])
    (got,) = import_and_run(tmp_path, model, {"x": A})
    assert got.shape == (1, 2, 3)
    np.testing.assert_allclose(got[0], A + 2.0, rtol=1e-6)


def _bad(name):
    """Models onnx.checker or strict shape inference (and onnxruntime) reject."""
    x, y = ("x", F, [2, 3]), ("y", F, [2, 3])
    if name == "type_mismatch":
        return _model([helper.make_node("Add", ["x", "i"], ["y"], name="bad_add")],
                      [x, ("i", TensorProto.INT64, [2, 3])], [y])
    if name == "wrong_arity":
        return _model([helper.make_node("Relu", ["x", "x"], ["y"], name="bad_relu")], [x], [y])
    if name == "unknown_attribute":
        return _model([helper.make_node("Relu", ["x"], ["y"], name="bad_relu", slope=1.0)],
                      [x], [y])
    if name == "declared_shape_conflicts":
        return _model([helper.make_node("Transpose", ["x"], ["y"], name="bad_t")], [x], [y])
    if name == "missing_initializer":
        return _model([helper.make_node("Add", ["x", "w"], ["y"], name="bad_add")], [x], [y])
    if name == "duplicate_output":
        return _model([helper.make_node("Relu", ["x"], ["y"], name="r1"),
                       helper.make_node("Relu", ["x"], ["y"], name="r2")], [x], [y])
    raise AssertionError(name)


@pytest.mark.parametrize("name", ["type_mismatch", "wrong_arity", "unknown_attribute",
                                  "declared_shape_conflicts", "missing_initializer",
                                  "duplicate_output"])
def test_models_the_checker_rejects_are_refused(tmp_path, name):
    model = _bad(name)
    path = str(tmp_path / "bad.onnx")
    onnx.save(model, path)
    with pytest.raises(sg.DataError, match="checker rejects"):
        sg.onnx.import_model(path)


def test_truncated_file_is_a_data_error(tmp_path):
    model = _model([helper.make_node("Relu", ["x"], ["y"])], [("x", F, [2])], [("y", F, [2])])
    path = tmp_path / "cut.onnx"
    path.write_bytes(model.SerializeToString()[:25])
    with pytest.raises(sg.DataError, match="cut.onnx: not a readable ONNX model"):
        sg.onnx.import_model(str(path))


def test_empty_graph_is_a_data_error(tmp_path):
    path = str(tmp_path / "empty.onnx")
    onnx.save(_model([], [], []), path)
    with pytest.raises(sg.DataError, match="no outputs"):
        sg.onnx.import_model(path)


def test_bad_attribute_value_names_the_node(tmp_path):
    node = helper.make_node("Conv", ["x", "w"], ["y"], name="conv1", kernel_shape=[3])
    model = _model([node], [("x", F, [1, 1, 4, 4])], [("y", F, [1, 1, 2, 2])],
                   [_init("w", np.ones((1, 1, 3, 3)))])
    path = str(tmp_path / "conv.onnx")
    onnx.save(model, path)
    with pytest.raises(sg.DataError, match="conv1|Conv"):
        sg.onnx.import_model(path)


def test_legacy_broadcast_opset_is_refused(tmp_path):
    node = helper.make_node("Add", ["x", "x"], ["y"], name="old_add")
    model = _model([node], [("x", F, [2, 3])], [("y", F, [2, 3])], opset=6)
    path = str(tmp_path / "old.onnx")
    onnx.save(model, path)
    with pytest.raises(sg.GraphError, match=r"old_add \(Add\): opset 6 .* \(7\)"):
        sg.onnx.import_model(path)


def test_sequence_inputs_are_refused_by_name(tmp_path):
    seq = helper.make_tensor_sequence_value_info("s", F, [2])
    graph = helper.make_graph([helper.make_node("Identity", ["s"], ["t"])], "g", [seq],
                              [helper.make_tensor_sequence_value_info("t", F, [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path = str(tmp_path / "seq.onnx")
    onnx.save(model, path)
    with pytest.raises(sg.GraphError, match="'s': type sequence_type"):
        sg.onnx.import_model(path)


def test_shape_arithmetic_folds_to_a_static_reshape(tmp_path):
    """Shape -> Gather -> Concat -> Reshape (as exporters write a flatten) folds at import:
    the shape tensors become no parameters and the result is numpy's reshape."""
    x = RNG.normal(size=(2, 3, 4)).astype(np.float32)
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Gather", ["s", "zero"], ["n"], axis=0),
             helper.make_node("Concat", ["n", "minus1"], ["target"], axis=0),
             helper.make_node("Reshape", ["x", "target"], ["y"])]
    model = _model(nodes, [("x", F, x.shape)], [("y", F, [2, 12])],
                   [_init("zero", [0], np.int64), _init("minus1", [-1], np.int64)])
    path = str(tmp_path / "flat.onnx")
    onnx.save(model, path)
    sym, arg, _ = sg.onnx.import_model(path)
    assert sym.list_arguments() == ["x"] and not arg
    (got,) = import_and_run(tmp_path, model, {"x": x})
    np.testing.assert_array_equal(got, x.reshape(2, 12))
