"""softmax and log_softmax over the last axis in blocks of rows (``runtime/cpu/rows.py``):
float64's values within rounding, the numpy reference's bit for bit, whatever the block
size; the other axes and attributes run the reference and say why."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import symgraph as sg
from symgraph.runtime.cpu import rows


def _run(op: str, x: np.ndarray, **attrs: object) -> tuple[np.ndarray, list]:
    sym = getattr(sg.sym, op)(sg.sym.var("x"), **attrs)
    exe = sym.bind(sg.cpu(), {"x": sg.nd.array(x, dtype=x.dtype)})
    out = exe.forward()[0].asnumpy()
    return out, [(s.op, s.why) for s in getattr(exe._infer.program, "_info", [])]


def _float64(op: str, x: np.ndarray, axis: int) -> np.ndarray:
    z = x.astype(np.float64)
    z = z - z.max(axis=axis, keepdims=True)
    lse = np.log(np.exp(z).sum(axis=axis, keepdims=True))
    return z - lse if op == "log_softmax" else np.exp(z - lse)


@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("block", [64, rows.BLOCK_BYTES])
def test_rows_match_float64_and_the_reference_bit_for_bit(
        compiled: Path, monkeypatch: pytest.MonkeyPatch, op: str, dtype: str,
        block: int) -> None:
    monkeypatch.setattr(rows, "BLOCK_BYTES", block)  # 64 bytes: blocks of 1-2 rows
    x = (np.random.default_rng(0).standard_normal((5, 7, 13)) * 30).astype(dtype)
    got, steps = _run(op, x)
    assert (op, "") in steps  # compiled
    np.testing.assert_allclose(got, _float64(op, x, -1),
                               rtol=1e-5 if dtype == "float32" else 1e-13, atol=1e-6)
    monkeypatch.setenv("SYMGRAPH_CPU", "numpy")
    want, _ = _run(op, x)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("attrs,why", [
    ({"axis": 0}, "axis 0 of 2 (compiled rows: the last)"),
    ({"temperature": 2.0}, "temperature=2.0 (compiled rows: none)"),
])
def test_other_softmaxes_run_the_reference_and_say_why(compiled: Path, attrs: dict,
                                                       why: str) -> None:
    x = np.random.default_rng(1).standard_normal((4, 6)).astype(np.float32)
    got, steps = _run("log_softmax", x, **attrs)
    assert ("log_softmax", why) in steps
    scaled = x / attrs.get("temperature", 1.0)
    np.testing.assert_allclose(got, _float64("log_softmax", scaled, attrs.get("axis", -1)),
                               rtol=1e-5, atol=1e-6)


def _train(op: str, x: np.ndarray, dy: np.ndarray, **attrs: object) -> tuple[np.ndarray, list]:
    """x's gradient of ``sum(op(x) * dy)``, and the backward program's (op, why) steps."""
    sym = getattr(sg.sym, op)(sg.sym.var("x"), **attrs)
    grad = sg.nd.zeros(x.shape, dtype=x.dtype)
    exe = sym.bind(sg.cpu(), {"x": sg.nd.array(x, dtype=x.dtype)}, args_grad={"x": grad})
    exe.forward(is_train=True)
    exe.backward([sg.nd.array(dy, dtype=x.dtype)])
    return grad.asnumpy(), [(s.op, s.why) for s in getattr(exe._train.program, "_info", [])]


def _float64_grad(op: str, x: np.ndarray, dy: np.ndarray, axis: int) -> np.ndarray:
    """Central differences of sum(op(x) * dy) in float64 (the formulas not used: checked)."""
    x64, dy64, got = x.astype(np.float64), dy.astype(np.float64), np.zeros(x.shape)
    for i in np.ndindex(x.shape):
        e = np.zeros(x.shape)
        e[i] = 1e-6
        got[i] = ((_float64(op, x64 + e, axis) - _float64(op, x64 - e, axis)) * dy64).sum() / 2e-6
    return got


@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("block", [64, rows.BLOCK_BYTES])
def test_gradient_rows_match_differences_and_the_reference_bit_for_bit(
        compiled: Path, monkeypatch: pytest.MonkeyPatch, op: str, dtype: str,
        block: int) -> None:
    """softmax and log_softmax over the last axis differentiate to one ``_softmax_backward``
    row op (axis given as 2 of 3: the graph's types say it is the last)."""
    monkeypatch.setattr(rows, "BLOCK_BYTES", block)
    rng = np.random.default_rng(3)
    x = (rng.standard_normal((3, 4, 9)) * 3).astype(dtype)
    dy = rng.standard_normal(x.shape).astype(dtype)
    got, steps = _train(op, x, dy, axis=2)
    assert ("_softmax_backward", "") in steps and "sum" not in {o for o, _ in steps}, steps
    np.testing.assert_allclose(got, _float64_grad(op, x, dy, -1),
                               rtol=1e-4 if dtype == "float32" else 1e-7, atol=1e-5)
    monkeypatch.setenv("SYMGRAPH_CPU", "numpy")
    want, _ = _train(op, x, dy, axis=2)
    np.testing.assert_array_equal(got, want)


def test_softmax_backward_rows_both_forms_bit_for_bit(compiled: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """The op itself, both forms, over blocks of one row: the numpy reference's bits."""
    monkeypatch.setattr(rows, "BLOCK_BYTES", 16)
    rng = np.random.default_rng(4)
    y, dy = rng.standard_normal((6, 11)).astype(np.float32), rng.standard_normal((6, 11))
    for log in (False, True):
        sym = sg.sym._softmax_backward(sg.sym.var("y"), sg.sym.var("dy"), log=log)
        args = {"y": sg.nd.array(y), "dy": sg.nd.array(dy.astype(np.float32))}
        got = sym.bind(sg.cpu(), args).forward()[0].asnumpy()
        d64 = dy.astype(np.float32).astype(np.float64)
        y64 = y.astype(np.float64)
        want = (d64 - np.exp(y64) * d64.sum(-1, keepdims=True) if log
                else y64 * (d64 - (d64 * y64).sum(-1, keepdims=True)))
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)
        with monkeypatch.context() as m:
            m.setenv("SYMGRAPH_CPU", "numpy")
            np.testing.assert_array_equal(got, sym.bind(sg.cpu(), args).forward()[0].asnumpy())
