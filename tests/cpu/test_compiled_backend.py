"""The compiled CPU backend (symgraph/runtime/cpu): fused groups as one numba kernel each,
checked against numpy float64; fallbacks listed with reasons; the disk cache; the threads."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import symgraph as sg
from symgraph.core import expr as E
from symgraph.core.base import AttrError, ExecutionError, ShapeError
from symgraph.core.expr import PRIMS, evaluate
from symgraph.runtime import compile as C
from symgraph.runtime.cpu import kernels, pool
from symgraph.runtime.cpu.group import FusedStep, collapse
from symgraph.runtime.cpu.render import missing_prims

X_SHAPE, B_SHAPE = (4, 3, 5, 6), (1, 3, 1, 1)


def _stage(sym: sg.sym.Symbol, shapes: dict, dtype: str, wrt: tuple = ()) -> C.Stage:
    g = sym.graph()
    types = C.infer(g, shapes, {k: np.dtype(dtype) for k in shapes})
    return C.build_stage(g.with_types(types), list(wrt), bool(wrt), sg.cpu())


def _net() -> sg.sym.Symbol:
    x, b = sg.sym.var("x"), sg.sym.var("b")
    return sg.sym.tanh(sg.sym.relu(sg.sym.broadcast_add(x * 2.0, b)) - 0.5)


def _inputs(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    return rng.normal(size=X_SHAPE), rng.normal(size=B_SHAPE)


def _reference(x: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.tanh(np.maximum(x.astype(np.float64) * 2 + b, 0) - 0.5)


def _forward(sym: sg.sym.Symbol, arrays: dict, dtype: str) -> np.ndarray:
    exe = sym.bind(sg.cpu(), {k: sg.nd.array(v, dtype=dtype) for k, v in arrays.items()})
    return exe.forward()[0].asnumpy()


def test_a_fused_group_compiles_to_one_kernel(compiled: Path, rng: np.random.Generator) -> None:
    x, b = _inputs(rng)
    stage = _stage(_net(), {"x": X_SHAPE, "b": B_SHAPE}, "float32")
    prog = stage.program
    assert [s.op for s in prog.compiled_steps()] == ["_fused"] and prog.fallbacks() == []
    env, ctx = stage.start([{"x": sg.nd.array(x), "b": sg.nd.array(b)}], is_train=False)
    stage.run(env, ctx)
    assert len(prog.kernel_names()) == 1, prog.kernel_names()
    got = prog.read(env, stage.outputs[0])
    np.testing.assert_allclose(got, _reference(x, b), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype,tol", [("float32", 1e-5), ("float64", 1e-12),
                                       ("float16", 2e-3), ("bfloat16", 1.6e-2)])
def test_float_dtypes_match_float64(compiled: Path, rng: np.random.Generator, dtype: str,
                                    tol: float) -> None:
    x, b = _inputs(rng)
    got = _forward(_net(), {"x": x, "b": b}, dtype)
    assert got.dtype == np.dtype(dtype)  # stored narrow, computed in float32
    # the reference sees the inputs as rounded to ``dtype``
    xr, br = (v.astype(dtype).astype(np.float64) for v in (x, b))
    np.testing.assert_allclose(got.astype(np.float64), _reference(xr, br), rtol=tol, atol=tol)


def test_gradients_run_compiled_and_match_finite_differences(compiled: Path,
                                                             rng: np.random.Generator) -> None:
    x, b = _inputs(rng)
    x[np.abs(x * 2 + b) < 0.05] += 0.2  # away from relu's kink
    net = _net()
    exe = net.bind(sg.cpu(), {"x": sg.nd.array(x, dtype="float64"),
                              "b": sg.nd.array(b, dtype="float64")},
                   args_grad={"x": sg.nd.zeros(X_SHAPE, dtype="float64"),
                              "b": sg.nd.zeros(B_SHAPE, dtype="float64")})
    exe.forward(is_train=True)
    exe.backward(sg.nd.ones(X_SHAPE, dtype="float64"))
    eps = 1e-6
    numeric = (_reference(x, b + eps).sum((0, 2, 3)) - _reference(x, b - eps).sum((0, 2, 3)))
    np.testing.assert_allclose(exe.grad_dict["b"].asnumpy().ravel(), numeric / (2 * eps),
                               rtol=1e-6)


def test_fallbacks_are_listed_with_reasons(compiled: Path) -> None:
    x = sg.sym.var("x")
    net = sg.sym.softmax(sg.sym.erfinv(sg.sym.relu(x) * 0.5) + 1.0, axis=0)
    prog = _stage(net, {"x": (2, 3)}, "float32").program
    why = {s.op: s.why for s in prog.fallbacks()}
    assert why.get("softmax") == "axis 0 of 2 (compiled rows: the last)", why
    assert any("erfinv" in w for w in why.values()), why
    ints = _stage((sg.sym.var("x") + 1.0) * 3.0, {"x": (2, 3)}, "int32").program
    assert [("int32" in s.why) for s in ints.fallbacks()] == [True]


def test_small_groups_run_numpy(compiled: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from symgraph.runtime.cpu import backend
    monkeypatch.setattr(backend, "MIN_ELEMENTS", 16)
    small = _stage(sg.sym.hard_sigmoid(sg.sym.var("x")), {"x": (3, 5)}, "float32").program
    assert [("15 elements" in s.why) for s in small.fallbacks()] == [True]
    large = _stage(sg.sym.hard_sigmoid(sg.sym.var("x")), {"x": (4, 4)}, "float32").program
    assert [s.op for s in large.compiled_steps()] == ["hard_sigmoid"]


def test_a_lone_single_ufunc_runs_numpy(compiled: Path) -> None:
    prog = _stage(sg.sym.exp(sg.sym.var("x")), {"x": (64, 64)}, "float32").program
    assert [("one primitive (exp)" in s.why) for s in prog.fallbacks()] == [True]


def test_every_primitive_without_a_template_is_known() -> None:
    # erfinv and digamma have no numba form (math has neither): their groups run numpy
    assert sorted(n for n, p in PRIMS.items() if not p.py) == ["digamma", "erfinv"]
    assert missing_prims([E.call("digamma", E.inp(0)) + 1.0]) == ["digamma"]


def test_every_template_matches_the_numpy_reference(compiled: Path) -> None:
    """All primitives in one kernel (one compile), on values with NaN, infinities, signed
    zeros, halves and integers: each output equals the numpy reference bit for bit or
    within float rounding."""
    prims = [n for n, p in PRIMS.items() if p.py]
    exprs = [E.call(n, *[E.inp(k) for k in range(PRIMS[n].arity)]) for n in prims]
    a = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 0.5, -0.5, 1.5, -2.5, 3.0, -7.25, 0.3])
    b = np.array([2.0, -3.0, 0.0, np.nan, 1.0, -0.5, 0.0, 2.5, 2.0, -2.0, 0.75, -np.inf])
    c = np.array([1.0, 0.0, -1.0, 1.0, 0.0, 2.0, np.nan, 0.0, 1.0, 0.0, 3.0, 1.0])
    step = FusedStep(exprs, [a.shape] * len(exprs), "all_prims", "test", "float64")
    got = step(None, [a, b, c], None)
    with np.errstate(all="ignore"):
        want = evaluate(exprs, [a, b, c], np.float64)
    for name, g, w in zip(prims, got, want):
        np.testing.assert_allclose(g, w, rtol=1e-13, atol=0, equal_nan=True, err_msg=name)
        zeros = w == 0
        assert np.array_equal(np.signbit(g[zeros]), np.signbit(w[zeros])), name


def test_warm_load_reads_the_disk_cache(compiled: Path, rng: np.random.Generator) -> None:
    x, b = _inputs(rng)
    _forward(_net(), {"x": x, "b": b}, "float32")
    kernels.forget()  # as a new process: nothing loaded, the files and numba's cache kept
    got = _forward(_net(), {"x": x, "b": b}, "float32")
    hits, compiled_now = kernels.cache_stats()
    assert (hits, compiled_now) == (1, 0)
    assert list(compiled.glob("cpu/sg_fused_*.py")), "no kernel module in the cache folder"
    np.testing.assert_allclose(got, _reference(x, b), rtol=1e-5, atol=1e-6)


def test_threads_split_the_outer_axis(compiled: Path, rng: np.random.Generator,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    shape = (pool.GRAIN // 8 + 3, 3, 5, 6)  # more elements than one thread takes
    x, b = rng.normal(size=shape), rng.normal(size=B_SHAPE)
    monkeypatch.setenv("SYMGRAPH_CPU_THREADS", "3")
    calls: list = []
    real = pool.run_split

    def spy(kernel, n_outer, n_total, args):  # noqa: ANN001, ANN202
        calls.append(min(pool.cpu_threads(), n_outer, max(1, n_total // pool.GRAIN)))
        return real(kernel, n_outer, n_total, args)
    monkeypatch.setattr("symgraph.runtime.cpu.group.run_split", spy)
    got = _forward(_net(), {"x": x, "b": b}, "float32")
    assert calls == [3]
    np.testing.assert_allclose(got, _reference(x, b), rtol=1e-5, atol=1e-6)
    assert pool.slices(10, 3) == [(0, 4), (4, 7), (7, 10)]


def test_collapse_merges_axes_read_alike() -> None:
    cshape, ins, full = collapse((4, 3, 5, 6), [(4, 3, 5, 6), (1, 3, 1, 1), ()], "n (op)")
    assert cshape == (4, 3, 30)
    assert ins == [(4, 3, 30), (1, 3, 1), (1, 1, 1)]
    assert full[1] == (False, True, False)
    assert collapse((2, 1, 3), [(2, 1, 3)], "n")[0] == (6,)
    with pytest.raises(ShapeError, match=r"n \(op\): input of shape \(1, 4\) does not broadcast"):
        collapse((2, 3), [(1, 4)], "n (op)")


def test_bad_setting_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SYMGRAPH_CPU", "llvm")
    with pytest.raises(AttrError, match="SYMGRAPH_CPU.*llvm"):
        sg.config.get("SYMGRAPH_CPU")


def test_inputs_are_left_untouched(compiled: Path, rng: np.random.Generator) -> None:
    """A group writes over a head's temporary result, never over a bound array."""
    x, w = rng.normal(size=(4, 6)), rng.normal(size=(5, 6))
    xa, wa = sg.nd.array(x), sg.nd.array(w)
    net = sg.sym.relu(sg.sym.FullyConnected(sg.sym.var("x"), sg.sym.var("w"), num_hidden=5,
                                            no_bias=True)) * 3.0
    exe = net.bind(sg.cpu(), {"x": xa, "w": wa})
    got = exe.forward()[0].asnumpy()
    np.testing.assert_array_equal(xa.asnumpy(), x.astype(np.float32))
    np.testing.assert_array_equal(wa.asnumpy(), w.astype(np.float32))
    np.testing.assert_allclose(got, np.maximum(x @ w.T, 0) * 3, rtol=1e-5, atol=1e-5)


