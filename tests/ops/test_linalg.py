"""The ``linalg`` family beyond the registry cases: the names MXNet exposes, typed errors on bad
input (user data untouched), the GPU lowering (kernels compile with nvcc in every float dtype,
factorizations refused by name), and MXNet 1.9.1 live (outputs and gradients)."""
from __future__ import annotations

import numpy as np
import pytest

import symgraph as sg
from symgraph.core.base import BindError, DataError, ShapeError
from symgraph.runtime.cuda import compiler
from symgraph.runtime.cuda.actions import Host, Kernel, flat_actions
from symgraph.runtime.cuda.plan import lower_schedule
from tests.cuda.graphs import GPU_REFUSED_CASES
from tests.ops.test_registry import ALL_CASES

S, L = sg.sym, sg.sym.linalg
NAMES = ("gemm", "gemm2", "potrf", "potri", "trmm", "trsm", "syrk", "gelqf", "syevd",
         "inverse", "det", "slogdet", "sumlogdiag", "extractdiag", "makediag", "extracttrian",
         "maketrian")


def test_every_name_of_mxnet_is_reachable() -> None:
    for ns in (sg.sym, sg.nd):
        for name in NAMES:
            assert getattr(ns.linalg, name) is getattr(ns, f"_linalg_{name}")
            if name != "syevd":  # MXNet 1.9.1 registers no linalg_syevd alias
                assert callable(getattr(ns, f"linalg_{name}"))
        assert callable(ns.khatri_rao)
    assert L.potrf(S.var("a")).tojson().count('"_linalg_potrf"') == 1


@pytest.mark.parametrize("build, shapes, words", [
    (lambda: L.potrf(S.var("a")), {"a": (2, 3, 4)}, ["potrf", "square", "(2, 3, 4)"]),
    (lambda: L.gemm2(S.var("a"), S.var("b")), {"a": (2, 3), "b": (4, 5)}, ["(2, 3)", "(4, 5)"]),
    (lambda: L.gemm(S.var("a"), S.var("b"), S.var("c")), {"a": (2, 3), "b": (3, 4),
                                                          "c": (2, 5)}, ["C", "(2, 5)"]),
    (lambda: L.maketrian(S.var("a")), {"a": (2, 4)}, ["4 entries", "triangle"]),
    (lambda: L.extractdiag(S.var("a"), offset=3), {"a": (3, 3)}, ["offset=3"]),
    (lambda: L.gelqf(S.var("a")), {"a": (3, 2)}, ["m <= n", "(3, 2)"]),
    (lambda: L.trsm(S.var("a"), S.var("b"), rightside=True), {"a": (3, 3), "b": (3, 2)},
     ["rightside=True"]),
    (lambda: S.khatri_rao(S.var("a"), S.var("b")), {"a": (2, 3), "b": (2, 4)}, ["input 1"]),
])
def test_shape_errors_name_op_and_shapes(build, shapes, words) -> None:
    with pytest.raises(ShapeError) as err:
        build().infer_shape(**shapes)
    for w in words:
        assert w in str(err.value), str(err.value)


@pytest.mark.parametrize("fn, data, words", [
    (sg.nd.linalg.potrf, [[[4.0, 0.0], [0.0, 1.0]], [[1.0, 2.0], [2.0, 1.0]]],
     ["potrf", "matrix 1"]),
    (sg.nd.linalg.inverse, [[1.0, 2.0], [2.0, 4.0]], ["inverse", "ingular"]),
])
def test_bad_matrices_are_data_errors_and_leave_data_alone(fn, data, words) -> None:
    x = sg.nd.array(np.array(data))
    before = x.asnumpy().copy()
    with pytest.raises(DataError) as err:
        out = fn(x)
        (out[0] if isinstance(out, (list, tuple)) else out).asnumpy()
    for w in words:
        assert w in str(err.value), str(err.value)
    np.testing.assert_array_equal(x.asnumpy(), before)


def _lowered(build, shapes: dict, dtype: str = "float32") -> list:
    exe = build().simple_bind(sg.cpu(), type_dict={k: dtype for k in shapes}, **shapes)
    return [lower_schedule(s, 132) for s in (exe._infer.schedule, exe._train.schedule)]


def test_factorizations_are_refused_on_the_gpu_by_name(monkeypatch) -> None:
    build = lambda: L.potrf(S.var("a"), name="chol")  # noqa: E731
    with pytest.raises(BindError) as err:
        _lowered(build, {"a": (3, 3)})
    assert "chol (_linalg_potrf)" in str(err.value) and "cuSOLVER" in str(err.value)
    with pytest.raises(BindError, match="axis=1"):
        _lowered(lambda: L.gemm2(S.var("a"), S.var("b"), axis=1), {"a": (2, 3, 4, 5),
                                                                    "b": (2, 5, 4, 6)})
    monkeypatch.setenv("SYMGRAPH_ALLOW_HOST", "1")
    acts = [a for low in _lowered(build, {"a": (3, 3)}) for step in low.actions
            for a in flat_actions(step)]
    assert any(isinstance(a, Host) and a.step.node.op == "_linalg_potrf" for a in acts)


@pytest.mark.skipif(compiler.find_nvcc() is None, reason="nvcc not on PATH")
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_linalg_kernels_compile_for_sm90(dtype: str) -> None:
    kernels = {}
    for case in ALL_CASES:
        if (case.op.startswith("_linalg_") or case.op == "khatri_rao") \
                and case.name() not in GPU_REFUSED_CASES:
            shapes = {k: g(np.random.default_rng(0)).shape for k, g in case.inputs.items()}
            for low in _lowered(case.build, shapes, dtype):
                kernels.update({a.kernel.name: a.kernel for acts in low.actions
                                for a in flat_actions(acts) if isinstance(a, Kernel)})
    assert any(n.startswith("sg_linalg_trian") for n in kernels) and len(kernels) > 10
    cubin = compiler.run_nvcc(compiler.module_source(list(kernels.values())), "sm_90",
                              compiler.find_nvcc())
    assert all(name.encode() in cubin for name in kernels)
