"""Attention's head layouts on the CUDA path (``passes/fold_heads``, ``lowering_attention``)
without a GPU: each ``_batch_dot_heads`` lowers to one :class:`HeadGemm` whose matrix
addresses, replayed in numpy, give the op's independent float64 reference; the launch closure
uploads exactly those pointer arrays (mock pycuda); the softmax-gradient row kernel runs on
the host with warps of real threads and compiles with nvcc in every float dtype; the encoder's
CUDA program loses its transposes and the softmax gradient's sum (``encoder_step --count``).
GPU tests (marked ``gpu``) compare the device with the CPU."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import symgraph as sg
from benchmarks.encoder_step import QUICK, count_steps, encoder_symbol
from symgraph.runtime.cuda import compiler
from symgraph.runtime.cuda.actions import HeadGemm
from symgraph.runtime.cuda.kernels_dense import render_softmax
from symgraph.runtime.cuda.kernels_attention import REGISTER_ROW, render_softmax_backward
from symgraph.runtime.cuda.lowering_attention import head_calls, head_pointers
from tests.ops.cases_attention_heads import B, D, H, T, _heads_ref

from .block_run import run_threaded
from .host_run import host_compiler, lowered
from .mock_pycuda import run_with_mock_pycuda

S = sg.sym
a, b = S.var("a"), S.var("b")
# (transpose_a, transpose_b, split_lhs, split_rhs, split_out): every form the attention's
# forward and gradients take, and the transposes each way
FORMS = [(False, True, True, True, False), (False, False, False, True, True),
         (False, False, True, False, False), (True, False, False, True, True),
         (True, False, True, True, False), (False, True, True, False, True),
         (True, True, True, True, True), (True, True, False, False, False)]


def _operand(split: bool, rows: int, cols: int) -> tuple:
    return (B, rows, H, cols) if split else (B * H, rows, cols)


def _form_shapes(ta: bool, tb: bool, sa: bool, sb: bool) -> tuple[tuple, tuple]:
    m, k, n = T, D, T + 1
    return (_operand(sa, *((k, m) if ta else (m, k))),
            _operand(sb, *((n, k) if tb else (k, n))))


def _head_gemm(form: tuple, alpha: float) -> tuple[HeadGemm, tuple, tuple]:
    ta, tb, sa, sb, so = form
    sha, shb = _form_shapes(ta, tb, sa, sb)
    sym = S._batch_dot_heads(a, b, transpose_a=ta, transpose_b=tb, heads=H, split_lhs=sa,
                             split_rhs=sb, split_out=so, alpha=alpha)
    exe = sym.simple_bind(sg.cpu(), grad_req="null", a=sha, b=shb)
    sch = exe._infer.schedule
    (step,) = sch.steps
    (act,) = lowered(step, sch.shapes, sch.dtypes)[0]
    return act, sha, shb


def _matrix_offsets(act: HeadGemm, mode: str) -> list[tuple[int, int, int]]:
    """Element offsets of each matrix (A, B, C) as the launch issues them in ``mode``: the
    pointer arrays, or the strided calls (bases 0, itemsize 1)."""
    calls = head_calls(act, (0, 0, 0), 1, mode == "loop")
    if mode == "strided":
        assert calls is not None and len(calls) == 1
    if calls is None:
        return [tuple(int(p[i]) for p in head_pointers(act, (0, 0, 0), 1))
                for i in range(act.outer * act.heads)]
    return [tuple(base + i * st for base, st in zip(bases, steps))
            for bases, steps, count in calls for i in range(count)]


def _replay(act: HeadGemm, offsets: list, xa: np.ndarray, xb: np.ndarray,
            out_size: int) -> np.ndarray:
    """C as the GEMMs write it: each matrix of each operand at its element offset, rows
    ``ld`` apart (cuBLAS's view, in numpy)."""
    c = np.full(out_size, np.nan)

    def mat(flat: np.ndarray, off: int, rows: int, cols: int, ld: int) -> np.ndarray:
        return np.stack([flat[off + r * ld: off + r * ld + cols] for r in range(rows)])
    g = act.gemm
    ra, ca = (g.k, g.m) if g.trans_a else (g.m, g.k)
    rb, cb = (g.n, g.k) if g.trans_b else (g.k, g.n)
    for oa, ob, oc in offsets:
        ma = mat(xa.ravel(), oa, ra, ca, act.lds[0])
        mb = mat(xb.ravel(), ob, rb, cb, act.lds[1])
        prod = act.alpha * (ma.T if g.trans_a else ma) @ (mb.T if g.trans_b else mb)
        for r in range(g.m):
            start = oc + r * act.lds[2]
            assert np.isnan(c[start:start + g.n]).all(), "two matrices write one element"
            c[start:start + g.n] = prod[r]
    return c


@pytest.mark.parametrize("mode", ["pointers", "loop"])
@pytest.mark.parametrize("form", FORMS, ids=lambda f: "".join("tTsSo"[i] if v else "-"
                                                             for i, v in enumerate(f)))
def test_head_gemm_addresses_give_the_reference(form: tuple, mode: str) -> None:
    """Both launch modes (SYMGRAPH_HEAD_GEMM) of every form: all B*H matrices, each once."""
    act, sha, shb = _head_gemm(form, 0.25)
    assert isinstance(act, HeadGemm) and act.outer * act.heads == B * H
    offsets = _matrix_offsets(act, mode)
    assert len(offsets) == B * H
    if mode == "loop":  # a call per head or batch row; one when no layout is split
        assert len(head_calls(act, (0, 0, 0), 1, True)) == (min(B, H) if any(form[2:]) else 1)
    rng = np.random.default_rng(3)
    xa, xb = rng.normal(size=sha), rng.normal(size=shb)
    ta, tb, sa, sb, so = form
    want = _heads_ref(xa, xb, ta, tb, sa, sb, so, alpha=0.25)
    got = _replay(act, offsets, xa, xb, want.size)
    np.testing.assert_allclose(got.reshape(want.shape), want, rtol=1e-12, atol=1e-12)


def test_unsplit_heads_are_one_strided_call() -> None:
    """No split operand (only the scale folded): one strided-batched call, no pointers."""
    act, sha, shb = _head_gemm((False, True, False, False, False), 0.5)
    rng = np.random.default_rng(4)
    xa, xb = rng.normal(size=sha), rng.normal(size=shb)
    got = _replay(act, _matrix_offsets(act, "strided"), xa, xb, B * H * T * (T + 1))
    want = _heads_ref(xa, xb, tb=True, alpha=0.5)
    np.testing.assert_allclose(got.reshape(want.shape), want, rtol=1e-12)


MOCK_SCRIPT = r'''
import numpy as np
from symgraph.core import config
from symgraph.runtime.cuda import cublas, launches
from symgraph.runtime.cuda.actions import Gemm, HeadGemm, Ref
batched, strided, uploads = [], [], []
drv.to_device = lambda arr: uploads.append(arr.copy()) or 1000 + len(uploads)
cublas.gemm_batched = lambda *args: batched.append(args)
cublas.gemm_strided = lambda *args: strided.append(args)
prog = mock.MagicMock()
prog.ptr = lambda r, env: {0: 1 << 20, 1: 2 << 20, 2: 3 << 20}[r.index]
prog.head_pointers = {}
refs = (Ref("slot", 0), Ref("slot", 1), Ref("slot", 2))
# (B=2, T=4, H=3, D=8) split q and k, scores (6, 4, 4): bfloat16, 2 bytes an element
act = HeadGemm(Gemm(False, True, 4, 4, 8, *refs, batch=6, dtype="bfloat16"), (24, 24, 4),
               ((96, 8), (96, 8), (48, 16)), 3, 0.5)
fn = launches.LAUNCHES[HeadGemm](prog, act, None)
assert len(uploads) == 3 and not batched  # built once, when the closure is made
fn(None); fn(None)
assert len(uploads) == 3 and len(batched) == 2 and not strided
launches.LAUNCHES[HeadGemm](prog, act, None)(None)  # the same buffers: the same arrays
assert len(uploads) == 3 and len(batched) == 3
args = batched[0]
assert args[2:10] == (False, True, 4, 4, 8, 1001, 1002, 1003), args
assert args[10:] == ((24, 24, 4), 6, 0.5, "bfloat16"), args
assert uploads[0].tolist() == [(1 << 20) + 2 * (96 * b + 8 * h) for b in range(2)
                               for h in range(3)], uploads[0]
assert uploads[2].tolist() == [(3 << 20) + 2 * (48 * b + 16 * h) for b in range(2)
                               for h in range(3)]
with config.override("SYMGRAPH_HEAD_GEMM", "loop"):
    launches.LAUNCHES[HeadGemm](prog, act, None)(None)
assert len(uploads) == 3 and len(strided) == 2  # H=3 > B=2: a call per batch row
assert strided[1][7:] == ((1 << 20) + 2 * 96, (2 << 20) + 2 * 96, (3 << 20) + 2 * 48,
                          (24, 24, 4), (8, 8, 16), 3, 0.5, "bfloat16"), strided[1]
print("OK")
'''


def test_launch_uploads_the_pointer_arrays_once() -> None:
    run_with_mock_pycuda(MOCK_SCRIPT)


def _softmax_backward_ref(y: np.ndarray, dy: np.ndarray) -> np.ndarray:
    return y * (dy - (y * dy).sum(-1, keepdims=True))


@pytest.mark.skipif(host_compiler() is None, reason="g++ not on PATH")
@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
@pytest.mark.parametrize("dtype,k", [("float32", 77), ("bfloat16", 40), ("float32", 300)])
def test_softmax_backward_kernel_on_host_warps(dtype: str, k: int, log: bool,
                                               tmp_path: Path) -> None:
    """Host threads (block_run): a warp a row, the shuffle sum over rows held in registers, a
    partial last column of lanes (77, 40); a block of two warps a row, read twice (300 >
    REGISTER_ROW), the warps' sums met in shared memory; float accumulation of bfloat16 data;
    softmax's and log_softmax's forms."""
    import ml_dtypes
    nd = np.dtype(ml_dtypes.bfloat16) if dtype == "bfloat16" else np.dtype(np.float32)
    assert 77 <= REGISTER_ROW < 300
    rows, rng = 5, np.random.default_rng(2)
    z = np.exp(rng.normal(size=(rows, k)))
    p = z / z.sum(-1, keepdims=True)
    y, dy = (np.log(p) if log else p).astype(nd), rng.normal(size=(rows, k)).astype(nd)
    kern = render_softmax_backward("softmax_backward", rows, k, dtype, log=log)
    block = 64 if k > REGISTER_ROW else 32  # (grid = rows either way)
    got = run_threaded([(kern, rows, block, ["dx", "y", "dy"])], {"y": y, "dy": dy},
                       {"dx": (rows * k, nd)}, tmp_path)["dx"]
    y64, dy64 = y.astype(np.float64), dy.astype(np.float64)
    want = (dy64 - np.exp(y64) * dy64.sum(-1, keepdims=True) if log
            else _softmax_backward_ref(y64, dy64))
    tol = 1e-6 if dtype == "float32" else 8e-3  # one bfloat16 rounding of the result
    np.testing.assert_allclose(got.astype(np.float64).reshape(rows, k), want, rtol=tol,
                               atol=tol * np.abs(want).max())


@pytest.mark.skipif(compiler.find_nvcc() is None, reason="nvcc not on PATH")
def test_row_kernels_compile_for_sm90_in_every_float_dtype() -> None:
    kernels = [render_softmax_backward("softmax_backward", 96, 128, dt, dt, dt)
               for dt in ("float32", "float16", "bfloat16")]
    kernels += [render_softmax_backward("softmax_backward", 96, 300, "float32", "bfloat16",
                                        "bfloat16"),
                render_softmax_backward("softmax_backward", 96, 128, "bfloat16", log=True),
                render_softmax_backward("softmax_backward", 96, 300, "float32", log=True),
                render_softmax("softmax_rows", 96, 128, 1, False, 1.0, "bfloat16")]
    cubin = compiler.run_nvcc(compiler.module_source(kernels), "sm_90", compiler.find_nvcc())
    assert all(k.name.encode() in cubin for k in kernels)


@pytest.mark.parametrize("bf16", [False, True], ids=["fp32", "bf16"])
def test_encoder_program_loses_transposes_and_scale_kernels(bf16: bool) -> None:
    before, after = count_steps(QUICK, bf16, ("fold_heads",)), count_steps(QUICK, bf16)
    print(f"\nlaunches without -> with fold_heads: {before} -> {after}")
    n = QUICK.layers
    assert before["transpose"] == 8 * n and "transpose" not in after
    assert before["batch_dot"] + before.get("_fused", 0) - after.get("_fused", 0) >= 6 * n
    assert after["_batch_dot_heads"] == 6 * n and "batch_dot" not in after
    # (softmax over the last axis differentiates to the row op with or without the pass)
    assert before["_softmax_backward"] == after["_softmax_backward"] == n
    assert after["sum"] == before["sum"]
    assert "_mul_scalar" not in after and "softmax" not in after
    assert after["[HeadGemm]"] == 6 * n and "[HeadGemm]" not in before
    # per layer: 8 transposes and the scale's kernels
    assert after["[Kernel]"] <= before["[Kernel]"] - 10 * n
    # the row ops do the casts the unfolded softmax did (absorb_casts)
    assert after.get("amp_cast", 0) == before.get("amp_cast", 0)
    assert after.get("_backward_Cast", 0) == before.get("_backward_Cast", 0)


# -- on the device ---------------------------------------------------------------------------


def _encoder_run(ctx: sg.Context, bf16: bool) -> tuple[np.ndarray, dict]:
    sym = encoder_symbol(QUICK)
    if bf16:
        sym = sg.amp.convert_symbol(sym, target_dtype="bfloat16")
    exe = sym.simple_bind(ctx, data=(QUICK.batch, QUICK.seq, QUICK.model))
    rng = np.random.default_rng(4)
    for name in sorted(exe.arg_dict):
        exe.arg_dict[name][:] = rng.normal(size=exe.arg_dict[name].shape) * 0.5
    out = exe.forward(is_train=True)[0].asnumpy()
    exe.backward()
    return out, {k: v.asnumpy() for k, v in exe.grad_dict.items()}


@pytest.mark.gpu
@pytest.mark.parametrize("bf16", [False, True], ids=["fp32", "bf16"])
def test_encoder_step_on_gpu_matches_cpu(bf16: bool) -> None:
    """The folded program (pointer-array GEMMs, row softmax gradient) against the CPU's
    unfolded float32 step: float32 within GEMM rounding, bfloat16 AMP within its own."""
    want_out, want = _encoder_run(sg.cpu(), False)
    got_out, got = _encoder_run(sg.gpu(0), bf16)
    tol = 8e-2 if bf16 else 1e-4
    np.testing.assert_allclose(got_out, want_out, rtol=tol, atol=tol)
    for k in want:
        scale = max(1.0, float(np.abs(want[k]).max()))
        np.testing.assert_allclose(got[k].astype(np.float64), want[k], rtol=tol,
                                   atol=tol * scale, err_msg=k)


@pytest.mark.gpu
@pytest.mark.parametrize("mode", ["pointers", "loop"])
@pytest.mark.parametrize("form", FORMS)
def test_head_gemm_on_gpu(form: tuple, mode: str) -> None:
    from symgraph.core import config
    ta, tb, sa, sb, so = form
    sha, shb = _form_shapes(ta, tb, sa, sb)
    rng = np.random.default_rng(6)
    xa, xb = rng.normal(size=sha).astype(np.float32), rng.normal(size=shb).astype(np.float32)
    sym = S._batch_dot_heads(a, b, transpose_a=ta, transpose_b=tb, heads=H, split_lhs=sa,
                             split_rhs=sb, split_out=so, alpha=0.25)
    with config.override("SYMGRAPH_HEAD_GEMM", mode):
        exe = sym.bind(sg.gpu(0), {"a": sg.nd.array(xa, sg.gpu(0)),
                                   "b": sg.nd.array(xb, sg.gpu(0))})
        got = exe.forward()[0].asnumpy()
    want = _heads_ref(xa.astype(np.float64), xb.astype(np.float64), ta, tb, sa, sb, so, 0.25)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
