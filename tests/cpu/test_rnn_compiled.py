"""The compiled CPU backend's RNN (``runtime/cpu/rnn.py``) against the numpy reference
(``ops/rnn_cells``, itself checked against finite differences in ``tests/ops``), and its
float32 tanh (``render.py``'s ``sg_tanh``) against float64's."""
from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest

import symgraph as sg
from symgraph.compiler.ops import rnn_cells
from symgraph.compiler.ops.rnn_cells import GATES
from symgraph.core import expr as E
from symgraph.runtime.cpu import rnn as cpu_rnn

MODES = ("lstm", "gru", "rnn_tanh", "rnn_relu")


def _layer(mode: str, dtype: type, rng: np.random.Generator) -> tuple:
    t, n, i, h = 6, 3, 5, 4
    g = GATES[mode]
    w = tuple((rng.standard_normal(s) * 0.5).astype(dtype)
              for s in [(g * h, i), (g * h, h), (g * h,), (g * h,)])
    x = rng.standard_normal((t, n, i)).astype(dtype)
    h0 = rng.standard_normal((n, h)).astype(dtype)
    c0 = rng.standard_normal((n, h)).astype(dtype) if mode == "lstm" else None
    grads = [rng.standard_normal(s).astype(dtype) for s in [(t, n, h), (n, h), (n, h)]]
    return x, w, h0, c0, grads


def _both(module: object, mode: str, reverse: bool, case: tuple) -> list:
    x, w, h0, c0, (dout, dh, dc) = case
    out, h, c, tape = module.run(mode, x, h0, c0, w, reverse)
    gw, dx = [np.zeros_like(m) for m in w], np.zeros_like(x)
    dh0, dc0 = module.run_back(mode, dout, dh, dc if c0 is not None else None, tape, w, gw,
                               x, dx)
    return [out, h, dh0, dx] + gw + ([c, dc0] if c0 is not None else [])


@pytest.mark.parametrize("mode,reverse,dtype", itertools.product(
    MODES, (False, True), (np.float32, np.float64)))
def test_a_layer_and_its_gradients_match_the_reference(compiled: Path, mode: str,
                                                       reverse: bool, dtype: type) -> None:
    case = _layer(mode, dtype, np.random.default_rng(0))
    # the reference in float64 on the same (rounded) values
    wide = tuple(None if v is None else (v.astype(np.float64) if isinstance(v, np.ndarray)
                                         else tuple(a.astype(np.float64) for a in v))
                 for v in case[:4]) + ([g.astype(np.float64) for g in case[4]],)
    want = _both(rnn_cells, mode, reverse, wide)
    got = _both(cpu_rnn, mode, reverse, case)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    for k, (g, w) in enumerate(zip(got, want)):
        assert g.dtype == dtype, k
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol, err_msg=f"output {k}")


def test_the_tape_is_not_the_callers_arrays(compiled: Path) -> None:
    """The inputs and state arrays a layer is given come back unchanged after a backward."""
    x, w, h0, c0, (dout, dh, dc) = _layer("lstm", np.float32, np.random.default_rng(1))
    before = [a.copy() for a in (x, h0, c0, dout, dh, dc) + w]
    _, _, _, tape = cpu_rnn.run("lstm", x, h0, c0, w, False)
    cpu_rnn.run_back("lstm", dout, dh, dc, tape, w, [np.zeros_like(m) for m in w], x,
                     np.zeros_like(x))
    for a, b in zip((x, h0, c0, dout, dh, dc) + w, before):
        np.testing.assert_array_equal(a, b)


def _lstm_step(mode: str, dtype: str) -> list:
    """A training forward and backward of a 2-layer bidirectional RNN op bound on the
    current backend: its outputs and every input's gradient."""
    names = ["data", "p", "s"] + (["c"] if mode == "lstm" else [])
    sym = sg.sym.RNN(*map(sg.sym.var, names), state_size=8, num_layers=2, bidirectional=True,
                     mode=mode, state_outputs=True)
    exe = sym.simple_bind(sg.cpu(), data=(7, 3, 5), type_dict={n: dtype for n in names},
                          grad_req="write")
    rng = np.random.default_rng(2)
    for n in names:
        exe.arg_dict[n][:] = rng.standard_normal(exe.arg_dict[n].shape) * 0.5
    outs = [o.asnumpy() for o in exe.forward(is_train=True)]
    exe.backward([sg.nd.array(rng.standard_normal(o.shape), dtype=dtype) for o in outs])
    return outs + [exe.grad_dict[n].asnumpy() for n in names]


@pytest.mark.parametrize("mode,dtype", [("lstm", "float32"), ("lstm", "float64"),
                                        ("gru", "float32")])
def test_a_training_step_matches_the_numpy_backend(compiled: Path, mode: str, dtype: str,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    runs: list = []
    real = cpu_rnn.run
    monkeypatch.setattr(cpu_rnn, "run", lambda *a: (runs.append(1), real(*a))[1])
    got = _lstm_step(mode, dtype)
    assert len(runs) == 4  # each layer and direction once, compiled
    monkeypatch.setenv("SYMGRAPH_CPU", "numpy")
    want = _lstm_step(mode, dtype)
    assert len(runs) == 4
    tol = 1e-5 if dtype == "float32" else 1e-12
    for k, (g, w) in enumerate(zip(got, want)):
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol, err_msg=f"value {k}")


def test_the_op_runs_compiled_and_narrow_dtypes_say_why(compiled: Path) -> None:
    data, params, state, cell = (sg.sym.var(n) for n in ("data", "p", "s", "c"))
    sym = sg.sym.RNN(data, params, state, cell, state_size=4, num_layers=1, mode="lstm")
    for dtype, why in (("float32", ""), ("float16", "dtype float16 (compiled: float32, "
                                                    "float64)")):
        exe = sym.simple_bind(sg.cpu(), data=(3, 2, 5), type_dict={"data": dtype},
                              grad_req="write")
        steps = {s.op: s.why for s in exe._train.program._info}
        assert steps["RNN"] == why and steps["_backward_RNN"] == why


def test_float32_tanh_is_within_7_ulp(compiled: Path) -> None:
    from symgraph.runtime.cpu.backend import evaluate
    x = np.concatenate([np.linspace(-12, 12, 400_001), np.geomspace(1e-30, 1e-3, 1000),
                        [np.nan, np.inf, -np.inf, 0.0, -0.0]]).astype(np.float32)
    got = evaluate([E.call("tanh", E.inp(0))], [x], np.float32)[0]
    exact = np.tanh(x.astype(np.float64))
    finite = np.isfinite(exact) & (exact != 0)
    ulp = np.abs(got[finite] - exact[finite]) / np.spacing(
        np.abs(exact[finite]).astype(np.float32))
    assert ulp.max() <= 7.0
    assert np.abs(got[np.isfinite(got)]).max() <= 1.0
    assert np.isnan(got[-5]) and got[-4] == 1.0 and got[-3] == -1.0
    assert np.array_equal(np.signbit(got[-2:]), [False, True])
    # float64 kernels keep the library's tanh
    wide = evaluate([E.call("tanh", E.inp(0))], [x.astype(np.float64)], np.float64)[0]
    np.testing.assert_allclose(wide, exact, rtol=1e-15, atol=0, equal_nan=True)
