"""float16 and bfloat16 on the GPU path, checked without a GPU.

* every test graph binds in both narrow dtypes and lowers without a single host step;
* every kernel of those programs compiles with nvcc for sm_90, spelled with the narrow type;
* one or more steps of every lowering family run on the host (``host_run``: host ``__half`` and
  ``__nv_bfloat16`` readable only through ``sg_ld``) and match the op's numpy reference in
  float32 on the same narrow-rounded inputs, within ``narrow.TOLERANCE``;
* the mechanism: ``FAMILY_DTYPES`` / ``family_supports``, typed scratch and fills, GemmEx and
  cuDNN descriptor enums (checked against a recording stand-in for the libraries).
"""
from __future__ import annotations

import ctypes
from collections import Counter
from pathlib import Path
from unittest import mock

import numpy as np
import pytest

import symgraph as sg
from symgraph.core.base import BindError
from symgraph.runtime.cuda import compiler, cublas, cudnn
from symgraph.runtime.cuda.actions import (ALL_FLOATS, FAMILIES, FAMILY_DTYPES, FLOAT32_ONLY, Fill, Gemm,
                                   Host, Kernel, family_supports, flat_actions, lowering_of,
                                   step_context)
from symgraph.runtime.cuda.lowering import lower_step
from symgraph.runtime.cuda.plan import lower_schedule
from symgraph.core.registry import RunCtx, get_op

from .host_run import host_compiler, lowered, run_on_host, runnable
from .narrow import NARROW, PINNED, assert_close, narrow_bind, narrow_graphs
from .test_codegen_compile import HOST_FALLBACK

DTYPES = sorted(NARROW)
S = sg.sym
needs_nvcc = pytest.mark.skipif(compiler.find_nvcc() is None, reason="nvcc not on PATH")
needs_gxx = pytest.mark.skipif(host_compiler() is None, reason="g++ not on PATH")
_SCHEDULES: dict[str, list] = {}


def schedules(dtype: str) -> list[tuple[str, object]]:
    """(graph id, schedule) of the inference and training programs of every narrow graph."""
    if dtype not in _SCHEDULES:
        out = []
        for name, sym, args, aux in narrow_graphs(cpu_schedules=True, dtype=dtype):
            exe = narrow_bind(sym, {k: v.shape for k, v in {**args, **aux}.items()}, dtype)
            out += [(name, exe._infer.schedule), (name, exe._train.schedule)]
        _SCHEDULES[dtype] = out
    return _SCHEDULES[dtype]


def test_pinned_cases_refuse_a_narrow_graph() -> None:
    """The only registry cases without a narrow version are the float64-pinned ones: their
    type rule refuses float16 (anything else binding narrow is covered below)."""
    for name, sym, args, aux in [g for g in __import__("tests.cuda.graphs", fromlist=["x"])
                                 .all_graphs() if g[0] in PINNED]:
        with pytest.raises(sg.base.DTypeError):
            narrow_bind(sym, {k: v.shape for k, v in {**args, **aux}.items()}, "float16")


@pytest.mark.parametrize("dtype", DTYPES)
def test_no_step_takes_the_host_path(dtype: str) -> None:
    """No op of any test graph (registry cases and models, forward and training) runs on the
    host in a narrow dtype (beyond the ops whose host path is documented in every dtype,
    ``HOST_FALLBACK``)."""
    found = Counter()
    for name, sch in schedules(dtype):
        assert {np.dtype(t).name for t in sch.dtypes} & {dtype}, f"{name}: not {dtype}"
        for acts in lower_schedule(sch, 132).actions:
            for a in flat_actions(acts):
                if isinstance(a, Host) and a.step.node.op not in HOST_FALLBACK:
                    found[f"{name}: {a.step.node.name} ({a.step.node.op})"] += 1
    assert not found, f"host steps in {dtype}: {sorted(found)}"


