"""The ``ctc`` lowering of CTCLoss (``cuda/lowering_ctc.py``, ``cuda/kernels_ctc.py``) without and
with a GPU.

Without a GPU: the kernel of each configuration below (the registry cases, integer labels and
lengths, impossible alignments, empty sequences, repeated labels) compiles with nvcc for sm_90 in
float32, float16 and bfloat16, and runs on the CPU with one thread (``host_run``, the lowered
step as the backend runs it) and with blocks of several threads (``block_run``: the per-step
barriers and the block sum), against an independent float64 reference: the loss summed over
every alignment (``ctc_brute``) and its gradient by central differences of that sum.
With a GPU (``-m gpu``): the loss and the gradient against the numpy backend.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import symgraph as sg
from symgraph.core.attrs import parse_attrs
from symgraph.core.base import DataError
from symgraph.runtime.cuda import compiler
from symgraph.runtime.cuda.actions import Host, Kernel, flat_actions
from symgraph.runtime.cuda.kernels_ctc import render_ctc, scratch_counts
from symgraph.runtime.cuda.plan import lower_schedule
from symgraph.core.registry import RunCtx, get_op
from tests.gluon._loss_refs import ctc_brute, numeric_grad

from .block_run import run_threaded
from .host_run import host_compiler, run_on_host
from .narrow import NARROW, TOLERANCE

S = sg.sym
needs_gxx = pytest.mark.skipif(host_compiler() is None, reason="g++ not on PATH")
NAMES = ("data", "label", "data_lengths", "label_lengths")

# id: (attributes, data shape (T, N, C), label, data lengths, label lengths)
CONFIGS: dict[str, tuple[dict, tuple, Any, Any, Any]] = {
    "first": ({}, (4, 3, 3), [[1, 2], [2, 2], [1, 0]], None, None),
    "last": ({"blank_label": "last"}, (4, 3, 3), [[0, 1], [1, -1], [-1, -1]], None, None),
    "lengths": ({}, (4, 3, 3), [[1, 2], [2, 1], [1, 1]], [4, 2, 3], [2, 1, 2]),
    # 1,1,1 needs 5 steps of 4 (impossible); 2,3,2 fits 3 steps exactly; two empty sequences,
    # one with an empty label (loss 0) and one without (loss inf)
    "edges": ({}, (4, 4, 4), np.array([[1, 1, 1], [2, 3, 2], [0, 0, 0], [3, 0, 0]], np.int32),
              np.array([4, 3, 0, 0], np.int64), None),
    "last_int": ({"blank_label": "last"}, (5, 2, 4),
                 np.array([[2, 2, 0], [1, 0, 2]], np.int64), None, np.array([2, 3], np.int32)),
}


def _lengths(cid: str) -> tuple[np.ndarray, np.ndarray, int]:
    """(data lengths, label lengths, blank) of a configuration, read from its definition."""
    attrs, (t, n, c), label, steps, lens = CONFIGS[cid]
    label = np.asarray(label)
    first = attrs.get("blank_label", "first") == "first"
    pad = 0 if first else -1
    if lens is None:
        lens = [list(row).index(pad) if pad in row else len(row) for row in label.tolist()]
    steps = np.full(n, t) if steps is None else np.asarray(steps)
    return steps.astype(int), np.asarray(lens, int), 0 if first else c - 1


def _reference(cid: str, data: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """float64 loss (N,) and gradient (T, N, C): a sum over alignments, central differences."""
    steps, lens, blank = _lengths(cid)
    label = np.asarray(CONFIGS[cid][2])
    loss, grad = np.zeros(data.shape[1]), np.zeros(data.shape)
    for b in range(data.shape[1]):
        seq = [int(v) for v in label[b, :lens[b]]]
        if steps[b] == 0:
            loss[b] = 0.0 if not seq else np.inf
            continue
        x = data[:steps[b], b].astype(np.float64)
        with np.errstate(divide="ignore"):
            loss[b] = ctc_brute(x, seq, blank)
        if np.isfinite(loss[b]):
            grad[:steps[b], b] = numeric_grad(lambda v: ctc_brute(v, seq, blank), x)
    return loss, grad


def _symbol(cid: str) -> tuple[Any, dict, dict]:
    """(symbol, argument shapes, argument values but data) of a configuration."""
    attrs, shape, label, steps, lens = CONFIGS[cid]
    values = {"label": np.asarray(label)}
    if steps is not None:
        values["data_lengths"] = np.asarray(steps)
    if lens is not None:
        values["label_lengths"] = np.asarray(lens)
    sym = S.CTCLoss(*[S.var(k) for k in NAMES if k == "data" or k in values],
                    use_data_lengths=steps is not None, use_label_lengths=lens is not None,
                    **attrs)
    return sym, {"data": shape, **{k: v.shape for k, v in values.items()}}, values


def _dtype_of(value: np.ndarray, dtype: str) -> Any:
    """Integer labels and lengths keep their type; float ones take the data's."""
    return value.dtype if value.dtype.kind in "iu" else NARROW.get(dtype, np.dtype(dtype))


