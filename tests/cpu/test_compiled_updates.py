"""The optimizers' update rules on the compiled CPU backend (``cpu.backend.evaluate``): every
registered optimizer's steps on a parameter large enough to compile equal the numpy
references' (the same formulas, one kernel instead of a ufunc per operation), and small
parameters, formulas that do not read a full-size array, and the numpy backend keep numpy."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import symgraph as sg
from symgraph.core import expr as E
from symgraph.runtime import compile as C
from symgraph.runtime.cpu import backend

NAMES = sorted(n for n in sg.optimizer.Optimizer.opt_registry if n != "test")
EXTRA = {"sgd": {"momentum": 0.9}, "nag": {"momentum": 0.9}, "signum": {"momentum": 0.9},
         "lars": {"momentum": 0.9}, "groupadagrad": {"wd": 0.0}}  # (GroupAdaGrad: no wd)


def _steps(name: str, monkeypatch: pytest.MonkeyPatch, cpu: str) -> list[np.ndarray]:
    monkeypatch.setenv("SYMGRAPH_CPU", cpu)
    sg.random.seed(3)
    rng = np.random.default_rng(0)
    opt = sg.optimizer.create(name, **{"learning_rate": 0.05, "wd": 0.01, "rescale_grad": 0.5,
                                       **EXTRA.get(name, {})})
    w = sg.nd.array(rng.normal(size=(64, 80)).astype(np.float32))
    state = opt.create_state(0, w)
    out = []
    for _ in range(3):
        g = sg.nd.array(rng.normal(size=(64, 80)).astype(np.float32))
        opt.update(0, w, g, state)
        out.append(w.asnumpy().copy())
    return out


@pytest.mark.parametrize("name", NAMES)
def test_every_optimizer_steps_as_numpy_does(compiled: Path, monkeypatch: pytest.MonkeyPatch,
                                             name: str) -> None:
    calls: list = []
    real = backend.FusedStep.__call__
    in_place = backend.update_in_place
    monkeypatch.setattr(backend.FusedStep, "__call__",
                        lambda self, *a: (calls.append(self.stem), real(self, *a))[1])
    monkeypatch.setattr(backend, "update_in_place",
                        lambda *a: (calls.append("in place"), in_place(*a))[1])
    got = _steps(name, monkeypatch, "compiled")
    # (GroupAdaGrad's history is one value per row: not every formula is of the weight's
    # shape, so its rule stays numpy's; optimizers whose step is the rule alone update in
    # place, the others (norms, random draws) per parameter)
    assert bool({"formulas", "in place"} & set(calls)) == (name != "groupadagrad"), name
    want = _steps(name, monkeypatch, "numpy")
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=2e-6, atol=2e-7, err_msg=name)


def test_what_stays_numpy(compiled: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(backend, "MIN_ELEMENTS", 1000)
    f = E.inp(0) * E.inp(1) + 1.0
    big, small = np.ones((40, 40)), np.ones((10, 10))
    assert backend.evaluate([f], [big, big], np.float64)[0].sum() == 3200.0
    assert any(v is not None for v in backend._FORMULAS.values())  # a kernel was made
    before = set(backend._FORMULAS)
    backend.evaluate([f], [small, small], np.float64)  # under MIN_ELEMENTS
    backend.evaluate([E.inp(1) * 2.0, f], [big, np.float64(2.0)], np.float64)  # a scalar root
    backend.evaluate([f], [big.astype(np.int32), big], np.int32)  # not a float
    made = {k: v for k, v in backend._FORMULAS.items() if k not in before}
    assert len(made) == 3 and all(v is None for v in made.values())  # numpy's, decided once
    assert C.formula_evaluator() is backend.evaluate
    monkeypatch.setenv("SYMGRAPH_CPU", "numpy")
    assert C.formula_evaluator() is E.evaluate
