"""Measured convolution choices remembered on disk (``cuda/tune_cache``) and bounded by
``SYMGRAPH_AUTOTUNE``: checked on the CPU with fake timers and fake cuDNN engines; a second
"process" is a fresh cache object over the same folder."""
from __future__ import annotations

import json

import pytest

from symgraph.core import config
from symgraph.core.base import AttrError
from symgraph.runtime.cuda import cudnn, tune_cache
from symgraph.runtime.cuda.tune_cache import TuneCache, choice_key
from symgraph.compiler.ops.geometry import ConvWindow
from tests.cuda.mock_pycuda import run_with_mock_pycuda

IDENTITY = {"device": "NVIDIA H200", "cc": [9, 0], "driver": 12080, "cuda": [12, 8],
            "cudnn": 90800}


def window(**change) -> ConvWindow:
    base = dict(n=8, c=16, spatial=(14, 14), kernel=(3, 3), stride=(1, 1), pad=(1, 1),
                dilate=(1, 1), out=(14, 14), filters=32, groups=1)
    return ConvWindow(**{**base, **change})


def test_round_trip_and_second_process_measures_nothing(tmp_path) -> None:
    calls = []

    def timer() -> dict:
        calls.append(1)
        return {"legacy": 1}
    first = TuneCache(tmp_path)
    key = choice_key(IDENTITY, "cudnn-engine", window=window(), dtype="float32")
    assert first.remember(key, timer) == {"legacy": 1} and len(calls) == 1
    assert first.remember(key, timer) == {"legacy": 1} and len(calls) == 1
    doc = json.loads((tmp_path / tune_cache.FILE_NAME).read_text())
    assert doc == {"format": tune_cache.FORMAT, "entries": {key: {"legacy": 1}}}
    second = TuneCache(tmp_path)
    assert second.remember(key, timer) == {"legacy": 1} and len(calls) == 1
    assert list(tmp_path.iterdir()) == [tmp_path / tune_cache.FILE_NAME]  # no temp file left


def test_processes_writing_side_by_side_keep_each_others_entries(tmp_path) -> None:
    a, b = TuneCache(tmp_path), TuneCache(tmp_path)
    a.get("x")  # both loaded before either wrote
    b.get("x")
    a.put("ka", 1)
    b.put("kb", 2)
    assert (TuneCache(tmp_path).get("ka"), TuneCache(tmp_path).get("kb")) == (1, 2)


@pytest.mark.parametrize("damage", [b"{not json", b"\xff\xfe\x00", b'{"format": 99}', b"[]"])
def test_damaged_file_is_warned_once_measured_again_and_rewritten(tmp_path, damage) -> None:
    (tmp_path / tune_cache.FILE_NAME).write_bytes(damage)
    cache = TuneCache(tmp_path)
    with pytest.warns(RuntimeWarning, match="cannot be used") as got:
        assert cache.get("k") is None
        cache.put("k", "primary")  # re-reads the damaged file: no second warning
    assert len(got) == 1 and str(tmp_path) in str(got[0].message)
    assert TuneCache(tmp_path).get("k") == "primary"


