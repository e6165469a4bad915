"""The index arithmetic of the generated layout, cast, reduction, convolution (im2col + GEMM
path, groups, Deconvolution) and dropout kernels, checked on the CPU: each step of the registry
cases below is lowered, its kernels compiled as host C++ and run one thread at a time
(``host_run``), and the outputs compared with the op's numpy reference on the same float32
inputs. The GPU tests check the same kernels on the device (and cuDNN)."""
from __future__ import annotations

import functools

from pathlib import Path

import numpy as np
import pytest

import symgraph as sg
from symgraph.runtime.cuda import compiler
from symgraph.runtime.cuda.actions import Kernel
from symgraph.core.registry import RunCtx, get_op

from .graphs import all_graphs
from .host_run import host_compiler, lowered, run_on_host, runnable

pytestmark = pytest.mark.skipif(host_compiler() is None, reason="g++ not on PATH")
OPS = {"pad", "_backward_pad", "tile", "_backward_tile", "repeat", "_backward_repeat", "Cast",
       "_backward_Cast", "prod", "norm", "Deconvolution", "_backward_Deconvolution_data",
       "_backward_Deconvolution_weight", "Convolution", "_backward_Convolution_data",
       "_backward_Convolution_weight", "Pooling", "_backward_Pooling", "_pooling_gather",
       "_conv_act_pool", "_backward_conv_act_pool", "UpSampling", "LRN", "_linalg_gemm",
       "_linalg_gemm2", "_linalg_syrk", "_linalg_trmm", "_linalg_extracttrian",
       "_linalg_maketrian", "_linalg_extractdiag", "_linalg_makediag", "_linalg_sumlogdiag",
       "khatri_rao", "_slice_assign", "_slice_assign_scalar",
       "_arange"}
S = sg.sym


@functools.cache
def _steps() -> tuple:
    """(case id, step, shapes, dtypes) of every step of the OPS in the training schedules
    (bound at run time, once per process: at collection every test process would bind them)."""
    out = []
    for name, sym, args, aux in all_graphs(cpu_schedules=True):
        exe = sym.simple_bind(sg.cpu(), **{k: v.shape for k, v in {**args, **aux}.items()})
        sch = exe._train.schedule
        for k, st in enumerate(sch.steps):
            if st.node.op in OPS and runnable(lowered(st, sch.shapes, sch.dtypes)[0]):
                out.append((f"{name}-{k}-{st.node.op}", st, sch.shapes, sch.dtypes))
    return tuple(out)


def test_every_op_has_a_host_checked_step() -> None:
    assert {st.node.op for _, st, _, _ in _steps()} == OPS


@pytest.mark.parametrize("op", sorted(OPS))
def test_step_kernels_match_numpy(op: str, tmp_path: Path) -> None:
    """Every step of ``op`` in the registry's training schedules, run on the host."""
    steps = [s for s in _steps() if s[1].node.op == op]
    assert steps, f"no host-runnable step of {op}"
    for i, (name, step, shapes, dtypes) in enumerate(steps):
        (tmp_path / str(i)).mkdir()
        _check_step(name, step, shapes, dtypes, tmp_path / str(i))


def _check_step(name: str, step, shapes, dtypes, tmp_path: Path) -> None:
    acts, _, _ = lowered(step, shapes, dtypes)
    assert runnable(acts), f"{name}: cooperative kernel (checked on the GPU only)"
    rng = np.random.default_rng(5)
    xs = [rng.uniform(0.5, 1.5, size=shapes[s]).astype(dtypes[s]) for s in step.inputs]
    at_shapes = get_op(step.node.op).extra.get("at_shapes", lambda a, s: a)  # (_arange)
    attrs = at_shapes(step.node.attrs, [shapes[o] for o in step.outputs])
    want = get_op(step.node.op).compute(attrs, xs, RunCtx(is_train=True))
    got = run_on_host(step, shapes, dtypes, xs, tmp_path)
    for g, w in zip(got, want):  # float32 sums in another order than numpy's
        w = np.asarray(w, g.dtype).reshape(g.shape)
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5 * max(1.0, float(np.abs(w).max())),
                                   err_msg=name)


def test_dropout_mask_on_host(tmp_path: Path) -> None:
    """Keep rate, scale, a shared mask along ``axes``; equal keys give equal masks."""
    sym = S.Dropout(S.var("x"), p=0.3, axes=(1,))
    sch = sym.simple_bind(sg.cpu(), x=(4000, 3))._train.schedule
    step = sch.steps[0]
    x = np.random.default_rng(0).normal(size=(4000, 3)).astype(np.float32)
    runs = [run_on_host(step, sch.shapes, sch.dtypes, [x], tmp_path, keys=[key])
            for key in (12345, 12345, 2 ** 63 + 7)]
    y, mask = runs[0]
    assert mask.shape == (4000, 1) and set(np.unique(mask)) <= {0.0, np.float32(1 / 0.7)}
    assert abs((mask == 0).mean() - 0.3) < 0.03  # 4000 draws: over 4 standard deviations
    np.testing.assert_allclose(y, x * mask, rtol=1e-7)
    np.testing.assert_array_equal(runs[1][1], mask)
    assert not np.array_equal(runs[2][1], mask)