@needs_nvcc
@pytest.mark.parametrize("dtype", DTYPES)
def test_every_narrow_kernel_compiles(dtype: str) -> None:
    """All kernels of all narrow programs in one module: nvcc compiles it for sm_90, every
    entry point is in the cubin, and the kernels store the narrow type."""
    kernels = [a.kernel for _, sch in schedules(dtype)
               for acts in lower_schedule(sch, 132).actions for a in flat_actions(acts)
               if isinstance(a, Kernel)]
    ctype = {"float16": "__half", "bfloat16": "__nv_bfloat16"}[dtype]
    narrow = [k for k in kernels if ctype in k.source]
    assert len(narrow) > 0.8 * len(kernels), (len(narrow), len(kernels))
    cubin = compiler.run_nvcc(compiler.module_source(kernels), "sm_90", compiler.find_nvcc())
    missing = [k.name for k in kernels if k.name.encode() not in cubin]
    assert not missing, f"{dtype}: kernels missing from the cubin: {missing[:5]}"


def _host_steps(dtype: str, per_family: dict[str, int]) -> list:
    """(id, step, shapes, dtypes) of the first runnable training steps of each family."""
    taken: Counter = Counter()
    out = []
    for name, sch in schedules(dtype)[1::2]:
        for k, st in enumerate(sch.steps):
            fam = lowering_of(get_op(st.node.op))[0]
            acts, _, n_keys = lowered(st, sch.shapes, sch.dtypes)
            if taken[fam] >= per_family.get(fam, 1) or n_keys or not runnable(acts) \
                    or not any(isinstance(a, (Kernel, Gemm)) for a in acts):
                continue
            taken[fam] += 1
            out.append((f"{dtype}-{name}-{k}-{st.node.op}", st, sch.shapes, sch.dtypes, dtype))
    return out


# ctc: none, since uniform random labels are no labels (DataError); tests/cuda/test_ctc_lowering.py
# runs its kernel in every dtype on valid ones.
PER_FAMILY = {"fused": 4, "elementwise": 4, "convolution": 3, "pooling_backward": 2, "ctc": 0}
_CHOSEN: dict[str, list] = {}


def host_steps(dtype: str) -> list:
    """The steps run on the host in ``dtype`` (chosen once per process)."""
    if dtype not in _CHOSEN:
        _CHOSEN[dtype] = _host_steps(dtype, PER_FAMILY)
    return _CHOSEN[dtype]


def test_host_steps_cover_the_families() -> None:
    fams = {lowering_of(get_op(s[1].node.op))[0] for d in DTYPES for s in host_steps(d)}
    assert {"elementwise", "fused", "convolution", "pooling", "pooling_backward", "pad", "cast",
            "gather_views", "fully_connected", "take", "broadcast_to"} <= fams, sorted(fams)


@needs_gxx
@pytest.mark.parametrize("dtype", DTYPES)
def test_narrow_steps_match_float32_reference(dtype: str, tmp_path: Path) -> None:
    """Each chosen step, run on the host in ``dtype``, matches the op's numpy reference in
    float32 on the same narrow-rounded inputs. (One test per dtype, not per step: the steps
    come from binding every narrow graph, which a parametrisation would do at collection, in
    every test process.)"""
    failed = []
    for i, (name, step, shapes, dtypes, _) in enumerate(host_steps(dtype)):
        rng = np.random.default_rng(5)
        (tmp_path / str(i)).mkdir()
        xs = [rng.uniform(0.5, 1.5, size=shapes[s]).astype(dtypes[s]) for s in step.inputs]
        ref_in = [x.astype(np.float32) if x.dtype == NARROW[dtype] else x for x in xs]
        want = get_op(step.node.op).compute(step.node.attrs, ref_in, RunCtx(is_train=True))
        got = run_on_host(step, shapes, dtypes, xs, tmp_path / str(i))
        for k, (g, w) in enumerate(zip(got, want)):
            try:
                assert_close(g, w, dtype, f"{name} output {k}")
            except AssertionError as e:
                failed.append(str(e))
    assert not failed, "\n".join(failed)


