"""The importers of Pad, Resize, Round, Mod, OneHot, TopK, GatherND and Einsum beyond ONNX's
own node tests (tests/onnx/test_backend_node.py): edge values against numpy float64
references written from the spec, and refusals as typed errors naming the node."""
from __future__ import annotations

import json

import numpy as np
import pytest

import symgraph as sg

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from symgraph.interop.onnx import backend  # noqa: E402

from .test_import_spec import import_and_run  # noqa: E402

F, I64 = TensorProto.FLOAT, TensorProto.INT64
RNG = np.random.default_rng(11)


def _model(node, inputs, outputs, inits=(), opset=18):
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info(*i) for i in inputs],
                              [helper.make_tensor_value_info(*o) for o in outputs],
                              [numpy_helper.from_array(np.asarray(v), k) for k, v in inits])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def test_round_halves_to_even_and_keeps_non_finite(tmp_path):
    x = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 2.4999998, -3.7, np.inf, -np.inf, np.nan,
                  1e30], np.float32)
    model = _model(helper.make_node("Round", ["x"], ["y"]), [("x", F, [12])], [("y", F, [12])])
    (got,) = import_and_run(tmp_path, model, {"x": x})
    np.testing.assert_array_equal(got, np.round(x.astype(np.float64)).astype(np.float32))


@pytest.mark.parametrize("fmod", [0, 1])
def test_mod_signs_and_zero_divisor(tmp_path, fmod):
    a = np.array([5.5, -5.5, 5.5, -5.5, 3.0, -0.0, 7.0], np.float32)
    b = np.array([2.0, 2.0, -2.0, -2.0, 0.0, 3.0, np.inf], np.float32)
    model = _model(helper.make_node("Mod", ["a", "b"], ["y"], fmod=fmod),
                   [("a", F, [7]), ("b", F, [7])], [("y", F, [7])])
    (got,) = import_and_run(tmp_path, model, {"a": a, "b": b})
    ref = np.fmod if fmod else np.mod
    with np.errstate(invalid="ignore", divide="ignore"):
        np.testing.assert_array_equal(got, ref(a.astype(np.float64), b).astype(np.float32))


def test_gather_nd_negative_and_out_of_range_indices(tmp_path):
    data = RNG.normal(size=(3, 4)).astype(np.float32)
    model = _model(helper.make_node("GatherND", ["x", "i"], ["y"], name="gnd"),
                   [("x", F, [3, 4]), ("i", I64, [2, 2])], [("y", F, [2])])
    (got,) = import_and_run(tmp_path, model, {"x": data, "i": np.array([[-1, 0], [1, -4]])})
    np.testing.assert_array_equal(got, [data[2, 0], data[1, 0]])
    with pytest.raises(sg.DataError, match=r"gnd \(gather_nd\).* index 3 is out of range"):
        import_and_run(tmp_path, model, {"x": data, "i": np.array([[3, 0], [0, 0]])})


@pytest.mark.parametrize("eq,shapes", [("...ij,...jk", [(2, 1, 3, 4), (1, 5, 4, 2)]),
                                       ("ij,jk,kl->li", [(2, 3), (3, 4), (4, 2)]),
                                       ("iij->ji", [(3, 3, 2)]), ("ba", [(2, 3)]),
                                       ("bhqd,bhkd->bhqk", [(2, 3, 4, 5), (2, 3, 6, 5)]),
                                       ("ij,jk->ki", [(2, 3), (3, 4)]), ("i,j", [(2,), (3,)]),
                                       ("bij,j->bi", [(2, 3, 4), (4,)])])
def test_einsum_against_numpy(tmp_path, eq, shapes):
    xs = [RNG.normal(size=s).astype(np.float32) for s in shapes]
    want = np.einsum(eq, *[x.astype(np.float64) for x in xs])
    names = [f"x{k}" for k in range(len(xs))]
    model = _model(helper.make_node("Einsum", names, ["y"], equation=eq),
                   [(n, F, x.shape) for n, x in zip(names, xs)], [("y", F, want.shape)])
    (got,) = import_and_run(tmp_path, model, dict(zip(names, xs)))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_einsum_of_two_operands_is_one_batch_dot(tmp_path):
    """An attention-style contraction multiplies by GEMM, not through a broadcast product."""
    model = _model(helper.make_node("Einsum", ["q", "k"], ["y"], equation="bhqd,bhkd->bhqk"),
                   [("q", F, [2, 3, 4, 5]), ("k", F, [2, 3, 6, 5])], [("y", F, [2, 3, 4, 6])])
    onnx.save(model, str(tmp_path / "m.onnx"))
    sym, _, _ = sg.onnx.import_model(str(tmp_path / "m.onnx"))
    ops = [n["op"] for n in json.loads(sym.tojson())["nodes"]]
    assert "batch_dot" in ops and "broadcast_mul" not in ops


