"""Every parameter's optimizer step in one compiled call, in place (``training/optimizer_inplace``
over ``runtime/cpu/update.py``): the values of the numpy backend's per-parameter path, for
every optimizer whose step is its rule alone; the cases it leaves to that path; pending
imperative work reading a weight sees the old value."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import symgraph as sg
from symgraph.runtime.cpu import backend, update
from symgraph.training.optimizer import Optimizer


def _plain(opt: Optimizer) -> bool:
    """Whether ``opt``'s step is its rule's formulas alone (the in-place path's optimizers)."""
    return opt.rule is not None and type(opt)._step is Optimizer._step


PLAIN = sorted(n for n in Optimizer.opt_registry if _plain(sg.optimizer.create(n)))
KWARGS = {"sgd": {"momentum": 0.9, "wd": 1e-3}, "nag": {"momentum": 0.9},
          "signum": {"momentum": 0.9}, "dcasgd": {"momentum": 0.9}}
# one element, a few, above cpu.group.MIN_ELEMENTS; more parameters than one chunk
SHAPES = [(1,), (3, 5), (70, 80), (4,), (2, 3, 4), (9,), (5000,), (7, 7), (2,), (6, 5)]


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list:
    """The in-place kernel's calls (a spy on the backend's entry)."""
    seen: list = []

    def spy(formulas, groups, scalars):  # noqa: ANN001 (the backend's signature)
        seen.append(len(groups))
        return update.update_in_place(formulas, groups, scalars)
    monkeypatch.setattr(backend, "update_in_place", spy)
    return seen


def _steps(name: str, dtypes: list, steps: int = 3) -> list[np.ndarray]:
    """Weights and states after ``steps`` of ``update_multi`` over :data:`SHAPES`."""
    rng = np.random.default_rng(5)
    opt = sg.optimizer.create(name, learning_rate=0.05, rescale_grad=0.5,
                              **KWARGS.get(name, {}))
    ws = [sg.nd.array(rng.standard_normal(s), dtype=dt) for s, dt in zip(SHAPES, dtypes)]
    states = [opt.create_state(i, w) for i, w in enumerate(ws)]
    for _ in range(steps):
        gs = [sg.nd.array(rng.standard_normal(w.shape), dtype=w.dtype) for w in ws]
        opt.update_multi(list(range(len(ws))), ws, gs, states)
    return [w.asnumpy() for w in ws] + [np.asarray(s) for st in states for s in st]


@pytest.mark.parametrize("name", PLAIN)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_one_call_matches_the_numpy_path(compiled: Path, monkeypatch: pytest.MonkeyPatch,
                                         calls: list, name: str, dtype: str) -> None:
    got = _steps(name, [dtype] * len(SHAPES))
    assert calls == [len(SHAPES)] * 3  # one call per step, for every parameter
    monkeypatch.setenv("SYMGRAPH_CPU", "numpy")
    want = _steps(name, [dtype] * len(SHAPES))
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=2e-6 if dtype == "float32" else 1e-14,
                                   atol=1e-7)


def test_mixed_dtypes_and_narrow_weights_go_one_by_one(
        compiled: Path, monkeypatch: pytest.MonkeyPatch, calls: list) -> None:
    mixed = ["float32", "float64"] * (len(SHAPES) // 2)
    got = _steps("adam", mixed)
    assert calls == []
    monkeypatch.setenv("SYMGRAPH_CPU", "numpy")
    for g, w in zip(got, _steps("adam", mixed)):
        np.testing.assert_allclose(g, w, rtol=2e-6, atol=1e-7)
    opt = sg.optimizer.create("sgd", momentum=0.9, multi_precision=True)
    w = sg.nd.array(np.ones(4), dtype="float16")
    state = opt.create_state(0, w)
    opt.update_multi([0], [w], [sg.nd.array(np.ones(4), dtype="float16")], [state])
    assert calls == [] and w.asnumpy().tolist() == [float(np.float16(0.99))] * 4


def test_pending_work_reading_a_weight_sees_the_old_value(compiled: Path,
                                                          calls: list) -> None:
    w, g = sg.nd.array(np.full(3, 2.0)), sg.nd.array(np.ones(3))
    doubled = w * 3.0  # recorded, not computed yet
    opt = sg.optimizer.create("sgd", learning_rate=0.5)
    opt.update_multi([0], [w], [g], [opt.create_state(0, w)])
    assert calls == [1]
    assert w.asnumpy().tolist() == [1.5] * 3 and doubled.asnumpy().tolist() == [6.0] * 3
