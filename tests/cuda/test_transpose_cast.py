"""``_transpose_cast``'s GPU lowering (one strided gather that converts each element, as
``passes/fold_casts`` makes of AMP's weight casts and transposes) run on the CPU (``host_run``)
against numpy's transpose then astype, for the conversions AMP makes; it compiles for sm_90."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import symgraph as sg
from symgraph.runtime.cuda import compiler
from symgraph.runtime.cuda.actions import Kernel
from symgraph.core.dtypes import as_dtype

from .host_run import host_compiler, lowered, run_on_host

S = sg.sym
CASES = [("float32", "bfloat16", (0, 2, 3, 1)), ("bfloat16", "float32", (0, 3, 1, 2)),
         ("float32", "float16", (1, 0, 2, 3)), ("float16", "float32", (3, 2, 1, 0)),
         ("float32", "float32", (0, 2, 3, 1))]


def _step(src: str, dst: str, axes: tuple):
    sym = S._transpose_cast(S.var("x"), axes=axes, dtype=dst)
    exe = sym.simple_bind(sg.cpu(), grad_req="null", type_dict={"x": as_dtype(src)},
                          x=(4, 3, 5, 2))
    sch = exe._infer.schedule
    return sch.steps[0], sch.shapes, sch.dtypes


@pytest.mark.skipif(host_compiler() is None, reason="g++ not on PATH")
@pytest.mark.parametrize("src,dst,axes", CASES)
def test_converting_gather_on_host(src: str, dst: str, axes: tuple, tmp_path: Path) -> None:
    step, shapes, dtypes = _step(src, dst, axes)
    assert step.node.op == "_transpose_cast"
    x = np.random.default_rng(1).normal(size=(4, 3, 5, 2)) * 3.0
    x = x.astype(as_dtype(src))
    got = run_on_host(step, shapes, dtypes, [x], tmp_path)[0]
    want = x.astype(np.float64).transpose(axes).astype(as_dtype(dst))
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got.reshape(want.shape), want)


@pytest.mark.skipif(compiler.find_nvcc() is None, reason="nvcc not on PATH")
def test_converting_gathers_compile_for_sm90() -> None:
    kernels = {a.kernel.name: a.kernel for src, dst, axes in CASES
               for a in lowered(*_step(src, dst, axes))[0] if isinstance(a, Kernel)}
    assert len(kernels) == len(CASES)
    cubin = compiler.run_nvcc(compiler.module_source(list(kernels.values())), "sm_90",
                              compiler.find_nvcc())
    assert cubin
