"""ONNX's own backend node tests (``onnx.backend.test``) through ``symgraph.interop.onnx.backend``, for
every test whose operators symgraph imports. The tests that are left out, and why, are
listed in :data:`EXCLUDED` (and in docs/onnx.md).

onnx builds its node cases by running each case's generator, which costs seconds: the test
names are read from ``node_tests.txt`` (``python3 -m tests.onnx.test_backend_node`` writes it),
so collecting this file costs nothing in the test processes that do not run it. Names that this
onnx lacks skip; tests this onnx has beyond the file run in one test.
"""
from __future__ import annotations

import functools
import re
import sys
import unittest
import warnings
from pathlib import Path

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


LISTED = Path(__file__).with_name("node_tests.txt")
NAMES = LISTED.read_text().split() if LISTED.exists() else []


@functools.cache
def _cases() -> type:
    return _node_tests()


def _names() -> list[str]:
    return sorted(n for n in dir(_cases()) if n.startswith("test_"))


def _run_case(name: str) -> None:
    """One onnx node test: its unittest method (an excluded one raises unittest.SkipTest)."""
    getattr(_cases()(name), name)()


@pytest.mark.parametrize("name", NAMES)
def test_onnx_node(name: str) -> None:
    if not hasattr(_cases(), name):
        pytest.skip(f"{name}: not a node test of onnx {onnx.__version__} that symgraph imports")
    _run_case(name)


def test_node_tests_beyond_the_list_pass():
    """A newer onnx's node tests missing from node_tests.txt run here (none with the onnx the
    list was written from)."""
    failed = []
    for name in sorted(set(_names()) - set(NAMES)):
        try:
            _run_case(name)
        except unittest.SkipTest:
            pass
        except Exception as e:  # noqa: BLE001 (each failure is reported below)
            failed.append(f"{name}: {type(e).__name__}: {str(e)[:300]}")
    assert not failed, "\n".join(failed)


def test_every_exclusion_matches_a_test():
    """A stale pattern would hide nothing: each must name at least one imported test."""
    names = _names()
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


if __name__ == "__main__":
    LISTED.write_text("\n".join(_names()) + "\n")
    print(f"{LISTED}: {len(_names())} node tests of onnx {onnx.__version__}", file=sys.stderr)
