"""``_multi_transpose_cast``'s GPU lowering (one kernel doing each input's converting gather in
its own range of the launch, as ``passes/batch_casts`` makes of AMP's weight casts) run on the
CPU (``host_run``) against numpy's transpose then astype per input; split into several kernels
past ``MAX_SEGMENTS``; it compiles for sm_90; the AMP ResNet-20 training step lowers its weight
casts to one such kernel each way (and the float32 step has none); on a GPU, against numpy."""
from __future__ import annotations

import types
from pathlib import Path

import numpy as np
import pytest

import symgraph as sg
from symgraph.runtime import compile as ex
from symgraph.runtime.cuda import compiler, lowering_views
from symgraph.runtime.cuda.actions import Kernel, flat_actions
from symgraph.runtime.cuda.kernels_views import fits_32_bits, render_multi_gather
from symgraph.core.dtypes import as_dtype
from symgraph.runtime.cuda.fuse_conv_pool import fuse_conv_pool
from symgraph.compiler.passes.channel_last import channel_last

from .host_run import host_compiler, lowered, run_on_host

S = sg.sym
# (input dtype, output dtype, input shape, axes): AMP's conversions, ranks 1 to 4
SEGMENTS = [("float32", "bfloat16", (4, 3, 3, 2), (0, 2, 3, 1)),
            ("bfloat16", "float32", (4, 3, 3, 2), (0, 3, 1, 2)),
            ("float16", "float32", (5, 7), (1, 0)),
            ("float32", "float16", (2, 3, 4), ()),
            ("bfloat16", "float16", (6,), (0,)),
            ("float32", "float32", (3, 1, 2), (2, 0, 1))]
needs_host = pytest.mark.skipif(host_compiler() is None, reason="g++ not on PATH")
needs_nvcc = pytest.mark.skipif(compiler.find_nvcc() is None, reason="nvcc not on PATH")


def _sym(segments: list):
    xs = [S.var(f"x{j}") for j in range(len(segments))]
    return S.Group(list(S._multi_transpose_cast(
        *xs, axes=tuple(s[3] for s in segments), dtypes=tuple(s[1] for s in segments))))


def _step(segments: list):
    types_ = {f"x{j}": as_dtype(s[0]) for j, s in enumerate(segments)}
    shapes = {f"x{j}": s[2] for j, s in enumerate(segments)}
    exe = _sym(segments).simple_bind(sg.cpu(), grad_req="null", type_dict=types_, **shapes)
    sch = exe._infer.schedule
    assert [st.node.op for st in sch.steps] == ["_multi_transpose_cast"]
    return sch.steps[0], sch.shapes, sch.dtypes


def _inputs(segments: list) -> list[np.ndarray]:
    rng = np.random.default_rng(3)
    return [(rng.normal(size=s[2]) * 3.0).astype(as_dtype(s[0])) for s in segments]


def _want(segments: list, xs: list) -> list[np.ndarray]:
    return [x.astype(np.float64).transpose(s[3] or None).astype(as_dtype(s[1]))
            for s, x in zip(segments, xs)]


def _kernels(segments: list) -> list:
    return [a for a in lowered(*_step(segments))[0] if isinstance(a, Kernel)]


