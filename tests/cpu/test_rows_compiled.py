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
