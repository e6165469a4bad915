"""Reductions over leading axes (bias gradients, sums of broadcast gradients) lower to two
coalesced stages, column partials then their reduction: checked on the CPU (the step's kernels
run as host C++, ``host_run``) against float64 numpy, and compiled for sm_90."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import symgraph as sg
from symgraph.runtime.cuda import compiler
from symgraph.runtime.cuda.actions import Kernel
from symgraph.runtime.cuda.kernels_reduce import leading_split, render_column_partials

from .host_run import host_compiler, lowered, run_on_host

S = sg.sym
CASES = {  # id: (shape, sym of x, numpy reference of x)
    "sum_rows": ((200, 40), lambda x: S.sum(x, axis=0), lambda x: x.sum(0)),
    "mean_two_axes": ((4, 50, 33), lambda x: S.mean(x, axis=(0, 1)), lambda x: x.mean((0, 1))),
    "max_rows": ((130, 64), lambda x: S.max(x, axis=0), lambda x: x.max(0)),
    "norm_rows": ((100, 48), lambda x: S.norm(x, axis=0), lambda x: np.sqrt((x * x).sum(0))),
    "bias_grad": ((3, 70, 36), lambda x: S.sum(x, axis=(0, 1), keepdims=True),
                  lambda x: x.sum((0, 1), keepdims=True)),
}


def test_leading_split_finds_column_reductions_only() -> None:
    assert leading_split((4, 5, 6), (0, 1)) == (20, 6)
    assert leading_split((4, 5, 6), (1, 0)) == (20, 6)
    assert leading_split((4, 5, 6), (1,)) == (0, 0)
    assert leading_split((4, 5, 6), (0, 1, 2)) == (0, 0)
    assert leading_split((4, 5, 6), ()) == (0, 0)


@pytest.mark.skipif(host_compiler() is None, reason="g++ not on PATH")
@pytest.mark.parametrize("cid", sorted(CASES))
def test_column_reduction_on_host(cid: str, tmp_path: Path) -> None:
    shape, make, ref = CASES[cid]
    x = np.random.default_rng(4).normal(size=shape)
    exe = make(S.var("x")).simple_bind(sg.cpu(), grad_req="null", x=shape)
    sch = exe._infer.schedule
    (step,) = sch.steps
    acts, _, _ = lowered(step, sch.shapes, sch.dtypes)
    names = [a.kernel.name for a in acts if isinstance(a, Kernel)]
    assert len(names) == 2 and "column_partials" in names[0], names
    (got,) = run_on_host(step, sch.shapes, sch.dtypes, [x.astype(np.float32)], tmp_path)
    want = ref(x)
    np.testing.assert_allclose(np.asarray(got, np.float64).reshape(want.shape), want,
                               rtol=1e-5, atol=1e-5)


@pytest.mark.skipif(compiler.find_nvcc() is None, reason="nvcc not on PATH")
def test_column_partials_compile_for_sm90() -> None:
    kernels = [render_column_partials(4096, 768, 128, k, dt)
               for k in ("sum", "max", "norm2") for dt in ("float32", "bfloat16", "float16")]
    cubin = compiler.run_nvcc(compiler.module_source(kernels), "sm_90", compiler.find_nvcc())
    assert all(k.name.encode() in cubin for k in kernels)
