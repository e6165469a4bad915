"""A BatchNorm heading the fused group that reads it (``passes/fuse_bn_epilogue``) on the GPU
path: the group's formula is applied where BatchNorm stores its output, in the channel-last
one-kernel form (run on the host against the node's numpy reference in float64, float32 and
bfloat16 data) and in the NCHW normalisation kernel (lowered: no separate kernel for the
group); on the GPU, a training step against the numpy backend."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import symgraph as sg
from symgraph.runtime.cuda.actions import Kernel
from symgraph.core.registry import RunCtx, get_op

from .host_run import host_compiler, lowered, run_on_host
from .narrow import NARROW

S = sg.sym
needs_gxx = pytest.mark.skipif(host_compiler() is None, reason="g++ not on PATH")


def _net(axis: int, act: str = "relu"):
    """layer -> BatchNorm -> + shortcut -> ``act`` -> dense -> loss (no head gradient)."""
    x = S.var("x")
    if axis == 1:
        h = S.Convolution(x, num_filter=3, kernel=(3, 3), pad=(1, 1), no_bias=True, name="c")
    else:
        h = S.FullyConnected(x, num_hidden=6, no_bias=True, name="f")
    y = S.Activation(S.BatchNorm(h, fix_gamma=False, axis=axis, name="bn") + x, act_type=act)
    return S.MakeLoss(S.sum(S.FullyConnected(y, num_hidden=2, name="head")))


def _bn_step(sym, dtype: str, **shapes):
    types = {"x": NARROW.get(dtype, np.dtype(dtype))}
    exe = sym.simple_bind(sg.cpu(), type_dict=types, **shapes)
    sch = exe._train.schedule
    step = next(st for st in sch.steps if st.node.op == "_fused" and st.node.attrs["head"]
                and st.node.attrs["head"][0] == "BatchNorm")
    return sch, step


@needs_gxx
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_channel_last_epilogue_on_host(dtype: str, tmp_path: Path) -> None:
    """(N, C) data: the one-kernel BatchNorm stores relu(y + shortcut) and the statistics."""
    sch, step = _bn_step(_net(-1), dtype, x=(37, 6))
    acts, _, _ = lowered(step, sch.shapes, sch.dtypes)
    kernels = [a.kernel.name for a in acts if isinstance(a, Kernel)]
    assert len(kernels) == 1 and "bn_cols_train" in kernels[0], kernels
    rng = np.random.default_rng(5)
    xs = []
    for s in step.inputs:
        v = rng.normal(size=sch.shapes[s]) * 2 + 1
        xs.append(np.abs(v).astype(sch.dtypes[s]) if len(xs) == 4 else v.astype(sch.dtypes[s]))
    got = run_on_host(step, sch.shapes, sch.dtypes, xs, tmp_path)
    want = get_op("_fused").compute(step.node.attrs, [np.asarray(v, np.float64) for v in xs],
                                    RunCtx(is_train=True))
    rtol = {"float32": 1e-5, "bfloat16": 2e-2}
    for k, (g, w, slot) in enumerate(zip(got, want, step.outputs)):
        assert g.dtype == sch.dtypes[slot]
        w = np.asarray(w, np.float64).reshape(g.shape)
        t = rtol[np.dtype(g.dtype).name] if k == 0 else 1e-5
        np.testing.assert_allclose(np.asarray(g, np.float64), w, rtol=t,
                                   atol=t * max(1.0, float(np.abs(w).max())), err_msg=f"out {k}")
    assert (got[0] == 0).any() and (got[0] > 0).any()  # the ReLU cut some, kept some


def test_nchw_epilogue_is_in_the_normalisation_kernel() -> None:
    """NCHW data: the statistics' two kernels and one elementwise kernel that normalises and
    applies the group's formula (no kernel of its own for the add and the ReLU)."""
    sch, step = _bn_step(_net(1), "float32", x=(4, 3, 5, 5))
    acts, _, _ = lowered(step, sch.shapes, sch.dtypes)
    names = [a.kernel.name for a in acts if isinstance(a, Kernel)]
    assert len(names) == 3 and sum("bn_stats" in n for n in names) == 2, names


def _gpu_run(ctx, sym, shapes: dict, dtype, values: dict) -> tuple:
    exe = sym.simple_bind(ctx, type_dict={"x": dtype}, **shapes)
    for k, v in values.items():
        exe.arg_dict[k][:] = v
    exe.forward(is_train=True)
    exe.backward()
    grads = {k: g.asnumpy().astype(np.float32) for k, g in exe.grad_dict.items()}
    aux = {k: a.asnumpy().astype(np.float32) for k, a in exe.aux_dict.items()}
    return grads, aux


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("axis,shape", [(1, (8, 3, 6, 6)), (-1, (64, 6))])
def test_gpu_step_matches_numpy(axis: int, shape: tuple, dtype: str) -> None:
    """Gradients and moving statistics of a training step against the numpy backend in
    float32 on the same (rounded) values. bfloat16 takes tanh for its epilogue: with a ReLU,
    values within a rounding of 0 are kept by one and cut by the other, and the gradients that
    sum over them differ by whole terms (measured on the H100), where a smooth formula differs
    by roundings only."""
    sym = _net(axis, "relu" if dtype == "float32" else "tanh")
    dt = NARROW.get(dtype, np.dtype(dtype))
    rng = np.random.default_rng(2)
    exe = sym.simple_bind(sg.cpu(), x=shape)
    values = {k: (rng.normal(size=a.shape) * 0.5).astype(dt).astype(np.float32)
              for k, a in exe.arg_dict.items()}
    want = _gpu_run(sg.cpu(), sym, {"x": shape}, np.float32, values)
    got = _gpu_run(sg.gpu(0), sym, {"x": shape}, dt, values)
    tol = 1e-3 if dtype == "float32" else 5e-2
    for part_got, part_want in zip(got, want):
        for k, w in part_want.items():
            scale = max(1.0, float(np.abs(w).max()))
            np.testing.assert_allclose(part_got[k], w, rtol=tol, atol=tol * scale, err_msg=k)
