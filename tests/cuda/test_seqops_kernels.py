"""The CUDA lowering of the classic indexing, rearranging and math ops (ops/indexing_nd.py,
ops/rearrange.py, ops/math_extra.py) without a GPU: every kernel of their registry cases
renders and compiles with nvcc for sm_90 in float32, float16, bfloat16 (and int32 where the
op moves integers), and the float32 steps run on the host (``host_run``: one thread, in
order) equal the ops' numpy references on the same inputs."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import symgraph as sg
from symgraph.runtime.cuda import compiler
from symgraph.runtime.cuda.actions import Kernel, flat_actions
from symgraph.runtime.cuda.plan import lower_schedule
from symgraph.core.registry import RunCtx, get_op
from tests.ops.cases_seqops import CASES

from .graphs import FLOAT64_CASES
from .host_run import host_compiler, lowered, run_on_host, runnable
from .narrow import narrow_bind

S = sg.sym
OPS = {c.op for c in CASES} | {o for c in CASES for o in c.also_covers}
# formulas of libm functions g++ lacks (erfinvf) are compiled with nvcc only
NOT_ON_HOST = {"erfinv"}
needs_nvcc = pytest.mark.skipif(compiler.find_nvcc() is None, reason="nvcc not on PATH")


def _shapes(case) -> dict:
    rng = np.random.default_rng(0)
    return {k: np.shape(g(rng)) for k, g in case.inputs.items()}


def _schedules(dtype: str) -> list:
    out = []
    for case in CASES:
        if case.name() in FLOAT64_CASES:
            continue
        shapes = _shapes(case)
        exe = (case.build().simple_bind(sg.cpu(), **shapes) if dtype == "float32"
               else narrow_bind(case.build(), shapes, dtype))
        out += [(case.name(), exe._infer.schedule), (case.name(), exe._train.schedule)]
    return out


def _int_schedules() -> list:
    """Integer data moved by the index families, and cumsum summing int32."""
    d, i = S.var("d"), S.var("i")
    syms = [S.gather_nd(d, i), S.scatter_nd(d, i, shape=(3, 4)), S.cumsum(d, axis=0),
            S.contrib.index_copy(d, i, S.var("n")), S.ravel_multi_index(d, shape=(3, 4))]
    shapes = [{"d": (3, 4), "i": (2, 5)}, {"d": (5,), "i": (2, 5)}, {"d": (3, 4)},
              {"d": (3, 4), "i": (2,), "n": (2, 4)}, {"d": (2, 6)}]
    return [("int32", sym.simple_bind(sg.cpu(), grad_req="null",
                                      type_dict={k: np.int32 for k in sh}, **sh)._infer.schedule)
            for sym, sh in zip(syms, shapes)]


def _kernels(schedules: list) -> list:
    return [a.kernel for _, s in schedules for acts in lower_schedule(s, 132).actions
            for a in flat_actions(acts) if isinstance(a, Kernel)]


@needs_nvcc
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "int32"])
def test_kernels_compile_for_sm90(dtype: str) -> None:
    schedules = _int_schedules() if dtype == "int32" else _schedules(dtype)
    ops = {st.node.op for _, s in schedules for st in s.steps}
    if dtype != "int32":
        assert OPS <= ops, OPS - ops
    kernels = _kernels(schedules)
    cubin = compiler.run_nvcc(compiler.module_source(kernels), "sm_90", compiler.find_nvcc())
    assert cubin[:4] == b"\x7fELF"
    for k in kernels:
        assert k.name.encode() in cubin


def _host_steps() -> list:
    out = []
    for name, sch in _schedules("float32")[1::2]:
        for k, st in enumerate(sch.steps):
            if st.node.op in OPS - NOT_ON_HOST and runnable(lowered(st, sch.shapes,
                                                                    sch.dtypes)[0]):
                out.append((f"{name}-{k}-{st.node.op}", st, sch.shapes, sch.dtypes))
    return out


STEPS = _host_steps() if host_compiler() is not None else []


def test_host_steps_cover_the_kernel_families() -> None:
    if host_compiler() is None:
        pytest.skip("g++ not on PATH")
    ran = {st.node.op for _, st, _, _ in STEPS}
    assert {"gather_nd", "scatter_nd", "_backward_gather_nd", "ravel_multi_index",
            "unravel_index", "_contrib_index_copy", "_contrib_index_array",
            "_contrib_arange_like", "fill_element_0index", "depth_to_space", "diag",
            "_backward_diag", "Crop", "im2col", "col2im", "cumsum"} <= ran


@pytest.mark.parametrize("name,step,shapes,dtypes", STEPS, ids=[s[0] for s in STEPS])
def test_step_kernels_match_numpy(name: str, step, shapes, dtypes, tmp_path: Path) -> None:
    # integer parts 0 or 1 (in range for every index input), fractions for the data
    rng = np.random.default_rng(7)
    xs = [(rng.integers(0, 2, size=shapes[s]) + rng.uniform(0.05, 0.45, size=shapes[s]))
          .astype(dtypes[s]) for s in step.inputs]
    want = get_op(step.node.op).compute(step.node.attrs, xs, RunCtx(is_train=True))
    got = run_on_host(step, shapes, dtypes, xs, tmp_path)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, np.asarray(w, g.dtype).reshape(g.shape), rtol=1e-5,
                                   atol=1e-5, err_msg=name)