def test_pad_negative_pads_crop_after_reflecting(tmp_path):
    x = RNG.normal(size=(3, 5)).astype(np.float32)
    pads = np.array([2, -1, -1, 2], np.int64)  # axis 0: +2 / -1, axis 1: -1 / +2
    model = _model(helper.make_node("Pad", ["x", "p"], ["y"], mode="reflect"),
                   [("x", F, [3, 5])], [("y", F, [4, 6])], [("p", pads)])
    (got,) = import_and_run(tmp_path, model, {"x": x})
    want = np.pad(x.astype(np.float64), [(2, 0), (0, 2)], mode="reflect")[:-1, 1:]
    np.testing.assert_array_equal(got, want.astype(np.float32))


def test_resize_nearest_keeps_integer_data_exact(tmp_path):
    x = RNG.integers(0, 255, size=(1, 1, 2, 3)).astype(np.uint8)
    model = _model(helper.make_node("Resize", ["x", "", "s"], ["y"], mode="nearest"),
                   [("x", TensorProto.UINT8, x.shape)], [("y", TensorProto.UINT8, [1, 1, 4, 6])],
                   [("s", np.array([1, 1, 2, 2], np.float32))])
    (got,) = import_and_run(tmp_path, model, {"x": x})
    np.testing.assert_array_equal(got, x.repeat(2, axis=2).repeat(2, axis=3))


def _refused(model, feeds, error, pattern):
    with pytest.raises(error, match=pattern):
        backend.run_model(model, feeds)


def test_refusals_name_the_node():
    x = np.ones((1, 1, 2, 2), np.uint8)
    linear = _model(helper.make_node("Resize", ["x", "", "s"], ["y"], mode="linear", name="up"),
                    [("x", TensorProto.UINT8, x.shape)], [("y", TensorProto.UINT8, [1, 1, 4, 4])],
                    [("s", np.array([1, 1, 2, 2], np.float32))])
    _refused(linear, [x], sg.GraphError, r"up \(Resize\): interpolating uint8 data")
    wide = _model(helper.make_node("Pad", ["x", "p"], ["y"], mode="reflect", name="pp"),
                  [("x", F, [2, 2])], [("y", F, [4, 2])], [("p", np.array([2, 0, 0, 0]))])
    _refused(wide, [np.ones((2, 2), np.float32)], sg.GraphError, r"pp \(Pad\): reflect pads")
    bad = _model(helper.make_node("Einsum", ["a"], ["y"], equation="ijk->ii", name="es"),
                 [("a", F, [2, 2, 2])], [("y", F, [2, 2])])
    _refused(bad, [np.ones((2, 2, 2), np.float32)], sg.DataError,
             r"es \(Einsum\): the output of 'ijk->ii' .* repeats one")
    topk = _model(helper.make_node("TopK", ["a", "k"], ["v", "i"], name="tk"),
                  [("a", F, [3])], [("v", F, [0]), ("i", I64, [0])], [("k", np.array([0]))])
    _refused(topk, [np.ones(3, np.float32)], sg.GraphError, r"tk \(TopK\): K=0")


def test_resize_needs_constant_scales_in_import_model(tmp_path):
    model = _model(helper.make_node("Resize", ["x", "", "s"], ["y"], name="up"),
                   [("x", F, [1, 1, 2, 2]), ("s", F, [4])], [("y", F, [1, 1, 4, 4])])
    onnx.save(model, str(tmp_path / "m.onnx"))
    with pytest.raises(sg.GraphError, match=r"up \(Resize\): input 's' must be a constant"):
        sg.onnx.import_model(str(tmp_path / "m.onnx"))