def test_family_dtypes_decide_the_device_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every family registers the float dtypes it lowers; a step in a dtype its family does
    not list is a BindError (the host path only with SYMGRAPH_ALLOW_HOST=1), and index inputs
    may be integers where declared."""
    assert set(FAMILY_DTYPES) == set(FAMILIES)
    # every family lowers the three floats; rank_sort also sorts integers in their own type
    wider = {f: sorted(d - ALL_FLOATS) for f, d in FAMILY_DTYPES.items() if d != ALL_FLOATS}
    assert wider == {"rank_sort": ["int16", "int32", "int64", "int8", "uint16", "uint32",
                                   "uint64", "uint8"]}, wider
    assert all(FAMILY_DTYPES[f] >= ALL_FLOATS for f in FAMILIES)
    f16, f32, i32 = np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.int32)
    assert family_supports("reduce", [f16, f16]) and not family_supports("reduce", [f16, i32])
    assert family_supports("one_hot", [i32, f16], index=(0,))
    assert family_supports("cast", [f16, np.dtype(np.float64)])  # byte families: any dtype
    sch = S.sum(S.var("x"), axis=1).simple_bind(sg.cpu(), type_dict={"x": "float16"},
                                                x=(4, 6))._infer.schedule
    (st,) = sch.steps
    assert not any(isinstance(a, Host) for a in lower_step(
        step_context(st, sch.shapes, sch.dtypes, 132)))
    monkeypatch.setitem(FAMILY_DTYPES, "reduce", FLOAT32_ONLY)
    with pytest.raises(BindError, match=r"sum.*float16"):  # never a silent host path
        lower_step(step_context(st, sch.shapes, sch.dtypes, 132))
    monkeypatch.setenv("SYMGRAPH_ALLOW_HOST", "1")
    acts = lower_step(step_context(st, sch.shapes, sch.dtypes, 132))
    assert [type(a) for a in acts] == [Host]
    assert [type(a) for a in lower_step(step_context(st, sch.shapes, [f32, f32], 132))] == \
        [Kernel]


def test_scratch_and_fills_follow_the_itemsize() -> None:
    """A convolution's im2col fallback in float16 asks for half the scratch of float32 and
    its GEMM is a float16 GemmEx; take's gradient zero-fills 16-bit elements."""
    sym = S.Convolution(S.var("x"), S.var("w"), kernel=(3, 3), num_filter=4, no_bias=True)
    need = {}
    for dt in ("float32", "float16"):
        sch = sym.simple_bind(sg.cpu(), type_dict={"x": dt, "w": dt},
                              x=(4, 8, 32, 32))._infer.schedule
        scratch: list[int] = []
        acts = flat_actions(lower_step(step_context(sch.steps[0], sch.shapes, sch.dtypes, 132,
                                                    scratch)))
        need[dt] = sum(scratch)
        assert {a.dtype for a in acts if isinstance(a, Gemm)} == {dt}
    assert need["float16"] * 2 == pytest.approx(need["float32"], rel=0.05)
    g = S.take(S.var("a"), S.var("i")).simple_bind(
        sg.cpu(), type_dict={"a": "float16", "i": "float16"}, a=(5, 3), i=(4,))
    fills = [a for st in g._train.schedule.steps for a in flat_actions(lower_step(
        step_context(st, g._train.schedule.shapes, g._train.schedule.dtypes, 132)))
        if isinstance(a, Fill)]
    assert fills and all(f.dtype == "float16" for f in fills)


