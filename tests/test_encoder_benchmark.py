"""``benchmarks/encoder_step.py``: the encoder symbol computes a post-LayerNorm Transformer
encoder (checked against a float64 numpy one with the same weights), and the quick CPU run
prints its row."""
from __future__ import annotations

import math

import numpy as np
import pytest

import symgraph as sg
from benchmarks import encoder_step as E


def _reference(w: dict, x: np.ndarray, s: E.Sizes) -> float:
    """The encoder's loss in float64 numpy (erf GELU, LayerNorm eps 1e-5 as MXNet's)."""
    erf = np.vectorize(math.erf)

    def fc(h: np.ndarray, name: str) -> np.ndarray:
        return h @ w[name + "_weight"].T + w[name + "_bias"]

    def ln(h: np.ndarray, name: str) -> np.ndarray:
        mu, var = h.mean(-1, keepdims=True), h.var(-1, keepdims=True)
        return (h - mu) / np.sqrt(var + 1e-5) * w[name + "_gamma"] + w[name + "_beta"]

    b, t, d = x.shape
    for i in range(s.layers):
        p = f"l{i}_"
        q, k, v = (fc(x, p + n).reshape(b, t, s.heads, -1).transpose(0, 2, 1, 3) for n in "qkv")
        a = q @ k.transpose(0, 1, 3, 2) / math.sqrt(d // s.heads)
        a = np.exp(a - a.max(-1, keepdims=True))
        a /= a.sum(-1, keepdims=True)
        ctx = (a @ v).transpose(0, 2, 1, 3).reshape(b, t, d)
        x = ln(x + fc(ctx, p + "o"), p + "ln1")
        h = fc(x, p + "ff1")
        h = 0.5 * h * (1 + erf(h / math.sqrt(2)))
        x = ln(x + fc(h, p + "ff2"), p + "ln2")
    return float((x ** 2).mean())


def test_encoder_symbol_is_the_encoder() -> None:
    s = E.QUICK
    sym = E.encoder_symbol(s)
    exe = sym.simple_bind(sg.cpu(), grad_req="null", data=(s.batch, s.seq, s.model))
    rng = np.random.default_rng(0)
    w = {}
    for name, arr in exe.arg_dict.items():
        w[name] = rng.normal(size=arr.shape) * (1.0 if name == "data" else 0.3)
        arr[:] = w[name]
    w = {k: v.astype(np.float32).astype(np.float64) for k, v in w.items()}
    (got,) = exe.forward(is_train=False)[0].asnumpy().reshape(-1)
    assert got == pytest.approx(_reference(w, w["data"], s), rel=1e-4)


def test_quick_run_prints_the_float32_row(capsys: pytest.CaptureFixture) -> None:
    E.main(["--quick", "--no-torch"])
    rows = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("| fp32")]
    assert len(rows) == 1 and float(rows[0].split("|")[2]) > 0
