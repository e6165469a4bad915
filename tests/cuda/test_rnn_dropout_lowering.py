"""Dropout inside the fused RNN on the GPU path (``cuda/lowering_rnn.py``), checked without and
with a GPU.

Without a GPU: the training ``RNN`` step (3 stacked bidirectional layers, p = 0.5) is lowered
and run on the host (``host_run``: its kernels as host C++, its GEMMs as loops) with a fixed
random key: the masks it writes to the hidden output have Dropout's law, repeat for the same
key and change with it, and the outputs equal the unrolled float64 reference
(``tests/ops/rnn_dropout_ref``) with those masks. The ``_backward_RNN`` step, fed those masks,
equals the numpy reference. In the inference program the dropout work sits in a Switch whose
inference branch only fills the masks with 1. Every new kernel compiles with nvcc.

With a GPU (``-m gpu``): inference equals the numpy backend; training repeats under
``sg.random.seed`` and differs from inference; its gradients equal the numpy backward fed the
same data and p = 0 where every mask is 1 (p tiny), and move when p is large.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import symgraph as sg
from symgraph.core.registry import RunCtx, get_op
from symgraph.runtime.cuda import compiler
from symgraph.runtime.cuda.actions import Fill, Kernel, Switch, flat_actions
from symgraph.runtime.cuda.plan import lower_schedule
from tests.ops.rnn_dropout_ref import unrolled

from .host_run import host_compiler, run_on_host

S = sg.sym
T, N, I, H = 4, 3, 5, 6
ATTRS = dict(state_size=H, num_layers=3, bidirectional=True, mode="lstm", p=0.5,
             state_outputs=True)
needs_gxx = pytest.mark.skipif(host_compiler() is None, reason="g++ not on PATH")


def _sym(**over: Any) -> Any:
    return S.RNN(S.var("data"), S.var("params"), S.var("state"), S.var("cell"), name="rnn",
                 **{**ATTRS, **over})


def _schedule(train: bool = True) -> Any:
    exe = _sym().simple_bind(sg.cpu(), data=(T, N, I))
    return (exe._train if train else exe._infer).schedule


def _step(sch: Any, op: str) -> Any:
    (st,) = [s for s in sch.steps if s.node.op == op]
    return st


def _forward_on_host(tmp_path: Path, key: int) -> tuple[Any, list, list]:
    sch = _schedule()
    st = _step(sch, "RNN")
    rng = np.random.default_rng(11)
    xs = [(rng.normal(size=sch.shapes[s]) * 0.5).astype(np.float32) for s in st.inputs]
    return sch, xs, run_on_host(st, sch.shapes, sch.dtypes, xs, tmp_path, keys=[key, key + 1])


@needs_gxx
def test_forward_on_host_drops_with_its_masks(tmp_path: Path) -> None:
    sch, xs, got = _forward_on_host(tmp_path, 12345)
    masks = got[-1]
    assert masks.shape == (2, T, N, 2 * H)
    assert set(np.unique(masks)) == {0.0, 2.0}
    assert abs((masks == 0).mean() - 0.5) < 0.1  # 576 draws: over 4 standard deviations
    want = unrolled(ATTRS, [x.astype(np.float64) for x in xs], masks.astype(np.float64))
    for k, (g, w) in enumerate(zip(got[:-1], want)):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5, err_msg=f"output {k}")
    np.testing.assert_array_equal(_forward_on_host(tmp_path, 12345)[2][-1], masks)
    assert not np.array_equal(_forward_on_host(tmp_path, 2 ** 40 + 3)[2][-1], masks)


@needs_gxx
def test_backward_on_host_uses_the_given_masks(tmp_path: Path) -> None:
    sch = _schedule()
    st = _step(sch, "_backward_RNN")
    rng = np.random.default_rng(3)
    xs = [(rng.normal(size=sch.shapes[s]) * 0.5).astype(np.float32) for s in st.inputs]
    xs[-1] = (rng.random(xs[-1].shape) >= 0.5).astype(np.float32) * 2.0  # the masks
    want = get_op("_backward_RNN").compute(st.node.attrs, [x.astype(np.float64) for x in xs],
                                           RunCtx(is_train=True))
    got = run_on_host(st, sch.shapes, sch.dtypes, xs, tmp_path)
    no_mask = get_op("_backward_RNN").compute(
        st.node.attrs, [x.astype(np.float64) for x in xs[:-1]] + [np.ones(xs[-1].shape)],
        RunCtx(is_train=True))
    assert not np.allclose(no_mask[0], want[0])  # the masks matter to the data gradient
    for k, (g, w) in enumerate(zip(got, want)):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5 * max(1.0, np.abs(w).max()),
                                   err_msg=f"gradient {k}")


def test_inference_branch_only_fills_masks_with_one() -> None:
    for train in (True, False):
        (acts,) = [a for a, st in zip(lower_schedule(_schedule(train), 132).actions,
                                      _schedule(train).steps) if st.node.op == "RNN"]
        switches = [a for a in acts if isinstance(a, Switch)]
        assert len(switches) == ATTRS["num_layers"]  # a draw per boundary, then the fill
        infer = [b for s in switches for b in s.infer]
        assert len(infer) == 1 and isinstance(infer[0], Fill) and infer[0].value == 1.0
        names = [b.kernel.name for s in switches for b in s.train if isinstance(b, Kernel)]
        assert sum("dropout_mask" in n for n in names) == ATTRS["num_layers"] - 1


@pytest.mark.skipif(compiler.find_nvcc() is None, reason="nvcc not on PATH")
def test_dropout_kernels_compile_for_sm90() -> None:
    kernels = {}
    for step in lower_schedule(_schedule(), 132).actions:
        for a in flat_actions(step):
            if isinstance(a, Kernel) and "dropout" in a.kernel.name:
                kernels[a.kernel.name] = a.kernel
    assert len(kernels) == 2  # the mask draw and the in-place multiply
    cubin = compiler.run_nvcc(compiler.module_source(list(kernels.values())), "sm_90",
                              compiler.find_nvcc())
    assert all(name.encode() in cubin for name in kernels)


def _gpu_run(ctx: Any, values: dict, p: float, seed: int, train: bool = True) -> list:
    sym = _sym(p=p)
    args = {k: sg.nd.array(v, ctx, np.float32) for k, v in values.items()}
    grads = {k: sg.nd.zeros(v.shape, ctx, np.float32) for k, v in values.items()}
    exe = sym.bind(ctx, args, args_grad=grads)
    sg.random.seed(seed)
    outs = exe.forward(is_train=train)
    if train:
        exe.backward([sg.nd.ones(o.shape, ctx) for o in outs])
    return [o.asnumpy() for o in outs] + ([g.asnumpy() for g in grads.values()] if train else [])


@pytest.mark.gpu
def test_gpu_dropout_inference_training_and_seed() -> None:
    shapes = _sym().infer_shape(data=(T, N, I))[0]
    rng = np.random.default_rng(2)
    values = {k: rng.normal(size=s) * 0.5 for k, s in zip(["data", "params", "state", "cell"],
                                                           shapes)}
    infer = _gpu_run(sg.gpu(0), values, 0.5, 1, train=False)
    for g, w in zip(infer, _gpu_run(sg.cpu(), values, 0.5, 1, train=False)):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)
    a, b = _gpu_run(sg.gpu(0), values, 0.5, 7), _gpu_run(sg.gpu(0), values, 0.5, 7)
    for g, w in zip(a, b):
        np.testing.assert_array_equal(g, w)
    assert not np.allclose(a[0], infer[0])
    assert not np.allclose(_gpu_run(sg.gpu(0), values, 0.5, 8)[0], a[0])
    # p tiny: every mask is 1/(1-p) ~ 1, so training equals the numpy backend's p = 0
    tiny = _gpu_run(sg.gpu(0), values, 1e-7, 7)
    for g, w in zip(tiny, _gpu_run(sg.cpu(), values, 0.0, 7)):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5 * max(1.0, np.abs(w).max()))
