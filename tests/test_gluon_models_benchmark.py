"""``benchmarks/gluon_models.py``: its quick CPU mode prints every row of the table with the
ratio of its own medians and no recompilation after the first float32 step; the host-step
count finds the Host and Callback actions a training run executes (a Choice's library branch,
a Switch's train branch) in the engine's new GPU programs only."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from benchmarks import gluon_models
from symgraph.frontend.imperative.cache import ProgramCache
from symgraph.frontend.imperative.engine import ENGINE
from symgraph.runtime.cuda.actions import Callback, Choice, Host, Switch


def _rows(text: str) -> list[dict]:
    lines = [ln for ln in text.splitlines() if ln.startswith("|")]
    head = [c.strip() for c in lines[0].strip("|").split("|")]
    return [dict(zip(head, (c.strip() for c in ln.strip("|").split("|")))) for ln in lines[2:]]


def test_quick_cpu_run_prints_the_table(capsys: pytest.CaptureFixture) -> None:
    gluon_models.main(["--ctx", "cpu", "--quick", "--no-torch", "--repeats", "2"])
    rows = _rows(capsys.readouterr().out)
    assert [(r["workload"].split()[0], r["dtype"]) for r in rows] == [
        ("resnet50_v1", "float32"), ("resnet50_v1", "bfloat16"), ("LSTM", "float32")]
    for r in rows:
        g, m = float(r["Gluon ms/step"]), float(r["Module ms/step"])
        assert g > 0 and m > 0
        assert float(r["Gluon/Module"].rstrip("x")) == pytest.approx(g / m, rel=0.02)
        assert r["host steps"] == "n/a" and r["PyTorch eager"] == "-"
    assert all(r["compiles after step 1"] == "0" for r in rows if r["dtype"] == "float32")


def test_host_steps_counts_host_actions_of_new_gpu_programs(monkeypatch) -> None:
    def prog(actions):
        return SimpleNamespace(stage=SimpleNamespace(program=SimpleNamespace(actions=actions)),
                               nbytes=1)
    cache = ProgramCache()
    cache.put("old", prog([[Host(None)]]))
    cache.put("cpu", SimpleNamespace(stage=SimpleNamespace(program=object()), nbytes=1))
    monkeypatch.setattr(ENGINE, "programs", cache)
    assert gluon_models.host_steps({"old"}) is None  # no new GPU program
    cache.put("new", prog([[], [Choice((Host(None),), (Host(None),)),
                                Switch((Callback(None, None),), (Host(None),))]]))
    assert gluon_models.host_steps({"old"}) == 2
    assert gluon_models.host_steps(set()) == 3