class _Recorder:
    """A stand-in for a ctypes library: every call is recorded and returns 0 (success)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple]] = []

    def __getattr__(self, name: str):
        fn = mock.MagicMock(side_effect=lambda *a: self.calls.append((name, a)) or 0)
        setattr(self, name, fn)
        return fn


@pytest.mark.parametrize("dtype,code", [("float16", 2), ("bfloat16", 14)])
@pytest.mark.parametrize("batch", [1, 3])
def test_gemm_ex_arguments(dtype: str, code: int, batch: int, monkeypatch) -> None:
    """Narrow GEMMs call cublasGemmEx / cublasGemmStridedBatchedEx with CUDA_R_16F (2) or
    CUDA_R_16BF (14) for A, B and C (library_types.h), CUBLAS_COMPUTE_32F (68) and
    CUBLAS_GEMM_DEFAULT (-1), operands swapped for row-major; float32 stays SGEMM."""
    lib = _Recorder()
    monkeypatch.setattr(cublas, "_load", lambda: lib)
    monkeypatch.setattr(cublas, "handle", lambda dev: ctypes.c_void_p(7))
    m, n, k = 5, 6, 7
    cublas.gemm(0, 0, False, True, m, n, k, 100, 200, 300, batch=batch, dtype=dtype)
    name, args = [c for c in lib.calls if "Gemm" in c[0]][0]
    if batch == 1:
        assert name == "cublasGemmEx"
        _, op_b, op_a, cm, cn, ck, _, b, bt, ldb, a, at, lda, _, c, ct, ldc, comp, algo = args
    else:
        assert name == "cublasGemmStridedBatchedEx"
        (_, op_b, op_a, cm, cn, ck, _, b, bt, ldb, sb, a, at, lda, sa, _, c, ct, ldc, sc, cnt,
         comp, algo) = args
        assert (sb, sa, sc, cnt) == (k * n, m * k, m * n, batch)
    assert (op_b, op_a, cm, cn, ck) == (cublas.CUBLAS_OP_T, cublas.CUBLAS_OP_N, n, m, k)
    assert (b, a, c, ldb, lda, ldc) == (200, 100, 300, k, k, n)
    assert (bt, at, ct, comp, algo) == (code, code, code, 68, -1)
    lib.calls.clear()
    cublas.gemm(0, 0, False, True, m, n, k, 100, 200, 300, batch=batch)
    assert [c[0] for c in lib.calls if "emm" in c[0]][0].startswith("cublasSgemm")


@pytest.mark.parametrize("dtype,code", [("float32", 0), ("float16", 2), ("bfloat16", 9)])
def test_cudnn_descriptors_take_the_storage_type(dtype: str, code: int, monkeypatch) -> None:
    """Tensor and filter descriptors carry CUDNN_DATA_FLOAT/HALF/BFLOAT16 (0/2/9); narrow
    convolutions use tensor-core math (CUDNN_TENSOR_OP_MATH = 1), float32 plain FMA (3)."""
    lib = _Recorder()
    monkeypatch.setattr(cudnn, "_LIB", lib)
    cudnn._desc("tensor", dtype, 2, 3, 4, 5)
    cudnn._desc("filter", dtype, 4, 3, 3, 3)
    (t_args,) = [a for n, a in lib.calls if n == "cudnnSetTensorNdDescriptor"]
    (f_args,) = [a for n, a in lib.calls if n == "cudnnSetFilterNdDescriptor"]
    assert t_args[1] == code and f_args[1] == code
    monkeypatch.delenv("SYMGRAPH_TF32", raising=False)
    assert cudnn.math_type(dtype) == (3 if dtype == "float32" else 1)


CAST_PAIRS = [("float32", "bfloat16"), ("bfloat16", "float32"), ("float16", "bfloat16"),
              ("bfloat16", "float16"), ("bfloat16", "int32"), ("int32", "bfloat16"),
              ("float32", "float16"), ("float16", "float32")]


@needs_gxx
@pytest.mark.parametrize("src,dst", CAST_PAIRS, ids=[f"{s}-{d}" for s, d in CAST_PAIRS])
def test_cast_kernels_round_as_numpy(src: str, dst: str, tmp_path: Path) -> None:
    """Cast between narrow floats and other types: one kernel, round-to-nearest-even like
    numpy's (ml_dtypes') astype, on values that need rounding (and ties)."""
    types = {**NARROW, "float32": np.dtype(np.float32), "int32": np.dtype(np.int32)}
    sym = S.Cast(S.var("x"), dtype=types[dst])
    sch = sym.simple_bind(sg.cpu(), type_dict={"x": types[src]}, x=(257,))._infer.schedule
    (step,) = sch.steps
    acts, _, _ = lowered(step, sch.shapes, sch.dtypes)
    assert [type(a) for a in acts] == [Kernel], acts
    rng = np.random.default_rng(0)
    x = (rng.normal(size=257) * 300).astype(types[src])
    x[:3] = np.array([1.0 + 2 ** -8, 1.0 + 3 * 2 ** -9, 65504.0]).astype(types[src])
    (got,) = run_on_host(step, sch.shapes, sch.dtypes, [x], tmp_path)
    with np.errstate(over="ignore"):  # bfloat16 beyond float16's range: inf, as C converts
        want = x.astype(np.float32).astype(types[dst]) if types[dst].kind != "i" else \
            np.trunc(x.astype(np.float32)).astype(np.int32)
    np.testing.assert_array_equal(got.astype(np.float32), want.astype(np.float32),
                                  err_msg=f"Cast {src} -> {dst}")


@pytest.mark.parametrize("types,lanes", [(("float32", "float32"), 4), (("float16", "float16"), 8),
                                         (("bfloat16", "bfloat16"), 8),
                                         (("float16", "float32"), 4)])
def test_vector_width_follows_the_dtype(types: tuple, lanes: int) -> None:
    """Contiguous kernels move 16 bytes of the widest operand per lane group: 4 floats, 8
    halves; a float16 operand beside a float32 one loads 4 (8 bytes)."""
    from symgraph.core import expr as E
    from symgraph.runtime.cuda.codegen import render_elementwise
    kern, _ = render_elementwise("probe", [E.inp(0) * E.inp(1)], [(64,), (64,)], (64,),
                                 list(types), [types[0]])
    assert kern.per_thread == lanes
    assert f"sg_pack<{'__half' if types[0] == 'float16' else ''}" in kern.source or \
        types[0] != "float16"
    assert f"n / {lanes}" in kern.source
    tag = {"float16": "_f16_", "bfloat16": "_bf16_"}.get(types[0])
    assert tag is None or tag in kern.name, kern.name


def test_fill_patterns_per_dtype() -> None:
    """A Fill's memset pattern (``memset_pattern`` of the value in the fill's dtype): float32
    1.0 = 0x3f800000 (32-bit), float16 1.0 = 0x3c00, bfloat16 1.0 = 0x3f80 and -2.5 = 0xc020
    (16-bit), 1/3 rounded to nearest: always the fill type's own width."""
    from symgraph.runtime.cuda.actions import memset_pattern
    from symgraph.core.dtypes import as_dtype

    def fill(value: float, dtype: str) -> tuple:
        return memset_pattern(np.asarray(value, as_dtype(dtype)))
    assert fill(1.0, "float32") == (4, 0x3F800000)
    assert fill(1.0, "float16") == (2, 0x3C00)
    assert fill(1.0, "bfloat16") == (2, 0x3F80)
    assert fill(-2.5, "bfloat16") == (2, 0xC020)
    assert fill(1 / 3, "float16") == (2, 0x3555)
    assert fill(1 / 3, "bfloat16") == (2, 0x3EAB)
    assert fill(0.0, "float32") == (4, 0) and fill(0.0, "bfloat16") == (2, 0)


def test_assert_close_allows_only_the_given_share() -> None:
    want = np.linspace(1.0, 2.0, 20, dtype=np.float32)
    got = want.copy()
    got[:2] += 0.5  # 2 of 20 elements far off
    assert_close(got, want, "float16", "two off", share=0.1)
    with pytest.raises(AssertionError, match=r"2 of 20 elements \(at most 5% allowed\)"):
        assert_close(got, want, "float16", "two off", share=0.05)
    with pytest.raises(AssertionError, match="two off in float16"):
        assert_close(got, want, "float16", "two off")
