"""``Program.time_steps`` on the numpy backend: one row per step, and ``repeat`` runs each step
that many times and reports the mean."""
from __future__ import annotations

import symgraph as sg
from symgraph.runtime.backend import numpy_backend
from symgraph.core.registry import RunCtx


def test_repeat_runs_each_step_that_often(monkeypatch) -> None:
    x = sg.sym.var("x")
    exe = sg.sym.exp(sg.sym.relu(x) * 2.0).simple_bind(sg.cpu(), x=(3, 4))
    exe.forward(is_train=True)
    exe.backward(sg.nd.ones((3, 4)))
    prog, stage = exe._train.program, exe._train
    calls: list[int] = []
    real = numpy_backend.NumpyProgram._step
    monkeypatch.setattr(numpy_backend.NumpyProgram, "_step",
                        lambda self, env, k, ctx: (calls.append(k), real(self, env, k, ctx)))
    n = len(stage.schedule.steps)
    rows = prog.time_steps(exe._env, 0, n, RunCtx(is_train=True), repeat=3)
    assert [r[0] for r in rows] == list(range(n))
    assert calls == [k for k in range(n) for _ in range(3)]
    assert all(r[3] >= 0 for r in rows)
    assert [r[1] for r in rows] == [s.node.op for s in stage.schedule.steps]
