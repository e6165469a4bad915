"""The fused RNN's GPU lowering (``cuda/lowering_rnn.py``), checked without and with a GPU.

Without a GPU: the ``RNN`` and ``_backward_RNN`` steps of every mode (2 stacked bidirectional
layers with state outputs, 1 plain layer without, 3 stacked layers with) are lowered, their
gate kernels compiled as host C++ and their GEMMs run as loops (``host_run``), and every
output compared with the op's numpy reference (``ops/rnn_cells.py``; it matches MXNet 1.9.1
in float64: ``tests/test_mxnet_shapes_and_modules.py``) on the same inputs: float32 within 1e-5, float16 and
bfloat16 against the float32 reference on the same rounded inputs within ``narrow.TOLERANCE``
(a few narrow roundings per step: gates, states, GEMM outputs and carried gradients are
stored narrow; rnn_relu may move a few gradients, ``KINK_SHARE``). The programs hold no host
step in any dtype, their shape is the one documented (one input-projection GEMM per layer and
direction, one GEMM and one gate kernel per step, weight gradients as one GEMM over all
steps), offsets and accumulation reach the launches, and every kernel compiles with nvcc.

With a GPU (``-m gpu``): forward outputs and gradients of every mode against the numpy backend
(float32 within 1e-4 relative; float16 and bfloat16 against float32 within
``narrow.TOLERANCE``), eager, captured and replayed.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import symgraph as sg
from symgraph.runtime.cuda import compiler
from symgraph.runtime.cuda.actions import Gemm, Host, Kernel, flat_actions
from symgraph.runtime.cuda.plan import lower_schedule
from symgraph.core.registry import RunCtx, get_op

from .host_run import host_compiler, lowered, run_on_host
from .narrow import NARROW, assert_close, rounded

S = sg.sym
MODES = ["lstm", "gru", "rnn_tanh", "rnn_relu"]
T, N, I, H = 4, 3, 5, 6
# (layers, bidirectional, state_outputs); 3 layers: the forward's layers share scratch (two
# layer outputs alternate), the last states are copied out before the next layer overwrites
CONFIGS = {"2x-bi-states": (2, True, True), "1x": (1, False, False),
           "3x-states": (3, False, True)}
# relu's derivative jumps at 0: a pre-activation within a narrow rounding of 0 takes the
# other branch than in float32 and moves the gradients it feeds (as ties do in max pooling).
KINK_SHARE = 0.05
needs_gxx = pytest.mark.skipif(host_compiler() is None, reason="g++ not on PATH")
needs_nvcc = pytest.mark.skipif(compiler.find_nvcc() is None, reason="nvcc not on PATH")


def rnn(mode: str, layers: int, bi: bool, states: bool) -> Any:
    names = ["data", "params", "state"] + (["cell"] if mode == "lstm" else [])
    return S.RNN(*[S.var(n) for n in names], state_size=H, num_layers=layers,
                 bidirectional=bi, mode=mode, state_outputs=states, name="rnn")


def _schedule(mode: str, config: str, dtype: str = "float32", train: bool = True) -> Any:
    sym = rnn(mode, *CONFIGS[config])
    exe = sym.simple_bind(sg.cpu(), type_dict={n: dtype for n in sym.list_arguments()},
                          data=(T, N, I))
    return (exe._train if train else exe._infer).schedule


def _step(sch: Any, op: str) -> Any:
    (st,) = [s for s in sch.steps if s.node.op == op]
    return st


def _inputs(sch: Any, st: Any, dtype: str) -> list[np.ndarray]:
    """Inputs in ``dtype`` (rounded values, float32 for the reference of a narrow run)."""
    rng = np.random.default_rng(11)
    xs = [rng.normal(size=sch.shapes[s]) * 0.5 for s in st.inputs]
    return [rounded(x, dtype) if dtype in NARROW else x.astype(np.float32) for x in xs]


def _host_check(mode: str, config: str, op: str, dtype: str, tmp_path: Path) -> None:
    sch = _schedule(mode, config, dtype)
    st = _step(sch, op)
    ref_in = _inputs(sch, st, dtype)
    want = get_op(op).compute(st.node.attrs, [x.astype(np.float64) for x in ref_in],
                              RunCtx(is_train=True))
    got = run_on_host(st, sch.shapes, sch.dtypes, [x.astype(sch.dtypes[s])
                                                   for x, s in zip(ref_in, st.inputs)],
                      tmp_path)
    assert len(got) == len(want) == len(st.outputs)
    for k, (g, w) in enumerate(zip(got, want)):
        what = f"{mode} {config} {op} output {k}"
        if dtype in NARROW:
            assert_close(g, w, dtype, what, KINK_SHARE if mode == "rnn_relu" else 0.0)
        else:
            scale = max(1.0, float(np.abs(w).max()))
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5 * scale, err_msg=what)


@needs_gxx
@pytest.mark.parametrize("op", ["RNN", "_backward_RNN"])
@pytest.mark.parametrize("config", sorted(CONFIGS))
@pytest.mark.parametrize("mode", MODES)
def test_float32_steps_match_numpy_on_host(mode: str, config: str, op: str,
                                           tmp_path: Path) -> None:
    _host_check(mode, config, op, "float32", tmp_path)


@needs_gxx
@pytest.mark.parametrize("op", ["RNN", "_backward_RNN"])
@pytest.mark.parametrize("dtype", sorted(NARROW))
@pytest.mark.parametrize("mode", MODES)
def test_narrow_steps_match_float32_on_host(mode: str, dtype: str, op: str,
                                            tmp_path: Path) -> None:
    _host_check(mode, "2x-bi-states", op, dtype, tmp_path)


@needs_gxx
def test_host_check_can_fail(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The comparison above sees a wrong kernel: one tanh of the GRU gate kernel's source
    turned into sin makes the host run differ from the reference."""
    from symgraph.runtime.cuda import lowering_rnn
    real = lowering_rnn.render_rnn_forward

    def broken(*a: Any) -> Any:
        k = real(*a)
        return type(k)(k.name, k.source.replace("tanhf(", "sinf(", 1), k.n_ptr, k.per_thread,
                       k.helpers)
    monkeypatch.setattr(lowering_rnn, "render_rnn_forward", broken)
    with pytest.raises(AssertionError):
        _host_check("gru", "1x", "RNN", "float32", tmp_path)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("mode", MODES)