def _schedule(cid: str, dtype: str, train: bool = False) -> Any:
    """The forward program of a configuration, or the training one of the summed loss."""
    sym, shapes, values = _symbol(cid)
    types = {"data": dtype, **{k: _dtype_of(v, dtype) for k, v in values.items()}}
    if not train:
        return sym.simple_bind(sg.cpu(), grad_req="null", type_dict=types,
                               **shapes)._infer.schedule
    req = {k: "write" if k == "data" else "null" for k in shapes}
    return S.make_loss(S.sum(sym)).simple_bind(sg.cpu(), type_dict=types, grad_req=req,
                                               **shapes)._train.schedule


def _step(cid: str, dtype: str) -> tuple:
    sch = _schedule(cid, dtype)
    (step,) = sch.steps
    return step, sch.shapes, sch.dtypes


def _inputs(cid: str, dtype: str) -> list[np.ndarray]:
    """Data rounded to ``dtype`` (so the reference sees what the kernel reads), then the rest."""
    _, shape, _, _, _ = CONFIGS[cid]
    data = np.random.default_rng(7).normal(size=shape) * 1.5
    data = data.astype(NARROW.get(dtype, np.dtype(dtype))).astype(np.float64)
    _, _, values = _symbol(cid)
    return [data] + [values[k] for k in NAMES[1:] if k in values]


def _check(cid: str, dtype: str, loss: np.ndarray, grad: np.ndarray, data: np.ndarray) -> None:
    want_loss, want_grad = _reference(cid, data)
    rtol, atol = TOLERANCE.get(dtype, (2e-4, 2e-4))
    np.testing.assert_allclose(np.asarray(loss, np.float64), want_loss, rtol=rtol, atol=atol,
                               err_msg=f"{cid} {dtype} loss")
    np.testing.assert_allclose(np.asarray(grad, np.float64).reshape(data.shape), want_grad,
                               rtol=rtol, atol=atol, err_msg=f"{cid} {dtype} gradient")


@needs_gxx
@pytest.mark.parametrize("dtype", ["float32", *sorted(NARROW)])
@pytest.mark.parametrize("cid", sorted(CONFIGS))
def test_lowered_step_on_host(cid: str, dtype: str, tmp_path: Path) -> None:
    """The step as the backend lowers it, one thread per block (grid-stride over sequences)."""
    step, shapes, dtypes = _step(cid, dtype)
    xs = _inputs(cid, dtype)
    loss, grad = run_on_host(step, shapes, dtypes, xs, tmp_path)
    _check(cid, dtype, loss, grad, xs[0])


def _threaded(cid: str, xs: list, grid: int, block: int, tmp: Path) -> tuple:
    attrs, (t, n, c), label, steps, lens = CONFIGS[cid]
    ins = {"x": xs[0].astype(np.float32)}
    ins.update({k: np.asarray(v) for k, v in zip(("label", "dl", "ll"), xs[1:])})
    given = [None if v is None else np.asarray(v).dtype.name for v in (steps, lens)]
    kern = render_ctc(t, n, c, np.shape(label)[1], attrs.get("blank_label") != "last",
                      "float32", ins["label"].dtype.name, *given)
    outs = {"loss": (n, np.dtype(np.float32)), "grad": (t * n * c, np.dtype(np.float32))}
    outs.update({f"s{k}": (count, np.dtype(d))
                 for k, (count, d) in enumerate(scratch_counts(t, n, c, np.shape(label)[1]))})
    got = run_threaded([(kern, grid, block, list(outs)[:2] + list(ins) + list(outs)[2:])],
                       ins, outs, tmp)
    return got["loss"], got["grad"]


@needs_gxx
@pytest.mark.parametrize("cid,grid,block", [("first", 2, 3), ("lengths", 1, 32),
                                            ("edges", 3, 5), ("last_int", 2, 2)])
def test_blocks_of_threads_on_host(cid: str, grid: int, block: int, tmp_path: Path) -> None:
    """Several threads per block: fewer threads than states (each walks several), more than
    states, and fewer blocks than sequences."""
    xs = _inputs(cid, "float32")
    loss, grad = _threaded(cid, xs, grid, block, tmp_path)
    _check(cid, "float32", loss, grad, xs[0])


@needs_gxx
def test_long_sequences_match_the_float64_reference(tmp_path: Path) -> None:
    """40 steps, 12 classes, 8 labels with repeats (too many alignments to enumerate): against
    the op's numpy reference in float64, threads fewer than the 17 states."""
    rng = np.random.default_rng(3)
    label = rng.integers(1, 4, size=(3, 8)).astype(np.float32)  # classes 1..3: many repeats
    CONFIGS["long"] = ({}, (40, 3, 12), label, np.array([40, 30, 17], np.int32), None)
    try:
        xs = _inputs("long", "float32")
        loss, grad = _threaded("long", xs, 2, 8, tmp_path)
        op = get_op("CTCLoss")
        attrs = parse_attrs(op.params, {"use_data_lengths": True}, "ctc")
        want = op.compute(attrs, xs, RunCtx(is_train=True))
        np.testing.assert_allclose(loss, want[0], rtol=1e-4)
        # float32 log-space sums of ~100 in magnitude: about 1e-5 absolute in the occupancy
        np.testing.assert_allclose(grad.reshape(xs[0].shape), want[1], atol=5e-5)
    finally:
        del CONFIGS["long"]


