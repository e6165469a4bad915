"""Strided copies (transpose, slice) that keep their innermost run move 16 bytes per thread:
the view in vectors (``kernels_views.vector_view``), checked on the CPU through the lowering
(``host_run``) against numpy, and with misaligned pointers, which take the element loop."""
from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest

import symgraph as sg
from symgraph.runtime.cuda.actions import Kernel
from symgraph.runtime.cuda.compiler import module_source
from symgraph.runtime.cuda.kernels_views import render_strided, vector_view
from symgraph.runtime.cuda.lowering_views import view_geometry

from .host_run import HOST_NARROW, HOST_PRELUDE, host_compiler, lowered, run_on_host

S = sg.sym
needs_gxx = pytest.mark.skipif(host_compiler() is None, reason="g++ not on PATH")
CASES = {  # id: (shape, dtype, sym of x, numpy of x, vectorised)
    "heads_f32": ((2, 5, 3, 8), "float32", lambda x: S.transpose(x, axes=(0, 2, 1, 3)),
                  lambda x: x.transpose(0, 2, 1, 3), True),
    "heads_f16": ((2, 5, 3, 16), "float16", lambda x: S.transpose(x, axes=(0, 2, 1, 3)),
                  lambda x: x.transpose(0, 2, 1, 3), True),
    "slice_whole_vectors": ((3, 16), "float32", lambda x: S.slice_axis(x, axis=1, begin=4,
                                                                       end=12),
                            lambda x: x[:, 4:12], True),
    "slice_off_vector": ((3, 16), "float32", lambda x: S.slice_axis(x, axis=1, begin=2,
                                                                    end=10),
                         lambda x: x[:, 2:10], False),
    "last_axis_moves": ((4, 8), "float32", lambda x: S.transpose(x), lambda x: x.T, False),
}


def test_vector_view_needs_whole_contiguous_vectors() -> None:
    assert vector_view((2, 3, 8), (48, 8, 1), 0, 4) == ((2, 3, 2), (12, 2, 1), 0)
    assert vector_view((2, 1, 8), (48, 5, 1), 4, 4) == ((2, 1, 2), (12, 0, 1), 1)
    assert vector_view((2, 3, 8), (48, 8, 1), 2, 4) is None  # offset inside a vector
    assert vector_view((2, 3, 6), (48, 8, 1), 0, 4) is None  # a run of 1.5 vectors
    assert vector_view((2, 3, 8), (48, 6, 1), 0, 4) is None  # rows 1.5 vectors apart
    assert vector_view((3, 8), (1, 3), 0, 4) is None  # the innermost axis strided
    assert vector_view((3, 8), (8, 1), 0, 16) is None  # one element per vector


@needs_gxx
@pytest.mark.parametrize("cid", sorted(CASES))
def test_strided_copies_on_host(cid: str, tmp_path: Path) -> None:
    shape, dtype, make, ref, vectorised = CASES[cid]
    x = np.random.default_rng(2).normal(size=shape).astype(dtype)
    exe = make(S.var("x")).simple_bind(sg.cpu(), grad_req="null", type_dict={"x": dtype},
                                       x=shape)
    sch = exe._infer.schedule
    (step,) = sch.steps
    names = [a.kernel.name for a in lowered(step, sch.shapes, sch.dtypes)[0]
             if isinstance(a, Kernel)]
    assert any("gather_v" in n for n in names) == vectorised, names
    (got,) = run_on_host(step, sch.shapes, sch.dtypes, [x], tmp_path)
    np.testing.assert_array_equal(got, ref(x))


@needs_gxx
@pytest.mark.parametrize("scatter", [False, True])
def test_misaligned_pointers_take_the_element_loop(scatter: bool, tmp_path: Path) -> None:
    base = np.arange(2 * 5 * 3 * 8, dtype=np.float32).reshape(2, 5, 3, 8)
    view = base.transpose(0, 2, 1, 3)
    kern = render_strided(*view_geometry(view, base), scatter)
    assert "gather_v" in kern.name or "scatter_v" in kern.name
    n = base.size
    main = (f"int main() {{\n    static float a[{n + 4}], b[{n + 4}];\n"
            f"    for (int i = 0; i < {n}; ++i) a[i + 1] = (float)i;\n"
            f"    {kern.name}(b + 1, a + 1, {n}LL);\n"  # 4 bytes past 16-byte alignment
            f"    fwrite(b + 1, 4, {n}, stdout);\n    return 0;\n}}\n")
    src = tmp_path / "view.cpp"
    # the vector path aborts here: misaligned pointers must not reach it
    module = module_source([kern]).replace("yv[i] = xv[o];", "abort();").replace(
        "yv[o] = xv[i];", "abort();")
    assert module.count("abort();") == 1
    src.write_text(HOST_PRELUDE + HOST_NARROW + module + main)
    subprocess.run([host_compiler(), "-O1", "-w", "-o", str(tmp_path / "view"), str(src)],
                   check=True)
    got = np.frombuffer(subprocess.run([str(tmp_path / "view")], check=True,
                                       capture_output=True).stdout, np.float32)
    flat = base.reshape(-1)
    if scatter:  # y[view(i)] = x[i]: the view's order written back into the base's layout
        want = np.empty_like(base)
        want.transpose(0, 2, 1, 3)[...] = flat.reshape(view.shape)
        np.testing.assert_array_equal(got, want.reshape(-1))
    else:
        np.testing.assert_array_equal(got, np.ascontiguousarray(view).reshape(-1))
