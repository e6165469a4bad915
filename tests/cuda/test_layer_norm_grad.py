"""The ``_backward_LayerNorm`` kernel without a GPU: it compiles with nvcc for sm_90 in every
float dtype, and runs on the CPU with one thread (``host_run``, through the lowering) and with
real blocks of threads over several blocks (``block_run``: the shared-memory sums, the
partials of dgamma/dbeta and the last block's fold), against float64 numpy written from the
formulas. GPU tests (marked ``gpu``) run LayerNorm forward and backward on the device."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import symgraph as sg
from symgraph.runtime.cuda import compiler
from symgraph.runtime.cuda.kernels_layer_norm_grad import (render_layer_norm_backward,
                                                           render_layer_norm_backward_warps,
                                                           render_layer_norm_fold)

from .block_run import run_threaded
from .host_run import host_compiler, run_on_host

S = sg.sym
needs_gxx = pytest.mark.skipif(host_compiler() is None, reason="g++ not on PATH")
# id: (data shape, axis)
SHAPES = {"last": ((3, 4, 40), -1), "middle": ((2, 7, 3), 1), "one_row": ((1, 5), -1)}


def _inputs(shape: tuple, axis: int, rng: np.random.Generator) -> list[np.ndarray]:
    """dy, x, gamma, and the mean and std (eps 1e-5) of x along ``axis``, float64."""
    x = rng.normal(size=shape) * 2 + 1
    dy = rng.normal(size=shape)
    gamma = rng.uniform(0.5, 1.5, size=shape[axis])
    mean = x.mean(axis=axis, keepdims=True)
    std = np.sqrt(x.var(axis=axis, keepdims=True) + 1e-5)
    return [dy, x, gamma, mean, std]


def _reference(dy, x, gamma, mean, std, axis: int) -> list[np.ndarray]:
    """y = xhat * gamma + beta: dx = gamma/std (dy - mean(dy) ...) written per element."""
    ax = axis % x.ndim
    shape = [1] * x.ndim
    shape[ax] = -1
    xhat = (x - mean) / std
    gy = dy * gamma.reshape(shape)
    dx = (gy - gy.mean(axis=ax, keepdims=True)
          - xhat * (gy * xhat).mean(axis=ax, keepdims=True)) / std
    others = tuple(i for i in range(x.ndim) if i != ax)
    return [dx, (dy * xhat).sum(axis=others), dy.sum(axis=others)]


def _check(got: list, want: list, rtol: float = 2e-5) -> None:
    for k, (g, w) in enumerate(zip(got, want)):
        np.testing.assert_allclose(np.asarray(g, np.float64).reshape(w.shape), w, rtol=rtol,
                                   atol=rtol, err_msg=f"output {k}")


@needs_gxx
@pytest.mark.parametrize("cid", sorted(SHAPES))
def test_one_thread_on_host_through_the_lowering(cid: str, tmp_path: Path) -> None:
    shape, axis = SHAPES[cid]
    xs = _inputs(shape, axis, np.random.default_rng(3))
    names = ["dy", "x", "g", "m", "s"]
    sym = S._backward_LayerNorm(*[S.var(n) for n in names], axis=axis)
    exe = sym.simple_bind(sg.cpu(), grad_req="null",
                          **{n: v.shape for n, v in zip(names, xs)})
    sch = exe._infer.schedule
    (step,) = sch.steps
    got = run_on_host(step, sch.shapes, sch.dtypes, [v.astype(np.float32) for v in xs],
                      tmp_path)
    _check(got, _reference(*xs, axis))


@needs_gxx
def test_blocks_of_threads_on_host(tmp_path: Path) -> None:
    """Rows of 40 over (grid, block) = (3, 8), (2, 7), (4, 32) in one program: several values
    per thread, threads past the row's end, rows spread over the blocks, whose partials the
    last block folds, leaving the count of blocks done at zero."""
    outer, count, inner = 3, 40, 2
    xs = _inputs((outer, count, inner), 1, np.random.default_rng(5))
    ins = {k: v.astype(np.float32) for k, v in zip(["dy", "x", "gamma", "mean", "std"], xs)}
    f32, launches, outs = np.dtype(np.float32), [], {}
    for k, (grid, block) in enumerate([(3, 8), (2, 7), (4, 32)]):
        kern = render_layer_norm_backward(outer, count, inner, -(-count // block))
        mine = {f"dx{k}": (outer * count * inner, f32), f"dgamma{k}": (count, f32),
                f"dbeta{k}": (count, f32), f"part{k}": (2 * grid * count, f32),
                f"done{k}": (1, np.dtype(np.uint32))}
        outs.update(mine)
        launches.append((kern, grid, block, list(mine) + list(ins)))
    got = run_threaded(launches, ins, outs, tmp_path)
    for k in range(3):
        _check([got[f"dx{k}"], got[f"dgamma{k}"], got[f"dbeta{k}"]], _reference(*xs, 1))
        assert got[f"done{k}"][0] == 0


@needs_gxx
@pytest.mark.parametrize("count", [40, 70])
def test_a_row_per_warp_then_the_fold_with_blocks_of_warps_on_host(count: int,
                                                                   tmp_path: Path) -> None:
    """The warp-per-row kernel writing 3 partial rows over (grid, block) = (2, 32), (3, 64),
    (2, 96) (blocks taking several partial rows, lanes holding 2-3 values, the shuffled row
    sums, warps past the last row, the warps' column sums met in shared memory), then the
    fold of the partials over (grid, block) = (1, 64), (2, 32), (3, 256): warps taking every
    n-th partial, blocks past the last column."""
    outer, inner = 3, 3
    xs = _inputs((outer, count, inner), 1, np.random.default_rng(6))
    ins = {k: v.astype(np.float32) for k, v in zip(["dy", "x", "gamma", "mean", "std"], xs)}
    f32, launches, outs = np.dtype(np.float32), [], {}
    for k, ((grid, block), fold) in enumerate(zip([(2, 32), (3, 64), (2, 96)],
                                                  [(1, 64), (2, 32), (3, 256)])):
        rows = render_layer_norm_backward_warps(outer, count, inner, 3)  # 3 partial rows
        mine = {f"dx{k}": (outer * count * inner, f32), f"dgamma{k}": (count, f32),
                f"dbeta{k}": (count, f32), f"part{k}": (2 * 3 * count, f32)}
        outs.update(mine)
        launches.append((rows, grid, block, [f"dx{k}", f"part{k}", *ins]))
        launches.append((render_layer_norm_fold(count, 3), *fold,
                         [f"dgamma{k}", f"dbeta{k}", f"part{k}"]))
    got = run_threaded(launches, ins, outs, tmp_path)
    for k in range(3):
        _check([got[f"dx{k}"], got[f"dgamma{k}"], got[f"dbeta{k}"]], _reference(*xs, 1))


@pytest.mark.skipif(compiler.find_nvcc() is None, reason="nvcc not on PATH")
def test_kernels_compile_for_sm90_in_every_float_dtype() -> None:
    kernels = []
    for dt, p_t in (("float32", "float32"), ("float16", "float32"), ("bfloat16", "float32"),
                    ("float16", "float16"), ("bfloat16", "bfloat16")):
        kernels.append(render_layer_norm_backward(64, 768, 1, 3, dt, p_t, dt))
        kernels.append(render_layer_norm_backward(2, 7, 12, 1, dt, p_t, dt))
        kernels.append(render_layer_norm_backward_warps(4096, 768, 1, 264, dt, p_t, dt))
        kernels.append(render_layer_norm_backward_warps(2, 7, 12, 2, dt, p_t, dt))
        kernels.append(render_layer_norm_fold(768, 264, p_t))
    kernels.append(render_layer_norm_backward(8, 4096, 1, 16, "bfloat16", "float32", "bfloat16"))
    cubin = compiler.run_nvcc(compiler.module_source(kernels), "sm_90", compiler.find_nvcc())
    assert all(k.name.encode() in cubin for k in kernels)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("cid", sorted(SHAPES) + ["wide"])
def test_layer_norm_gradients_on_gpu(cid: str, dtype: str) -> None:
    shape, axis = SHAPES.get(cid, ((6, 3000), -1))
    rng = np.random.default_rng(7)
    x = (rng.normal(size=shape) * 2 + 1).astype(np.float32)
    dy = rng.normal(size=shape).astype(np.float32)
    gamma = rng.uniform(0.5, 1.5, size=shape[axis]).astype(np.float32)
    # LayerNorm takes gamma and beta in the data's dtype (as MXNet does)
    xv, g, b = (sg.nd.array(v, sg.gpu(0)).astype(dtype)
                for v in (x, gamma, np.zeros_like(gamma)))
    for v in (xv, g, b):
        v.attach_grad()
    with sg.autograd.record():
        y = sg.nd.LayerNorm(xv, g, b, axis=axis)
    y.backward(sg.nd.array(dy, sg.gpu(0)).astype(dtype))
    x64 = xv.asnumpy().astype(np.float64)
    mean = x64.mean(axis=axis, keepdims=True)
    std = np.sqrt(x64.var(axis=axis, keepdims=True) + 1e-5)
    dy64 = sg.nd.array(dy).astype(dtype).asnumpy().astype(np.float64)
    want = _reference(dy64, x64, g.asnumpy().astype(np.float64), mean, std, axis)
    tol = 2e-4 if dtype == "float32" else 2e-2
    _check([xv.grad.asnumpy(), g.grad.asnumpy(), b.grad.asnumpy()], want, tol)