def test_a_kernel_that_fails_to_compile_names_the_step(compiled: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    from dataclasses import replace
    monkeypatch.setitem(PRIMS, "hypot", replace(PRIMS["hypot"], py="no_such_fn({0}, {1})"))
    x = np.ones((2, 3))
    step = FusedStep([E.call("hypot", E.inp(0), E.inp(0))], [x.shape], "bad", "h0 (_hypot)",
                     "float64")
    with pytest.raises(ExecutionError, match=r"h0 \(_hypot\): compiled CPU kernel sg_bad_f64_"):
        step(None, [x], None)
    np.testing.assert_array_equal(x, 1.0)


def test_without_numba_the_default_is_numpy_said_once(monkeypatch: pytest.MonkeyPatch) -> None:
    import functools
    import importlib.util

    from symgraph.runtime import compile as C
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "numba" else real(name, *a))
    # a fresh cache of the lookup, for this test only (monkeypatch puts the real one back)
    monkeypatch.setattr(C, "_numba_installed",
                        functools.lru_cache(maxsize=1)(C._numba_installed.__wrapped__))
    monkeypatch.setattr(C, "_NO_NUMBA_SAID", [])
    monkeypatch.delenv("SYMGRAPH_CPU", raising=False)
    with pytest.warns(RuntimeWarning, match="numba is not installed"):
        assert C._cpu_backend().__name__.endswith("numpy_backend")
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # said once
        assert C._cpu_backend().__name__.endswith("numpy_backend")
    monkeypatch.setenv("SYMGRAPH_CPU", "compiled")  # asked for by name: the kernels' error
    assert C._cpu_backend().__name__.endswith("cpu.backend")
