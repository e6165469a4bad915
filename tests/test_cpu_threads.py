"""``SYMGRAPH_CPU_THREADS``: the CPU backend's BLAS thread budget, set around each program's run
(as threadpoolctl sees it from inside the run) and given back after it."""
from __future__ import annotations

import os

import numpy as np
import pytest

import symgraph as sg
from symgraph.core import config
from symgraph.runtime.backend.threads import blas_threads, cpu_threads

threadpoolctl = pytest.importorskip("threadpoolctl")

SEEN: list[int] = []


def blas_counts() -> list[int]:
    """Thread counts of the loaded BLAS libraries, by threadpoolctl's own fresh scan."""
    return [i["num_threads"] for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"]


class _Probe(sg.operator.CustomOp):
    """Identity that records the BLAS thread count while the program runs."""

    def forward(self, is_train, req, in_data, out_data, aux):
        SEEN.extend(blas_counts())
        self.assign(out_data[0], req[0], in_data[0].asnumpy())


@sg.operator.register("test_blas_probe")
class _ProbeProp(sg.operator.CustomOpProp):
    def create_operator(self, ctx, in_shapes, in_dtypes):
        return _Probe()


def run_probe() -> np.ndarray:
    x = sg.sym.var("x")
    net = sg.sym.dot(sg.sym.Custom(x, op_type="test_blas_probe"), x)
    data = np.arange(16, dtype=np.float32).reshape(4, 4)
    exe = net.bind(sg.cpu(), {"x": sg.nd.array(data)})
    SEEN.clear()
    return exe.forward()[0].asnumpy()


@pytest.mark.parametrize("text", ["0", "-1", "two", "1.5", "2 threads"])
def test_bad_values_are_refused_by_name(monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    monkeypatch.setenv("SYMGRAPH_CPU_THREADS", text)
    with pytest.raises(sg.AttrError, match=f"SYMGRAPH_CPU_THREADS={text!r}.*integer >= 1"):
        cpu_threads()
    before = blas_counts()
    with pytest.raises(sg.AttrError, match="SYMGRAPH_CPU_THREADS"):
        run_probe()  # refused before any thread count changes
    assert blas_counts() == before and SEEN == []


def test_default_leaves_one_of_the_process_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SYMGRAPH_CPU_THREADS", raising=False)
    assert cpu_threads() == max(1, len(os.sched_getaffinity(0)) - 1)
    for cores, budget in ((set(range(8)), 7), ({3}, 1), ({0, 5}, 1)):
        monkeypatch.setattr(os, "sched_getaffinity", lambda pid, c=cores: c)
        assert cpu_threads() == budget
    monkeypatch.setenv("SYMGRAPH_CPU_THREADS", "3")
    assert cpu_threads() == 3 and config.get("SYMGRAPH_CPU_THREADS") == 3


@pytest.mark.parametrize("outside,budget", [(2, 1), (1, 2)])
def test_limit_holds_inside_a_run_and_is_given_back(monkeypatch: pytest.MonkeyPatch,
                                                    outside: int, budget: int) -> None:
    monkeypatch.setenv("SYMGRAPH_CPU_THREADS", str(budget))
    with threadpoolctl.threadpool_limits(outside, user_api="blas"):
        before = blas_counts()
        assert before and set(before) == {outside}
        out = run_probe()
        assert SEEN and set(SEEN) == {budget}
        assert blas_counts() == before
    data = np.arange(16, dtype=np.float64).reshape(4, 4)
    np.testing.assert_allclose(out, data @ data, rtol=1e-6)


def test_nested_runs_keep_the_first_setting_and_restore_once(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SYMGRAPH_CPU_THREADS", "2")
    with threadpoolctl.threadpool_limits(2, user_api="blas"):
        with blas_threads(1) as n:
            assert n == 1 and set(blas_counts()) == {1}
            run_probe()  # its own run must neither raise the count nor restore it early
            assert set(SEEN) == {1} and set(blas_counts()) == {1}
        assert set(blas_counts()) == {2}
