"""The compiled CPU backend's sums and means over leading axes (``cpu/reduce.py``: one BLAS
product) against float64 numpy, and the reductions left to numpy's with their reasons."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import symgraph as sg

S = sg.sym


def _run(op: str, x: np.ndarray, **attrs) -> tuple[np.ndarray, list]:
    exe = getattr(S, op)(S.var("x"), name="r", **attrs).bind(
        sg.cpu(), {"x": sg.nd.array(x, dtype=x.dtype)})
    out = exe.forward()[0].asnumpy()
    return out, [s.why for s in exe._infer.program.fallbacks() if s.op == op]


@pytest.mark.parametrize("op", ["sum", "mean"])
@pytest.mark.parametrize("shape,attrs", [
    ((64, 7, 7, 32), {"axis": (0, 1, 2)}),  # a channels-last bias gradient
    ((300, 5), {"axis": 0}),
    ((8, 16, 3, 2), {"axis": (0, 1), "keepdims": True}),
    ((100, 4, 6), {"axis": 2, "exclude": True})], ids=str)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_leading_axes_match_float64(compiled: Path, op: str, shape: tuple, attrs: dict,
                                    dtype: str) -> None:
    x = np.random.default_rng(0).normal(size=shape).astype(dtype)
    got, slow = _run(op, x, **attrs)
    assert slow == [], slow  # compiled
    axis = attrs["axis"] if not attrs.get("exclude") else (0, 1)
    want = getattr(np, op)(x.astype(np.float64), axis=axis, keepdims=attrs.get("keepdims", False))
    assert got.dtype == np.dtype(dtype) and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=2e-6 if dtype == "float32" else 1e-12,
                               atol=1e-5 if dtype == "float32" else 1e-12)


@pytest.mark.parametrize("op,x,attrs,why", [
    ("sum", np.ones((64, 8), np.float32), {"axis": 1}, "leading axes only"),
    ("max", np.ones((64, 8), np.float32), {"axis": 0}, "leading axes only"),
    ("sum", np.ones((64, 8), np.float32), {}, "leading axes only"),  # every axis
    ("sum", np.ones((8, 8), np.float32), {"axis": 0}, "fewer than 64 rows"),
    ("sum", np.ones((64, 8), np.float16), {"axis": 0}, "in float16"),
    ("sum", np.ones((64, 8), np.int32), {"axis": 0}, "in int32")], ids=str)
def test_other_reductions_run_numpy_saying_why(compiled: Path, op: str, x: np.ndarray,
                                               attrs: dict, why: str) -> None:
    got, slow = _run(op, x, **attrs)
    assert len(slow) == 1 and why in slow[0], slow
    np.testing.assert_array_equal(got, getattr(np, op)(x, axis=attrs.get("axis")))