def test_no_host_path_in_any_dtype(mode: str, dtype: str) -> None:
    """Inference and training programs of every mode and dtype run on the device only."""
    for train in (False, True):
        sch = _schedule(mode, "2x-bi-states", dtype, train)
        acts = [a for step in lower_schedule(sch, 132).actions for a in flat_actions(step)]
        assert not [a for a in acts if isinstance(a, Host)], (mode, dtype, train)
        assert {a.dtype for a in acts if isinstance(a, Gemm)} == {dtype}


@pytest.mark.parametrize("mode", MODES)
def test_program_shape(mode: str) -> None:
    """Forward: per layer and direction one input-projection GEMM over all T*N rows, then per
    step one recurrent GEMM and one gate kernel. Backward adds per step one gate-gradient
    kernel and one GEMM, and per layer and direction four GEMMs over all steps (dW, dU, db,
    dc), plus one input-gradient GEMM per direction."""
    sch = _schedule(mode, "2x-bi-states")
    runs = 2 * 2
    fwd, _, _ = lowered(_step(sch, "RNN"), sch.shapes, sch.dtypes)
    gemms = [a for a in fwd if isinstance(a, Gemm)]
    assert len([g for g in gemms if g.m == T * N]) == runs
    assert len([g for g in gemms if g.m == N and g.k == H]) == runs * T
    assert len([a for a in fwd if isinstance(a, Kernel)]) == runs * T
    back, _, _ = lowered(_step(sch, "_backward_RNN"), sch.shapes, sch.dtypes)
    over_steps = [a for a in back if isinstance(a, Gemm) and a.trans_a and a.k == T * N]
    assert len(over_steps) == 4 * runs
    assert len([a for a in back if isinstance(a, Kernel)]) == 2 * runs * T
    assert len([a for a in back if isinstance(a, Gemm) and a.accumulate]) == \
        2 + (runs * T if mode == "gru" else 0)  # second direction's dX; GRU's dh carry


@needs_nvcc
def test_every_rnn_kernel_compiles_for_sm90() -> None:
    kernels = {}
    for mode in MODES:
        for dtype in ("float32", "float16", "bfloat16"):
            sch = _schedule(mode, "2x-bi-states", dtype)
            for step in lower_schedule(sch, 132).actions:
                for a in flat_actions(step):
                    if isinstance(a, Kernel) and "rnn_gates" in a.kernel.name:
                        kernels[a.kernel.name] = a.kernel
    assert len(kernels) == 4 * 3 * 2  # forward and backward per mode and dtype
    cubin = compiler.run_nvcc(compiler.module_source(list(kernels.values())), "sm_90",
                              compiler.find_nvcc())
    assert all(name.encode() in cubin for name in kernels)


def _run(sym: Any, ctx: Any, values: dict, dtype: Any, narrow: str = "",
         repeats: int = 1) -> tuple[list, dict]:
    """Training forward + backward with fixed head gradients (rounded to ``narrow`` when
    given), ``repeats`` times: eager, captured, replayed."""
    args = {k: sg.nd.array(v, ctx, dtype) for k, v in values.items()}
    grads = {k: sg.nd.zeros(v.shape, ctx, dtype) for k, v in values.items()}
    exe = sym.bind(ctx, args, args_grad=grads)
    for _ in range(repeats):
        outs = exe.forward(is_train=True)
        rng = np.random.default_rng(3)
        heads = [rng.normal(size=o.shape) for o in outs]
        exe.backward([np.asarray(rounded(h, narrow) if narrow else h, dtype) for h in heads])
    return [o.asnumpy() for o in outs], {k: g.asnumpy() for k, g in grads.items()}


