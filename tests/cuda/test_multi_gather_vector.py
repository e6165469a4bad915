"""``_multi_transpose_cast`` of plain casts (AMP's weights that need no transpose: a
Transformer's dense layers) converts a 16-byte pack per thread: run on the CPU (``host_run``)
bit for bit against numpy's astype, including the scalar loop it keeps for unaligned pointers
and segments that are not whole packs; compiled for sm_90; the bf16 encoder's weight casts
lower to it."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import symgraph as sg
from symgraph.core.dtypes import as_dtype
from symgraph.runtime.cuda import compiler
from symgraph.runtime.cuda.actions import Kernel
from symgraph.runtime.cuda.kernels_views import render_multi_gather, vector_lanes

from .host_run import host_compiler, lowered, run_on_host

S = sg.sym
# (input dtype, output dtype, shape): whole packs of 4 lanes (the widest dtype is float32)
PACKED = [("float32", "bfloat16", (12, 8)), ("bfloat16", "float32", (40,)),
          ("float32", "float16", (2, 6)), ("float16", "float32", (4, 3, 2)),
          ("bfloat16", "bfloat16", (8,))]


def _step(segments: list):
    names = [f"x{j}" for j in range(len(segments))]
    sym = S.Group(list(S._multi_transpose_cast(
        *[S.var(n) for n in names], axes=tuple(tuple(range(len(s[2]))) for s in segments),
        dtypes=tuple(s[1] for s in segments))))
    exe = sym.simple_bind(sg.cpu(), grad_req="null",
                          type_dict={n: as_dtype(s[0]) for n, s in zip(names, segments)},
                          **{n: s[2] for n, s in zip(names, segments)})
    sch = exe._infer.schedule
    assert [st.node.op for st in sch.steps] == ["_multi_transpose_cast"]
    return sch.steps[0], sch.shapes, sch.dtypes


def _kernel(segments: list):
    kernels = [a for a in lowered(*_step(segments))[0] if isinstance(a, Kernel)]
    assert len(kernels) == 1
    return kernels[0].kernel


@pytest.mark.skipif(host_compiler() is None, reason="g++ not on PATH")
@pytest.mark.parametrize("segments,vector", [(PACKED, True),
                                             (PACKED + [("float32", "bfloat16", (6,))], False)])
def test_packs_on_host(segments: list, vector: bool, tmp_path: Path) -> None:
    assert (_kernel(segments).name.startswith("sg_multi_gather_v")) == vector
    rng = np.random.default_rng(5)
    xs = [(rng.normal(size=s[2]) * 3.0).astype(as_dtype(s[0])) for s in segments]
    got = run_on_host(*_step(segments), xs, tmp_path)
    for x, y, s in zip(xs, got, segments):
        want = x.astype(np.float64).astype(as_dtype(s[1]))
        assert y.dtype == want.dtype
        np.testing.assert_array_equal(y.reshape(want.shape), want)


def test_only_whole_packs_of_plain_casts_vectorise() -> None:
    contiguous = ((8, 4), (4, 1), 0, "bfloat16", "float32")
    assert vector_lanes([contiguous]) == 4
    assert vector_lanes([contiguous[:3] + ("bfloat16", "bfloat16")]) == 8
    assert vector_lanes([contiguous, ((4, 8), (1, 4), 0, "bfloat16", "float32")]) == 0
    assert vector_lanes([((6,), (1,), 0, "bfloat16", "float32")]) == 0
    src = render_multi_gather([contiguous]).source
    assert "% 16u" in src and "sg_pack<float, 4>" in src  # aligned check, then packs


@pytest.mark.skipif(compiler.find_nvcc() is None, reason="nvcc not on PATH")
def test_packed_kernel_compiles_for_sm90() -> None:
    kern = _kernel(PACKED)
    assert compiler.run_nvcc(compiler.module_source([kern]), "sm_90", compiler.find_nvcc())


def test_encoder_weight_casts_lower_to_packs() -> None:
    from benchmarks.step_counts import lowered_program, model
    schedule, program = lowered_program(*model("encoder", quick=True), bf16=True)
    names = [a.kernel.name for st, acts in zip(schedule.steps, program.actions)
             if st.node.op == "_multi_transpose_cast" for a in acts if isinstance(a, Kernel)]
    assert len(names) == 2 and all(n.startswith("sg_multi_gather_v") for n in names)
