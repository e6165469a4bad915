"""ONNX's own backend node tests (``onnx.backend.test``) through ``symgraph.interop.onnx.backend``, for
every test whose operators symgraph imports. The tests that are left out, and why, are
listed in :data:`EXCLUDED` (and in docs/onnx.md)."""
from __future__ import annotations

import re
import warnings

import pytest

pytest.importorskip("onnx")
import onnx.backend.test  # noqa: E402
from onnx.backend.test.loader import load_model_tests  # noqa: E402

from symgraph.interop.onnx.backend import SymgraphBackend  # noqa: E402
from symgraph.interop.onnx.import_ops import IMPORTERS  # noqa: E402

# test-name pattern -> why symgraph does not run it
EXCLUDED = {
    r"^test_cast_.*(FLOAT8|FLOAT4|INT4|UINT4|INT2|UINT2|E8M0|STRING|BFLOAT16)":
        "element types symgraph has no dtype for (float8/float4/int4/int2, bfloat16, string)",
    r"^test_castlike_": "CastLike is not imported (its expanded form uses these types too)",
    r"_select_last_index": "ArgMax/ArgMin select_last_index=1 is refused",
    r"^test_(average|max)pool_2d_same_(upper|lower)":
        "auto_pad SAME_* with an odd total padding is refused (symgraph pads symmetrically)",
    r"^test_(average|max)pool_.*dilations": "dilated pooling is refused",
    r"^test_(averagepool_2d_ceil_last_window_starts_on_pad|maxpool_2d_ceil_output_size_"
    r"reduce_by_one)": "ceil_mode where ONNX drops a window MXNet's 'full' keeps: refused",
    r"^test_maxpool_with_argmax": "MaxPool's Indices output is refused",
    r"_training_mode|^test_training_dropout": "training mode (random masks, batch statistics)",
    r"^test_convtranspose_(output_shape|kernel_shape|autopad_same)":
        "ConvTranspose output_shape and auto_pad SAME_* (pads from the output size) refused",
    r"^test_(flexattention|rotary_embedding).*_expanded":
        "the expanded function leaves shapes unknown to ONNX's shape inference",
    r"^test_identity_(sequence|opt)": "sequence and optional types (tensors only)",
    r"_string": "string tensors (numbers and bool only)",
    r"^test_reduce_(max|min)_empty_set": "max/min over a zero-size axis",
    r"^test_reshape_allowzero_reordered": "allowzero=1 with a 0 (zero-size tensor) is refused",
    r"^test_(shape_start_greater_than_end|slice_start_out_of_bounds|split_zero_size)":
        "zero-size results (an empty Shape, Slice or Split part)",
    r"^test_constantofshape_int_shape_zero": "a zero-size ConstantOfShape is refused",
    r"^test_cumsum_.*(exclusive|reverse)": "exclusive or reverse CumSum is refused",
    r"^test_(depthtospace|spacetodepth)_crd": "mode CRD is refused (MXNet's order is DCR)",
    r"^test_center_crop_pad_.*_expanded":
        "Pad's pads computed by nodes from a run-time input (a static graph needs constants)",
    r"_bfloat16_": "bfloat16 tensors are refused by import_model (numbers of numpy's types)",
}


def _imported(case) -> bool:
    nodes = case.model.graph.node
    return bool(nodes) and all(n.op_type in IMPORTERS and n.domain in ("", "ai.onnx")
                               for n in nodes)


def _node_tests() -> type:
    """The unittest class of the node tests symgraph imports (the rest are left out)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # onnx's case generators warn on purpose (overflow)
        runner = onnx.backend.test.BackendTest(SymgraphBackend, __name__)
        wanted = {f"{c.name}_cpu" for c in load_model_tests(kind="node") if _imported(c)}
    for pattern in EXCLUDED:
        runner.exclude(pattern)
    full = runner.test_cases["OnnxBackendNodeModelTest"]
    return type("OnnxBackendNodeModelTest", (full.__bases__[0],),
                {n: getattr(full, n) for n in sorted(wanted)})


OnnxBackendNodeModelTest = _node_tests()


def test_every_exclusion_matches_a_test():
    """A stale pattern would hide nothing: each must name at least one imported test."""
    names = [n for n in dir(OnnxBackendNodeModelTest) if n.startswith("test_")]
    assert len(names) > 400
    for pattern in EXCLUDED:
        assert any(re.search(pattern, n) for n in names), pattern


def test_backend_interface():
    """prepare/run_model/run_node/supports_device as onnx.backend.base.Backend defines them,
    checked against numpy."""
    import numpy as np
    from onnx import TensorProto, helper

    from symgraph import BindError, DataError
    from symgraph.interop.onnx import backend
    x = np.arange(6, dtype=np.float32).reshape(2, 3) - 2
    node = helper.make_node("Relu", ["x"], ["y"])
    (y,) = backend.run_node(node, [x])
    np.testing.assert_array_equal(y, np.maximum(x, 0))
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                          [2, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    rep = backend.prepare(model.SerializeToString(), "CPU")
    np.testing.assert_array_equal(rep.run({"x": x})[0], np.maximum(x, 0))
    np.testing.assert_array_equal(backend.run_model(model, [x])[0], np.maximum(x, 0))
    assert backend.supports_device("CPU")
    with pytest.raises(BindError, match=r"no value for the inputs \['x'\]"):
        rep.run([])
    with pytest.raises(DataError, match="not a readable ONNX model"):
        backend.prepare(model.SerializeToString()[:9])