def _infer(sym: Any, ctx: Any, values: dict) -> list:
    """Outputs of an inference-only bind (the forward program whose layers share scratch),
    run three times: eager, captured, replayed."""
    exe = sym.bind(ctx, {k: sg.nd.array(v, ctx, np.float32) for k, v in values.items()})
    for _ in range(3):
        outs = [o.asnumpy() for o in exe.forward(is_train=False)]
    return outs


def _values(sym: Any, dtype: str) -> dict:
    shapes = sym.infer_shape(data=(T, N, I))[0]
    rng = np.random.default_rng(2)
    return {k: rounded(rng.normal(size=s) * 0.5, dtype) if dtype in NARROW else
            (rng.normal(size=s) * 0.5).astype(np.float32)
            for k, s in zip(sym.list_arguments(), shapes)}


@pytest.mark.gpu
@pytest.mark.parametrize("config", sorted(CONFIGS))
@pytest.mark.parametrize("mode", MODES)
def test_gpu_matches_cpu_float32(mode: str, config: str) -> None:
    sym = rnn(mode, *CONFIGS[config])
    values = _values(sym, "float32")
    want_outs, want_grads = _run(sym, sg.cpu(), values, np.float32)
    got_outs, got_grads = _run(sym, sg.gpu(0), values, np.float32, repeats=3)
    pairs = list(zip(got_outs, want_outs)) + [(got_grads[k], want_grads[k]) for k in values]
    pairs += list(zip(_infer(sym, sg.gpu(0), values), _infer(sym, sg.cpu(), values)))
    for k, (g, w) in enumerate(pairs):
        scale = max(1.0, float(np.abs(w).max()))
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5 * scale,
                                   err_msg=f"{mode} {config} result {k}")


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", sorted(NARROW))
@pytest.mark.parametrize("mode", MODES)
def test_gpu_narrow_matches_cpu_float32(mode: str, dtype: str) -> None:
    sym = rnn(mode, *CONFIGS["2x-bi-states"])
    values = _values(sym, dtype)
    want_outs, want_grads = _run(sym, sg.cpu(), values, np.float32, dtype)
    got_outs, got_grads = _run(sym, sg.gpu(0), values, NARROW[dtype], dtype, repeats=3)
    share = KINK_SHARE if mode == "rnn_relu" else 0.0
    for k, (g, w) in enumerate(zip(got_outs, want_outs)):
        assert_close(g, w, dtype, f"{mode} output {k}", share)
    for k in values:
        assert_close(got_grads[k], want_grads[k], dtype, f"{mode} gradient of {k}", share)


LAUNCH_SCRIPT = r'''
from symgraph.runtime.cuda import runtime
runtime.device_info = lambda d: {"arch": "sm_90", "sm_count": 132}
import contextlib
runtime.activate = lambda d: contextlib.nullcontext()
from symgraph.runtime.cuda import backend
backend.device_info, backend.activate = runtime.device_info, runtime.activate
from symgraph.runtime.cuda.actions import Gemm, Kernel, Ref
from symgraph.runtime.cuda import cublas
calls = []
cublas.gemm = lambda *a, **k: calls.append((a, k))
sym = sg.sym.RNN(sg.sym.var("x"), state_size=3, num_layers=2, bidirectional=True, mode="gru",
                 state_outputs=True)
exe = sym.simple_bind(sg.cpu(), x=(4, 2, 5))
prog = backend.compile(exe._train.schedule, None)
prog.workspace, prog.ws_bytes, prog.module = 0, 0, mock.MagicMock()
env = prog.new_env()
env.ptrs = [(1 << 32) + 4096 * k for k in range(len(env.ptrs))]  # distinct slot addresses
scratch = prog.ptr(Ref("scratch", 0), env)
def where(r):
    return (env.ptrs[r.index] if r.kind == "slot" else scratch + r.index) + r.offset
gemms = [a for acts in prog.actions for a in acts if isinstance(a, Gemm)]
kernels = [a for acts in prog.actions for a in acts if isinstance(a, Kernel)]
assert any(r.offset for g in gemms for r in (g.a, g.b, g.c)) and any(g.accumulate for g in gemms)
for g in gemms:
    prog.closure(g, env)(None)
    args, kw = calls.pop()
    assert args[7:10] == (where(g.a), where(g.b), where(g.c)), g
    assert kw["accumulate"] == g.accumulate and kw["dtype"] == "float32", (g, kw)
packed = []
backend.CudaProgram.kernel_closure = lambda self, name, grid, ptrs, n, block=256: \
    packed.append(ptrs) or (lambda rc: None)
for k in kernels:
    prog.closure(k, env)
    assert packed.pop() == tuple(where(r) for r in k.args), k
print("OK")
'''


def test_offsets_and_accumulate_reach_the_launches() -> None:
    """The backend resolves a part of a buffer (``Ref.offset``) to its address for GEMMs and
    kernels, and hands ``Gemm.accumulate`` to cuBLAS (beta = 1): a mock pycuda program."""
    from .mock_pycuda import run_with_mock_pycuda
    run_with_mock_pycuda(LAUNCH_SCRIPT)
