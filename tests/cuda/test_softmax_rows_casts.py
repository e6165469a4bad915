"""The row kernels of attention's softmax with their casts absorbed (``passes/absorb_casts``):
``_softmax_rows`` reading narrow scores, ``_softmax_backward`` reading a narrow ograd and
storing narrow. The CUDA program of a small graph is lowered on the CPU; its two row kernels
run on the host with warps of real threads (block_run), each beside the float32 kernel the
graph without the pass would run (its input widened, its output narrowed by numpy's astype,
both exact or rounding as the casts do): bit for bit equal, and near a float64 reference.
They compile with nvcc for sm_90 in bfloat16 and float16. The GPU test (marked ``gpu``)
compares the device with the CPU."""
from __future__ import annotations

from math import prod
from pathlib import Path

import numpy as np
import pytest

import symgraph as sg
from benchmarks.ir_fingerprint import cuda_lowering
from symgraph.core.dtypes import as_dtype
from symgraph.runtime.cuda import compiler
from symgraph.runtime.cuda.actions import Kernel, flat_actions
from symgraph.runtime.cuda.kernels_dense import render_softmax
from symgraph.runtime.cuda.kernels_attention import render_softmax_backward

from .block_run import run_threaded
from .host_run import host_compiler

S = sg.sym
SHAPE = (3, 4, 40)  # rows of 40: a partial second column of lanes


def _symbol(narrow: str):
    """Narrow scores -> float32 row softmax -> a narrow copy for a GEMM; the gradient from a
    narrow ograd, stored narrow (attention's casts, each absorbable but the GEMM's)."""
    x, g, v = S.negative(S.var("x")), S.negative(S.var("g")), S.var("v")
    y = S._softmax_rows(S.amp_cast(x, dtype="float32"))
    dx = S.amp_cast(S._softmax_backward(y, S.amp_cast(g, dtype="float32")), dtype=narrow)
    return S.Group([S.batch_dot(S.amp_cast(y, dtype=narrow), v), dx])


def _row_kernels(narrow: str) -> dict[str, Kernel]:
    """op -> the kernel its step launches in the CUDA program (lowered on the CPU)."""
    sym = _symbol(narrow)
    t = as_dtype(narrow)
    with cuda_lowering():
        stage = sym.simple_bind(sg.cpu(), grad_req="null", type_dict={"x": t, "g": t, "v": t},
                                x=SHAPE, g=SHAPE, v=(3, 40, 2))._infer
    found = {}
    for step, acts in zip(stage.schedule.steps, stage.program.actions):
        if step.node.op in ("_softmax_rows", "_softmax_backward"):
            (found[step.node.op],) = [a for a in flat_actions(acts) if isinstance(a, Kernel)]
    return found


@pytest.mark.skipif(host_compiler() is None, reason="g++ not on PATH")
@pytest.mark.parametrize("narrow", ["bfloat16", "float16"])
def test_row_kernels_read_and_write_narrow_on_host(narrow: str, tmp_path: Path) -> None:
    kern = _row_kernels(narrow)
    soft, back = kern["_softmax_rows"].kernel, kern["_softmax_backward"].kernel
    c_narrow = "__nv_bfloat16" if narrow == "bfloat16" else "__half"
    assert f"const {c_narrow}*" in soft.source and "float* __restrict__ y" in soft.source
    assert f"{c_narrow}* __restrict__ dx" in back.source
    assert f"const {c_narrow}* __restrict__ dy" in back.source
    rows, k = prod(SHAPE[:-1]), SHAPE[-1]
    grid = rows  # a block of one warp a row (the host's barriers are block-wide)
    wide_soft = render_softmax("softmax_rows", rows, k, 1, False, 1.0, "float32", "float32")
    wide_back = render_softmax_backward("softmax_backward", rows, k, "float32")
    nd = as_dtype(narrow)
    rng = np.random.default_rng(7)
    x = (rng.normal(size=SHAPE) * 3).astype(nd)
    g = rng.normal(size=SHAPE).astype(nd)
    p = np.exp(rng.normal(size=SHAPE))
    p = (p / p.sum(-1, keepdims=True)).astype(np.float32)
    out = run_threaded(
        [(soft, grid, 32, ["y", "x"]), (wide_soft, grid, 32, ["yw", "xw"]),
         (back, grid, 32, ["dx", "p", "g"]), (wide_back, grid, 32, ["dxw", "p", "gw"])],
        {"x": x, "xw": x.astype(np.float32), "g": g, "gw": g.astype(np.float32), "p": p},
        {"y": (x.size, np.float32), "yw": (x.size, np.float32), "dx": (x.size, nd),
         "dxw": (x.size, np.float32)}, tmp_path)
    np.testing.assert_array_equal(out["y"], out["yw"])  # widening is exact
    np.testing.assert_array_equal(out["dx"], out["dxw"].astype(nd))  # one rounding either way
    x64, g64, p64 = (a.astype(np.float64).reshape(rows, k) for a in (x, g, p))
    z = np.exp(x64 - x64.max(-1, keepdims=True))
    np.testing.assert_allclose(out["y"].reshape(rows, k), z / z.sum(-1, keepdims=True),
                               rtol=1e-5, atol=1e-7)
    want = p64 * (g64 - (g64 * p64).sum(-1, keepdims=True))
    np.testing.assert_allclose(out["dx"].astype(np.float64).reshape(rows, k), want,
                               rtol=1e-2, atol=1e-2 * np.abs(want).max())


@pytest.mark.skipif(compiler.find_nvcc() is None, reason="nvcc not on PATH")
def test_narrow_row_kernels_compile_for_sm90() -> None:
    """Narrow scores -> float32 softmax; float32 prob, narrow ograd -> narrow gradient (rows
    in registers and rows read twice), for bfloat16 and float16."""
    kernels = []
    for t in ("bfloat16", "float16"):
        kernels.append(render_softmax("softmax_rows", 96, 128, 1, False, 1.0, t, "float32"))
        kernels += [render_softmax_backward("softmax_backward", 96, k, "float32", t, t)
                    for k in (128, 300)]
    cubin = compiler.run_nvcc(compiler.module_source(kernels), "sm_90", compiler.find_nvcc())
    assert all(k.name.encode() in cubin for k in kernels)


@pytest.mark.gpu
@pytest.mark.parametrize("narrow", ["bfloat16", "float16"])
def test_row_ops_with_casts_on_gpu_match_cpu(narrow: str) -> None:
    """The graph's outputs on the device (casts absorbed by the row kernels) against the CPU."""
    t = as_dtype(narrow)
    sym = _symbol(narrow)
    rng = np.random.default_rng(8)
    shapes = {"x": SHAPE, "g": SHAPE, "v": (3, 40, 2)}
    vals = {k: rng.normal(size=s).astype(t) for k, s in shapes.items()}
    outs = []
    for ctx in (sg.cpu(), sg.gpu(0)):
        exe = sym.simple_bind(ctx, grad_req="null", type_dict={k: t for k in shapes}, **shapes)
        for k in vals:
            exe.arg_dict[k][:] = vals[k]
        outs.append([o.asnumpy().astype(np.float64) for o in exe.forward()])
    for got, want in zip(outs[1], outs[0]):
        np.testing.assert_allclose(got, want, rtol=2e-2, atol=2e-2 * np.abs(want).max())