@needs_gxx
def test_bad_label_is_nan_on_the_device_and_a_data_error_on_the_cpu(tmp_path: Path) -> None:
    """A label outside the alphabet (3 of 3 classes) or a length past T: the kernel cannot
    raise, so that sequence's loss and gradient are NaN and the others are untouched."""
    CONFIGS["bad"] = ({}, (4, 3, 3), [[1, 3], [2, 1], [1, 2]], [4, 4, 5], None)
    try:
        xs = _inputs("bad", "float32")
        loss, grad = _threaded("bad", xs, 1, 4, tmp_path)
        assert np.isnan(loss[0]) and np.isnan(loss[2]) and np.isfinite(loss[1])
        grad = grad.reshape(4, 3, 3)
        assert np.isnan(grad[:, [0, 2]]).all() and np.isfinite(grad[:, 1]).all()
        want = ctc_brute(xs[0][:, 1], [2, 1], 0)
        np.testing.assert_allclose(loss[1], want, rtol=2e-4)
        sym, shapes, values = _symbol("bad")
        args = {"data": sg.nd.array(xs[0])} | {k: sg.nd.array(v) for k, v in values.items()}
        with pytest.raises(DataError, match=r"data_lengths\[2\] = 5 is outside \[0, 4\]"):
            sym.bind(sg.cpu(), args, grad_req="null").forward()
        args["data_lengths"] = sg.nd.array([4, 4, 4])
        with pytest.raises(DataError, match=r"label\[0, 1\] = 3.0 is not a label"):
            sym.bind(sg.cpu(), args, grad_req="null").forward()
        assert (args["label"].asnumpy() == values["label"]).all()
    finally:
        del CONFIGS["bad"]


def _actions(cid: str, dtype: str, train: bool) -> list:
    """Every action of the forward or training program of a configuration."""
    return [a for st in lower_schedule(_schedule(cid, dtype, train), 132).actions
            for a in flat_actions(st)]


@pytest.mark.parametrize("dtype", ["float32", *sorted(NARROW)])
def test_no_host_step(dtype: str) -> None:
    """Training programs of every configuration (integer labels and lengths included) lower
    without a host step."""
    for cid in CONFIGS:
        assert not [a for a in _actions(cid, dtype, True) if isinstance(a, Host)], (cid, dtype)


@pytest.mark.skipif(compiler.find_nvcc() is None, reason="nvcc not on PATH")
def test_kernels_compile_for_sm90_in_every_float_dtype() -> None:
    kernels = {a.kernel.name: a.kernel for dtype in ("float32", *NARROW) for cid in CONFIGS
               for a in _actions(cid, dtype, False) if isinstance(a, Kernel)}
    assert {n.split("_")[3] for n in kernels} >= {"f16", "bf16"}, sorted(kernels)
    cubin = compiler.run_nvcc(compiler.module_source(list(kernels.values())), "sm_90",
                              compiler.find_nvcc())
    assert all(name.encode() in cubin for name in kernels)


def _run(cid: str, ctx: Any, dtype: str) -> tuple[np.ndarray, np.ndarray]:
    """Loss and d sum(loss * w) / d data, run on ``ctx`` (w makes every head gradient count)."""
    sym, shapes, values = _symbol(cid)
    xs = _inputs(cid, dtype)
    args = {"data": sg.nd.array(xs[0], ctx, dtype)}
    args.update({k: sg.nd.array(v, ctx, _dtype_of(v, dtype)) for k, v in values.items()})
    grad = sg.nd.zeros(shapes["data"], ctx, dtype)
    exe = sym.bind(ctx, args, args_grad={"data": grad},
                   grad_req={k: "write" if k == "data" else "null" for k in shapes})
    out = exe.forward(is_train=True)[0].asnumpy()
    w = np.arange(1.0, shapes["data"][1] + 1)
    exe.backward(sg.nd.array(w, ctx, dtype))
    return out, grad.asnumpy()


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float32", *sorted(NARROW)])
@pytest.mark.parametrize("cid", sorted(CONFIGS))
def test_gpu_matches_cpu(cid: str, dtype: str) -> None:
    want, got = _run(cid, sg.cpu(), dtype), _run(cid, sg.gpu(), dtype)
    rtol, atol = TOLERANCE.get(dtype, (1e-5, 1e-5))
    for w, g, what in zip(want, got, ("loss", "gradient")):
        np.testing.assert_allclose(np.asarray(g, np.float64), np.asarray(w, np.float64),
                                   rtol=rtol, atol=atol, err_msg=f"{cid} {dtype} {what}")