@pytest.mark.skipif(compiler.find_nvcc() is None, reason="nvcc not on PATH")
def test_cast_kernels_compile_for_many_dtype_pairs() -> None:
    """Cast lowers to one conversion kernel per pair (float16 through its header) and nvcc
    compiles them all; the registry graphs only cast float32 <-> float64."""
    kernels = []
    for src, dst in (("float32", "float16"), ("float16", "int32"), ("float64", "uint8"),
                     ("int64", "bool"), ("bool", "float32"), ("int8", "float64")):
        sym = S.Cast(S.var("x", dtype=src), dtype=dst)
        sch = sym.simple_bind(sg.cpu(), x=(3, 5))._train.schedule
        acts = [a for st in sch.steps for a in lowered(st, sch.shapes, sch.dtypes)[0]]
        assert [type(a).__name__ for a in acts].count("Kernel") >= 1, (src, dst)
        kernels += [a.kernel for a in acts if isinstance(a, Kernel)]
    cubin = compiler.run_nvcc(compiler.module_source(kernels), "sm_90", compiler.find_nvcc())
    assert all(k.name.encode() in cubin for k in kernels)


@pytest.mark.parametrize("cid", sorted(__import__("tests.ops.cases_cnn", fromlist=["x"])
                                       .CAP_GEOMETRIES))
def test_conv_act_pool_kernels_with_signed_inputs(cid: str, tmp_path: Path) -> None:
    """The fused conv-activation-pool kernels on signed data (windows wholly below zero for
    relu, padding cells) against the numpy reference: forward and parameter gradients."""
    from tests.ops.cases_cnn import CAP_GEOMETRIES
    shape, nf, k, s, p, act, win, nb = CAP_GEOMETRIES[cid]
    attrs = dict(kernel=k, stride=s, pad=p, num_filter=nf, no_bias=nb, act_type=act,
                 pool_kernel=win)
    ins = [S.var("x"), S.var("w")] + ([] if nb else [S.var("b")])
    y = S._conv_act_pool(*ins, **attrs)
    sym = S.Group([y, S._backward_conv_act_pool(S.var("dy"), *ins, **attrs)])
    shapes = {"x": shape, "w": (nf, shape[1]) + k, "b": (nf,), "dy": y.infer_shape(
        x=shape)[1][0]}
    sch = sym.simple_bind(sg.cpu(), grad_req="null", **{n: shapes[n]
                                                        for n in sym.list_arguments()}
                          )._train.schedule
    rng = np.random.default_rng(1)
    for step in sch.steps:
        xs = [rng.normal(size=sch.shapes[i]).astype(np.float32) for i in step.inputs]
        want = get_op(step.node.op).compute(step.node.attrs, xs, RunCtx(is_train=True))
        for g, w in zip(run_on_host(step, sch.shapes, sch.dtypes, xs, tmp_path), want):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5, err_msg=step.node.op)


@pytest.mark.parametrize("head", ["Convolution", "FullyConnected"])
def test_library_head_adds_bias_in_the_epilogue(head: str, tmp_path: Path) -> None:
    """A convolution or FullyConnected heading a fused group: the library call (here its
    im2col/GEMM fallback) writes the output, then one kernel adds the bias and applies the
    group's formula in place; equal to the numpy backend in float64."""
    rng = np.random.default_rng(3)
    if head == "Convolution":
        y = S.Convolution(S.var("x"), S.var("w"), S.var("b"), kernel=(3, 3), pad=(1, 1),
                          num_filter=4)
        shapes = {"x": (2, 3, 5, 6), "w": (4, 3, 3, 3), "b": (4,), "e": (2, 4, 5, 6)}
    else:
        y = S.FullyConnected(S.var("x"), S.var("w"), S.var("b"), num_hidden=5)
        shapes = {"x": (3, 7), "w": (5, 7), "b": (5,), "e": (3, 5)}
    sym = S.Activation(y, act_type="relu") * S.var("e") - 0.5
    values = {k: rng.normal(size=s) for k, s in shapes.items()}
    sch = sym.simple_bind(sg.cpu(), grad_req="null", **shapes)._infer.schedule
    (step,) = sch.steps
    assert step.node.attrs["head"][0] == head
    acts, _, _ = lowered(step, sch.shapes, sch.dtypes)
    kernels = [a for a in acts if isinstance(a, Kernel)]
    assert len(kernels) == (3 if head == "Convolution" else 1)  # im2col, swap, epilogue
    (got,) = run_on_host(step, sch.shapes, sch.dtypes,
                         [values[e.node.name] for e in step.node.inputs], tmp_path)
    exe = sym.bind(sg.cpu(), {k: sg.nd.array(v, sg.cpu(), np.float64) for k, v in values.items()})
    np.testing.assert_allclose(got, exe.forward()[0].asnumpy(), rtol=1e-5, atol=1e-5)
