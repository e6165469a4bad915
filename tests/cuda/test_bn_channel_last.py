"""BatchNorm over the last axis (channel-last data: NHWC after ``passes/channel_last``, or an
(N, C) matrix) on the GPU path: one kernel per direction (``kernels_norm``'s
``render_bn_column_train`` and ``render_bn_column_backward``: coalesced column sums, a grid
barrier, the normalisation or dx), checked without a GPU against numpy in float64:

* the lowered BatchNorm and _backward_BatchNorm steps run on the host (``host_run``: one
  thread), float32, float16 and bfloat16 data (with float32 or narrow statistics), channel
  counts that do not divide the block, one channel, more channels than a block has threads,
  odd row counts; data far from zero (the shifted one-pass variance);
* the kernels alone with real block sizes (``block_run``: host threads and barriers), one
  block striding over several units, so that the shared-memory folds over row lanes and the
  per-tile coefficients are exercised (the barrier across blocks only on the GPU);
* every variant compiles with nvcc for sm_90.

The ``gpu`` tests compare the device with the numpy backend on ResNet-20-like NHWC shapes.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import symgraph as sg
from symgraph.runtime.cuda import compiler
from symgraph.runtime.cuda.actions import Kernel
from symgraph.runtime.cuda.kernels_bn_column import render_bn_column_backward, render_bn_column_train
from symgraph.core.registry import RunCtx, get_op

from .block_run import run_threaded
from .host_run import host_compiler, lowered, run_on_host, runnable
from .narrow import NARROW

S = sg.sym
needs_gxx = pytest.mark.skipif(host_compiler() is None, reason="g++ not on PATH")
# (shape, axis): 48 channels leave 16 of 1024 threads idle; 1 channel; 300 channels leave three
# row lanes to a 1024-thread block; odd and even row counts; a unit axis after the channels
# (nothing follows them in memory: still channels last).
SHAPES = [((3, 5, 7, 48), 3), ((9, 1, 1, 1), -1), ((5, 3, 300), -1), ((13, 7), 1),
          ((2, 3, 3, 16), -1), ((6, 5, 1), 1)]
# (data dtype, parameters' dtype): gamma, beta and the statistics default to float32 beside
# narrow data (ops/norm.bn_type: AMP and channel_last's bfloat16 graphs), or all narrow.
DTYPES = [("float32", "float32"), ("bfloat16", "float32"), ("float16", "float32"),
          ("bfloat16", "bfloat16")]
RTOL = {"float32": 1e-5, "float16": 2e-3, "bfloat16": 2e-2}  # about two roundings of each


def _np(dtype: str) -> np.dtype:
    return NARROW.get(dtype, np.dtype(dtype))


def _bn_steps(shape: tuple, axis: int, dtypes: tuple = ("float32", "float32")) -> tuple:
    """The training schedule of BatchNorm (gamma learned) and its BatchNorm and
    _backward_BatchNorm steps, data of ``dtypes[0]``, parameters and statistics of
    ``dtypes[1]``."""
    sym = S.BatchNorm(S.var("x"), fix_gamma=False, axis=axis, eps=1e-3, name="bn")
    types = {k: _np(dtypes[1]) for k in ("bn_gamma", "bn_beta", "bn_moving_mean",
                                         "bn_moving_var")}
    exe = sym.simple_bind(sg.cpu(), type_dict={"x": _np(dtypes[0]), **types}, x=shape)
    sch = exe._train.schedule
    steps = {st.node.op: st for st in sch.steps}
    return sch, steps["BatchNorm"], steps["_backward_BatchNorm"]


def _inputs(step, sch, rng: np.random.Generator) -> list:
    """Inputs of a step in their slots' dtypes, offset from zero (a centred-square variance
    must not be a difference of large squares); variances positive."""
    out = []
    for s, name in zip(step.inputs, get_op(step.node.op).input_names(step.node.attrs)):
        v = rng.normal(size=sch.shapes[s]) * 2.0 + 5.0
        v = np.abs(v) if name in ("var", "moving_var") else v
        out.append(v.astype(sch.dtypes[s]))
    return out


@needs_gxx
@pytest.mark.parametrize("dtypes", DTYPES, ids=["-".join(d) for d in DTYPES])
@pytest.mark.parametrize("shape,axis", SHAPES, ids=[str(s[0]) for s in SHAPES])
def test_channel_last_steps_on_host(shape: tuple, axis: int, dtypes: tuple,
                                    tmp_path: Path) -> None:
    """Both steps lower to one column-sum kernel each, run on the host and match numpy in
    float64 on the same (rounded) inputs, each output within about two roundings of its own
    dtype."""
    sch, fwd, bwd = _bn_steps(shape, axis, dtypes)
    rng = np.random.default_rng(11)
    for step in (fwd, bwd):
        acts, _, _ = lowered(step, sch.shapes, sch.dtypes)
        names = [a.kernel.name for a in acts if isinstance(a, Kernel)]
        assert names == [n for n in names if "bn_cols_" in n] and len(names) == 1, names
        assert runnable(acts)
        xs = _inputs(step, sch, rng)
        got = run_on_host(step, sch.shapes, sch.dtypes, xs, tmp_path)
        want = get_op(step.node.op).compute(step.node.attrs,
                                            [np.asarray(x, np.float64) for x in xs],
                                            RunCtx(is_train=True))
        for k, (g, w, slot) in enumerate(zip(got, want, step.outputs)):
            assert g.dtype == sch.dtypes[slot]
            rtol = RTOL[str(g.dtype)]
            w = np.asarray(w, np.float64).reshape(g.shape)
            scale = max(1.0, float(np.abs(w).max()))
            np.testing.assert_allclose(np.asarray(g, np.float64), w, rtol=rtol,
                                       atol=rtol * scale, err_msg=f"{step.node.op} out {k}")


def test_inner_axes_keep_the_block_per_channel_path() -> None:
    """NCHW data (axis 1 of 4-D) lowers as before: no column-sum kernel."""
    sch, fwd, bwd = _bn_steps((4, 3, 5, 6), 1)
    for step in (fwd, bwd):
        acts, _, _ = lowered(step, sch.shapes, sch.dtypes)
        assert not any("bn_cols_" in a.kernel.name for a in acts if isinstance(a, Kernel))


def _column_case(rows: int, cols: int, kind: str, x_t: str, s_t: str, rng) -> tuple:
    """(the kernel's buffer names after ``part, bar``, inputs, float64 outputs by name)."""
    x = (rng.normal(size=(rows, cols)) * 2.0 + 3.0).astype(_np(x_t))
    dy = rng.normal(size=(rows, cols)).astype(_np(x_t))
    gamma = rng.uniform(0.5, 1.5, cols).astype(_np(s_t))
    x64, dy64, g64 = x.astype(np.float64), dy.astype(np.float64), gamma.astype(np.float64)
    if kind == "train":
        beta = rng.normal(size=cols).astype(_np(s_t))
        mm, mv = rng.normal(size=cols).astype(_np(s_t)), rng.uniform(1, 2, cols).astype(_np(s_t))
        mean, var = x64.mean(0), x64.var(0)
        y = (x64 - mean) / np.sqrt(var + 1e-3) * g64 + beta.astype(np.float64)
        want = {"y": y, "mean": mean, "var": var,
                "new_mm": mm.astype(np.float64) * 0.9 + mean * 0.1,
                "new_mv": mv.astype(np.float64) * 0.9 + var * 0.1}
        return (("x", "gamma", "beta", "mm", "mv"),
                {"x": x, "gamma": gamma, "beta": beta, "mm": mm, "mv": mv}, want)
    mean = (rng.normal(size=cols) + 3.0).astype(_np(s_t))
    var = rng.uniform(0.5, 2.0, size=cols).astype(_np(s_t))
    rstd = 1.0 / np.sqrt(var.astype(np.float64) + 1e-3)
    xhat = (x64 - mean.astype(np.float64)) * rstd
    dbeta, dgamma = dy64.sum(0), (dy64 * xhat).sum(0)
    dx = (dy64 - dbeta / rows - xhat * dgamma / rows) * g64 * rstd
    return (("dy", "x", "gamma", "mean", "var"),
            {"dy": dy, "x": x, "gamma": gamma, "mean": mean, "var": var},
            {"dx": dx, "dgamma": dgamma, "dbeta": dbeta})


@needs_gxx
@pytest.mark.parametrize("rows,cols,kind,chunks,block,x_t,s_t", [
    (37, 48, "train", 3, 256, "float32", "float32"),
    (37, 48, "train", 1, 96, "bfloat16", "float32"),
    (1001, 1, "train", 4, 64, "bfloat16", "bfloat16"),
    (11, 300, "grad", 2, 256, "float32", "float32"),
    (2003, 7, "grad", 5, 512, "bfloat16", "float32"),
    (50, 16, "grad", 7, 33, "float16", "float16"),
    (199, 5, "train", 2, 16, "float32", "float32"),
])
def test_one_kernel_with_real_blocks(rows: int, cols: int, kind: str, chunks: int, block: int,
                                     x_t: str, s_t: str, tmp_path: Path) -> None:
    """The one-kernel forward and backward with ``block`` host threads in one block that
    strides over every unit twice (sums, then the barrier, coefficients and elementwise part;
    block sizes not a multiple of the column count, of 32, or over 300 columns in tiles),
    against float64 outputs of the same values. (One block: ``block_run`` runs blocks one
    after another, so a second block would wait at the barrier for ever.)"""
    rng = np.random.default_rng(rows * cols)
    srcs, inputs, want = _column_case(rows, cols, kind, x_t, s_t, rng)
    if kind == "train":
        kern = render_bn_column_train(rows, cols, chunks, 1e-3, 0.9, False, x_t, s_t, s_t)
    else:
        kern = render_bn_column_backward(rows, cols, chunks, 1e-3, False, False, x_t, s_t,
                                         s_t, s_t)
    outs = {k: (rows * cols if k in ("y", "dx") else cols, _np(x_t if k in ("y", "dx") else s_t))
            for k in want}
    outs["part"] = (chunks * 2 * cols, np.dtype(np.float32))
    outs["bar"] = (1, np.dtype(np.uint32))
    got = run_threaded([(kern, 1, block, tuple(list(want) + ["part", "bar"]) + srcs)],
                       inputs, outs, tmp_path)
    assert got["bar"][0] == 2 ** 31  # the barrier's flip: the next launch's barrier starts there
    for k, w in want.items():
        rtol = max(RTOL[str(outs[k][1])], 1e-4)
        w = w.reshape(-1)
        np.testing.assert_allclose(got[k].astype(np.float64), w, rtol=rtol,
                                   atol=rtol * max(1.0, np.abs(w).max()), err_msg=k)


@needs_gxx
def test_one_pass_statistics_of_offset_data(tmp_path: Path) -> None:
    """The one-pass shifted sums keep the variance of data far from zero: values 1000 + 0.1 *
    N(0, 1) in float32 (where the unshifted sum of squares would lose every digit of the
    variance, 0.01 against 1e6) give the float64 mean and variance of the same values."""
    sch, fwd, _ = _bn_steps((64, 5, 5, 8), 3)
    rng = np.random.default_rng(2)
    xs = _inputs(fwd, sch, rng)
    xs[0] = (1000.0 + 0.1 * rng.normal(size=xs[0].shape)).astype(np.float32)
    _, mean, var, _, _ = run_on_host(fwd, sch.shapes, sch.dtypes, xs, tmp_path)
    x64 = xs[0].astype(np.float64).reshape(-1, 8)
    np.testing.assert_allclose(mean, x64.mean(0), rtol=1e-7)
    np.testing.assert_allclose(var, x64.var(0), rtol=1e-4)


@pytest.mark.skipif(compiler.find_nvcc() is None, reason="nvcc not on PATH")
def test_one_kernel_bn_compiles_for_sm90() -> None:
    types = (("float32", "float32"), ("bfloat16", "bfloat16"), ("float16", "float32"),
             ("bfloat16", "float32"))
    kernels = [render_bn_column_train(1000, c, 7, 1e-3, 0.9, fix, x_t, s_t, s_t)
               for c in (1, 48, 300) for x_t, s_t in types for fix in (False, True)]
    kernels += [render_bn_column_backward(1000, c, 7, 1e-3, fix, glob, x_t, s_t, s_t, x_t)
                for c in (1, 48, 300) for x_t, s_t in types for fix in (False, True)
                for glob in (False, True)]
    kernels += [render_bn_column_backward(2 ** 22, 1024, 3, 1e-3, False, False)]  # 64-bit
    cubin = compiler.run_nvcc(compiler.module_source(kernels), "sm_90", compiler.find_nvcc())
    assert all(k.name.encode() in cubin for k in kernels)


GPU_SHAPES = [(128, 32, 32, 16), (128, 16, 16, 32), (128, 8, 8, 64), (64, 7, 7, 300),
              (1000, 3), (4097, 1)]
GPU_CASES = [(s, a) for s in GPU_SHAPES for a in ((-1, 3) if len(s) == 4 else (-1,))]


def _gpu_run(ctx, shape: tuple, axis: int, dtypes: tuple, values: dict,
             head: np.ndarray) -> tuple:
    """Outputs, then the moving statistics, and gradients (float32 copies) after three
    training steps (eager, captured, replayed); data of ``dtypes[0]``, parameters and
    statistics of ``dtypes[1]``."""
    sym = S.BatchNorm(S.var("x"), fix_gamma=False, axis=axis, output_mean_var=True, name="bn")
    types = {k: dtypes[0] if k == "x" else dtypes[1] for k in values}
    arrays = {k: sg.nd.array(v, ctx, types[k]) for k, v in values.items()}
    grads = {k: sg.nd.zeros(values[k].shape, ctx, types[k]) for k in ("x", "bn_gamma",
                                                                         "bn_beta")}
    exe = sym.bind(ctx, {k: arrays[k] for k in grads}, args_grad=grads,
                   aux_states={k: arrays[k] for k in ("bn_moving_mean", "bn_moving_var")})
    for _ in range(3):
        outs = exe.forward(is_train=True)
        exe.backward([sg.nd.array(head, ctx, dtypes[0])]
                     + [sg.nd.zeros(o.shape, ctx, o.dtype) for o in outs[1:]])
    moving = [exe.aux_dict[k].asnumpy().astype(np.float32) for k in sorted(exe.aux_dict)]
    return ([o.asnumpy().astype(np.float32) for o in outs] + moving,
            {k: g.asnumpy().astype(np.float32) for k, g in grads.items()})


@pytest.mark.gpu
@pytest.mark.parametrize("dtypes", DTYPES, ids=["-".join(d) for d in DTYPES])
@pytest.mark.parametrize("shape,axis", GPU_CASES, ids=[f"{s}-axis{a}" for s, a in GPU_CASES])
def test_channel_last_gpu_matches_numpy_backend(shape: tuple, axis: int, dtypes: tuple) -> None:
    """Forward (output, mean, var, moving mean and variance after three updates) and gradients
    of x, gamma, beta on the GPU against the numpy backend in float32 on the same rounded
    values (narrow: within a few roundings)."""
    rng = np.random.default_rng(3)
    c = shape[axis]
    values = {"x": rng.normal(size=shape) * 2 + 1, "bn_gamma": rng.uniform(0.5, 1.5, c),
              "bn_beta": rng.normal(size=c), "bn_moving_mean": np.zeros(c),
              "bn_moving_var": np.ones(c)}
    values = {k: v.astype(_np(dtypes[k != "x"])).astype(np.float32) for k, v in values.items()}
    head = rng.normal(size=shape).astype(_np(dtypes[0])).astype(np.float32)
    want = _gpu_run(sg.cpu(), shape, axis, ("float32", "float32"), values, head)
    got = _gpu_run(sg.gpu(0), shape, axis, tuple(_np(d) for d in dtypes), values, head)
    rtol = 1e-4 if dtypes[0] == "float32" else 3e-2  # narrow data: y, dx and what they reach
    for what, g, w in [(f"output {i}", *p) for i, p in enumerate(zip(got[0], want[0]))] + [
            (f"grad {k}", got[1][k], want[1][k]) for k in want[1]]:
        scale = max(1.0, float(np.abs(w).max()))
        np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol * scale, err_msg=what)
