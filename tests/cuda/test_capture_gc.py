"""Stream capture pauses the cyclic collector (a GPU array it frees mid-capture would call
cuMemFree, which invalidates the capture), and gives it back afterwards, also on errors."""
from __future__ import annotations

import gc

import pytest

from symgraph.runtime.cuda import graphs


class FakeDriver:
    """The five driver calls CudaGraph makes, each answering success."""

    def __getattr__(self, name: str):
        return lambda *args: 0


@pytest.fixture
def fake_driver(monkeypatch):
    monkeypatch.setattr(graphs, "_LIB", FakeDriver())


@pytest.mark.parametrize("was_enabled", [True, False])
def test_collector_paused_while_recording(fake_driver, was_enabled: bool) -> None:
    seen = []
    (gc.enable if was_enabled else gc.disable)()
    try:
        graphs.CudaGraph(0, lambda: seen.append(gc.isenabled()))
        assert seen == [False]
        assert gc.isenabled() is was_enabled
    finally:
        gc.enable()


def test_collector_back_after_a_failed_record(fake_driver) -> None:
    def record() -> None:
        raise RuntimeError("launch failed")

    assert gc.isenabled()
    with pytest.raises(RuntimeError, match="launch failed"):
        graphs.CudaGraph(0, record)
    assert gc.isenabled()