@needs_host
@pytest.mark.parametrize("per_kernel", [64, 4, 1])
def test_converting_gathers_on_host(per_kernel: int, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(lowering_views, "MAX_SEGMENTS", per_kernel)
    step, shapes, dtypes = _step(SEGMENTS)
    assert len(_kernels(SEGMENTS)) == -(-len(SEGMENTS) // per_kernel)
    xs = _inputs(SEGMENTS)
    got = run_on_host(step, shapes, dtypes, xs, tmp_path)
    for j, (g, w) in enumerate(zip(got, _want(SEGMENTS, xs))):
        assert g.dtype == w.dtype, j
        np.testing.assert_array_equal(g.reshape(w.shape), w, err_msg=f"segment {j}")


def test_one_kernel_takes_every_output_then_every_input() -> None:
    (kern,) = _kernels(SEGMENTS)
    n = len(SEGMENTS)
    assert kern.kernel.n_ptr == 2 * n and len(kern.args) == 2 * n
    step = _step(SEGMENTS)[0]
    assert [r.index for r in kern.args] == list(step.outputs) + list(step.inputs)
    assert kern.n == sum(int(np.prod(s[2])) for s in SEGMENTS)


# a segment past 2^31 elements (not run: 8 GiB), and one the small one: 64- and 32-bit index
WIDE = render_multi_gather([((2 ** 30, 3), (1, 2 ** 30), 0, "bfloat16", "float32"),
                            ((3, 4), (4, 1), 0, "float32", "float16")])


def test_index_arithmetic_is_32_bit_where_it_fits() -> None:
    assert fits_32_bits((3, 4), (1, 3), 0) and fits_32_bits((2 ** 15, 2 ** 15), (1, 2 ** 15), 0)
    assert not fits_32_bits((2 ** 16, 2 ** 15), (1, 2 ** 16), 0)
    assert not fits_32_bits((5,), (-1,), 4)  # a reversed view: negative strides
    first, second = WIDE.source.split("} else if")
    assert "long long k" in first and "unsigned" not in first
    assert "unsigned k" in second and "LL;\n" not in second.split("unsigned k")[1]


def test_largest_segment_is_tested_first_and_an_empty_one_not_at_all() -> None:
    kern = render_multi_gather([((2, 3), (1, 2), 0, "float16", "float32"),
                                ((0, 3), (3, 1), 0, "float16", "float32"),
                                ((4, 5), (1, 4), 0, "float32", "float16")])
    body = kern.source.split("{\n", 2)[2]
    assert body.index("y2[k]") < body.index("y0[k]") and "y1[" not in body
    assert "if (i < 20LL)" in body and "if (i < 26LL)" in body


@needs_nvcc
def test_multi_gathers_compile_for_sm90(monkeypatch) -> None:
    kernels = {a.kernel.name: a.kernel for a in _kernels(SEGMENTS)}
    monkeypatch.setattr(lowering_views, "MAX_SEGMENTS", 4)
    kernels.update({a.kernel.name: a.kernel for a in _kernels(SEGMENTS)})
    assert len(kernels) == 3
    kernels[WIDE.name] = WIDE
    cubin = compiler.run_nvcc(compiler.module_source(list(kernels.values())), "sm_90",
                              compiler.find_nvcc())
    assert cubin[:4] == b"\x7fELF"


def _resnet_program(monkeypatch, bf16: bool) -> list:
    """Every action of the AMP (or float32) ResNet-20 training step's GPU program, lowered on
    the CPU with the CUDA backend's forward passes, as /tmp/s9/lowcount.py does."""
    from benchmarks.amp_step import RESNET_BATCH, narrow_symbol, resnet_symbol
    from benchmarks.common import NO_INPUT_GRADS
    from symgraph.runtime.cuda.plan import lower_schedule
    fake = types.SimpleNamespace(FORWARD_PIPELINE=(fuse_conv_pool, channel_last),
                                 compile=lambda schedule, ctx: lower_schedule(schedule, 132))
    monkeypatch.setitem(ex.BACKENDS, "cpu", lambda: fake)
    sym = resnet_symbol()
    if bf16:
        sym = narrow_symbol(sym)[0]
    reqs = {n: NO_INPUT_GRADS.get(n, "write") for n in sym.list_arguments()}
    stage = sym.simple_bind(sg.cpu(), grad_req=reqs, data=(RESNET_BATCH, 3, 32, 32))._train
    return [(st.node, a) for st, acts in zip(stage.schedule.steps, stage.program.actions)
            for a in flat_actions(acts)]


def test_amp_resnet20_step_has_two_multi_gathers(monkeypatch) -> None:
    acts = _resnet_program(monkeypatch, True)
    ops = [node.op for node, _ in acts]
    assert "_transpose_cast" not in ops
    multi = [(node, a) for node, a in acts if node.op == "_multi_transpose_cast"]
    assert len(multi) == 2 and all(isinstance(a, Kernel) for _, a in multi)
    # 21 convolution weights, the data, the dense weight and bias in; their 23 gradients out
    assert sorted(len(node.inputs) for node, _ in multi) == [23, 24]
    assert "amp_cast" in ops  # of the dense layer's output (read by the softmax): not a batch
    assert not [n for n, _ in _resnet_program(monkeypatch, False)
                if n.op in ("_transpose_cast", "_multi_transpose_cast")]
    if compiler.find_nvcc() is not None:
        source = compiler.module_source([a.kernel for _, a in multi])
        assert compiler.run_nvcc(source, "sm_90", compiler.find_nvcc())[:4] == b"\x7fELF"


@pytest.mark.gpu
def test_device_matches_numpy() -> None:
    types_ = {f"x{j}": as_dtype(s[0]) for j, s in enumerate(SEGMENTS)}
    shapes = {f"x{j}": s[2] for j, s in enumerate(SEGMENTS)}
    exe = _sym(SEGMENTS).simple_bind(sg.gpu(0), grad_req="null", type_dict=types_, **shapes)
    xs = _inputs(SEGMENTS)
    for j, x in enumerate(xs):
        exe.arg_dict[f"x{j}"][:] = x
    got = [o.asnumpy() for o in exe.forward()]
    for j, (g, w) in enumerate(zip(got, _want(SEGMENTS, xs))):
        assert g.dtype == w.dtype and g.shape == w.shape, j
        np.testing.assert_array_equal(g, w, err_msg=f"segment {j}")


def _gpu_amp_step(monkeypatch, batched: bool) -> tuple:
    """(steps' ops, outputs, gradients) of one AMP bfloat16 training step on the GPU of the
    small ResNet of tests/passes, with or without batch_casts in the pipeline."""
    from symgraph.compiler import passes
    from symgraph.compiler.passes.batch_casts import batch_casts
    from tests.passes.test_channel_last import SHAPES, small_resnet
    pipe = tuple(p for p in passes.OPTIMIZE_PIPELINE if batched or p is not batch_casts)
    monkeypatch.setattr(ex, "OPTIMIZE_PIPELINE", pipe)
    sym = sg.amp.convert_symbol(small_resnet(), target_dtype="bfloat16")
    reqs = {n: "null" if n in SHAPES else "write" for n in sym.list_arguments()}
    exe = sym.simple_bind(sg.gpu(0), grad_req=reqs, **SHAPES)
    rng = np.random.default_rng(0)
    for name, arr in exe.arg_dict.items():
        arr[:] = rng.uniform(-1, 1, arr.shape).astype(np.float32)
    exe.arg_dict["softmax_label"][:] = rng.integers(0, 3, 2).astype(np.float32)
    for name, arr in exe.aux_dict.items():
        arr[:] = np.full(arr.shape, 1.0 if name.endswith("var") else 0.0, np.float32)
    outs = [o.asnumpy().astype(np.float64) for o in exe.forward(is_train=True)]
    exe.backward()
    grads = {k: g.asnumpy().astype(np.float64) for k, g in exe.grad_dict.items()
             if g is not None}
    return [st.node.op for st in exe._train.schedule.steps], outs, grads


@pytest.mark.gpu
def test_amp_training_step_on_the_device_same_with_and_without_batching(monkeypatch) -> None:
    ops, outs, grads = _gpu_amp_step(monkeypatch, True)
    assert ops.count("_multi_transpose_cast") == 2 and "_transpose_cast" not in ops, ops
    ops2, outs2, grads2 = _gpu_amp_step(monkeypatch, False)
    assert "_multi_transpose_cast" not in ops2 and "_transpose_cast" in ops2
    for a, b in zip(outs, outs2):
        np.testing.assert_allclose(a, b, rtol=1e-2, atol=1e-3)
    assert grads.keys() == grads2.keys()
    for k in grads:  # cuDNN's weight gradients may sum in another order from run to run
        scale = np.abs(grads2[k]).max() + 1e-3
        np.testing.assert_allclose(grads[k] / scale, grads2[k] / scale, atol=2e-2, err_msg=k)