def test_size_is_bounded_oldest_first(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(tune_cache, "MAX_ENTRIES", 3)
    cache = TuneCache(tmp_path)
    for i in range(5):
        cache.put(f"k{i}", i)
    fresh = TuneCache(tmp_path)
    assert [fresh.get(f"k{i}") for i in range(5)] == [None, None, 2, 3, 4]


def test_unwritable_folder_warns_and_keeps_the_choice(tmp_path) -> None:
    cache = TuneCache(tmp_path / "missing" / "deeper")
    with pytest.warns(RuntimeWarning, match="autotune cache"):
        cache.put("k", 1)
    assert cache.get("k") == 1


@pytest.mark.parametrize("change", [
    {"device": "NVIDIA H100"}, {"cc": [8, 0]}, {"driver": 12040}, {"cuda": [12, 4]},
    {"cudnn": 90100}])
def test_key_differs_with_device_and_libraries(change) -> None:
    assert choice_key(IDENTITY, "e", window=window()) != \
        choice_key({**IDENTITY, **change}, "e", window=window())


@pytest.mark.parametrize("change", [
    {"n": 16}, {"c": 8}, {"spatial": (28, 28)}, {"kernel": (1, 1)}, {"stride": (2, 2)},
    {"pad": (0, 0)}, {"dilate": (2, 2)}, {"filters": 64}, {"groups": 2},
    {"channel_last": True}])
def test_key_differs_with_geometry_and_layout(change) -> None:
    assert choice_key(IDENTITY, "e", window=window()) != \
        choice_key(IDENTITY, "e", window=window(**change))


def test_key_differs_with_dtype_kind_and_mode(monkeypatch) -> None:
    base = choice_key(IDENTITY, "e", kind="fwd", dtype="float32")
    assert base != choice_key(IDENTITY, "e", kind="fwd", dtype="bfloat16")
    assert base != choice_key(IDENTITY, "e", kind="data", dtype="float32")
    assert base != choice_key(IDENTITY, "other", kind="fwd", dtype="float32")
    monkeypatch.setenv("SYMGRAPH_AUTOTUNE", "full")
    assert base != choice_key(IDENTITY, "e", kind="fwd", dtype="float32")


def test_bad_mode_is_refused_by_name(monkeypatch) -> None:
    monkeypatch.delenv("SYMGRAPH_AUTOTUNE", raising=False)
    assert config.get("SYMGRAPH_AUTOTUNE") == "1"
    monkeypatch.setenv("SYMGRAPH_AUTOTUNE", "fast")
    with pytest.raises(AttrError, match="SYMGRAPH_AUTOTUNE='fast'.*0 \\| 1 \\| full"):
        tune_cache.policy()


def fake_plan(monkeypatch, tmp_path, engines: list) -> tuple:
    """A ConvPlan with no cuDNN behind it: ``_engines`` lists ``engines`` and counts its calls,
    workspaces are 0, the device identity is fixed and the cache lives in ``tmp_path``."""
    listed = []
    monkeypatch.setattr(cudnn, "identity", lambda device_id: IDENTITY)
    monkeypatch.setattr(tune_cache, "shared", lambda: TuneCache(tmp_path))
    p = object.__new__(cudnn.ConvPlan)
    p.device_id, p.keys, p.choice, p.ws, p.ms = 0, {}, {}, {}, {}
    monkeypatch.setattr(p, "_engines", lambda *a: listed.append(1) or list(engines),
                        raising=False)
    monkeypatch.setattr(p, "_workspace", lambda kind, algo: 0, raising=False)
    return p, listed


def test_mode_0_takes_the_graph_heuristic_first_and_times_nothing(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("SYMGRAPH_AUTOTUNE", "0")
    graph = (("graph", "call", "plan", (3, 0)), 64)
    p, _ = fake_plan(monkeypatch, tmp_path, [(("legacy", 1), 0), graph])
    found = {k: p._candidates(k, window(), {}, "float32", tune_cache.policy())
             for k in cudnn.KINDS}
    assert all(engines == [graph] for engines in found.values())
    p._measure(found, {}, "float32")  # with several candidates it would need pycuda here
    assert p.choice == {k: graph[0] for k in cudnn.KINDS} and p.ms == {}
    assert not (tmp_path / tune_cache.FILE_NAME).exists()


def test_remembered_engine_skips_listing_and_timing(monkeypatch, tmp_path) -> None:
    p, listed = fake_plan(monkeypatch, tmp_path, [(("legacy", 1), 0), (("legacy", 6), 0)])
    pol = tune_cache.policy()
    assert len(p._candidates("fwd", window(), {}, "float32", pol)) == 2 and len(listed) == 1
    TuneCache(tmp_path).put(p.keys["fwd"], cudnn.engine_id(("legacy", 6)))
    assert p._candidates("fwd", window(), {}, "float32", pol) == [(("legacy", 6), 0)]
    assert len(listed) == 1
    # a damaged entry is measured again
    TuneCache(tmp_path).put(p.keys["fwd"], {"graph": "nonsense"})
    assert len(p._candidates("fwd", window(), {}, "float32", pol)) == 2 and len(listed) == 2


def test_branch_choice_remembered_and_mode_0_untimed(tmp_path) -> None:
    """conv_choice.choose with a fake timer (it imports pycuda, so a mock stands in for it in
    a child interpreter)."""
    run_with_mock_pycuda(f'''
import os
from symgraph.runtime.cuda import conv_choice, tune_cache
from symgraph.runtime.cuda.actions import Choice, ConvCall, Ref
from symgraph.compiler.ops.geometry import ConvWindow
os.environ["SYMGRAPH_CACHE_DIR"] = {str(tmp_path)!r}
g = ConvWindow(n=2, c=4, spatial=(8, 8), kernel=(3, 3), stride=(1, 1), pad=(1, 1),
               dilate=(1, 1), out=(8, 8), filters=4, groups=1)
act = Choice((ConvCall("fwd", g, Ref("slot", 0), Ref("slot", 1), Ref("slot", 2)),), ())
timed = []
def timer(branch):
    timed.append(branch)
    return 2.0 if branch else 1.0   # the generated (empty) branch is faster
ident = lambda: {{"device": "fake"}}
def pick():
    return conv_choice.choose(act, lambda a: "plan", timer, ident)
os.environ["SYMGRAPH_AUTOTUNE"] = "0"
assert pick() == act.primary and timed == []
os.environ["SYMGRAPH_AUTOTUNE"] = "1"
assert pick() == act.fallback and len(timed) == 4   # 2 branches x 2 rounds
tune_cache._SHARED.clear()                          # a second process
assert pick() == act.fallback and len(timed) == 4
print("OK")
''')
