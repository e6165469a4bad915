"""Checkpoints whose attributes hold inf or nan save AND load, and compute the same.

References are numpy in float64 on the same inputs, never symgraph's own output.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

import numpy as np
import pytest

import symgraph as sg

S = sg.sym
INF, NAN = float("inf"), float("nan")
X = np.array([[-3.0, -0.5, 0.0], [0.25, 2.0, 1e30]])

# name: (graph of x, float64 reference of x)
CASES: dict[str, tuple[Callable, Callable]] = {
    "clip_a_max_inf": (lambda x: S.clip(x, a_min=0.0, a_max=INF), lambda x: np.clip(x, 0, None)),
    "clip_a_min_-inf": (lambda x: S.clip(x, a_min=-INF, a_max=1.0),
                        lambda x: np.clip(x, None, 1.0)),
    "plus_inf": (lambda x: x + INF, lambda x: x + np.inf),
    "minus_-inf": (lambda x: x - (-INF), lambda x: x + np.inf),
    "times_nan": (lambda x: x * NAN, lambda x: x * np.nan),
    "rminus_inf": (lambda x: INF - x, lambda x: np.inf - x),
    "div_inf": (lambda x: x / INF, lambda x: x / np.inf),
    "chain": (lambda x: S.clip(x * 2.0, a_min=-INF, a_max=INF) + 1.0,
              lambda x: x * 2.0 + 1.0),
}


def _forward(sym: S.Symbol, x: np.ndarray) -> np.ndarray:
    exe = sym.bind(sg.cpu(), {"x": sg.nd.array(x)}, grad_req="null")
    return exe.forward()[0].asnumpy()


@pytest.mark.parametrize("case", sorted(CASES))
def test_checkpoint_with_nonfinite_attrs_round_trips(case: str, tmp_path: Path) -> None:
    build, ref = CASES[case]
    sym = build(S.var("x"))
    prefix = str(tmp_path / case)
    sg.model.save_checkpoint(prefix, 1, sym, {}, {})
    loaded, arg, aux = sg.model.load_checkpoint(prefix, 1)
    assert (arg, aux) == ({}, {})
    assert loaded.tojson() == sym.tojson()  # identical text: the values survive exactly
    with np.errstate(all="ignore"):
        want = ref(X).astype(np.float32)
    np.testing.assert_array_equal(_forward(loaded, X), want)  # nan == nan for assert_array_equal


def test_json_spellings_of_nonfinite_values() -> None:
    """MXNet and C++ streams write inf/-inf/nan; Python writes inf; all load."""
    text = sg.sym.clip(S.var("x"), a_min=0.0, a_max=1.0).tojson()
    for a_min, a_max, want_lo, want_hi in (("-inf", "inf", -np.inf, np.inf),
                                           ("-Infinity", "+inf", -np.inf, np.inf),
                                           ("0", "INF", 0.0, np.inf)):
        doc = json.loads(text)
        doc["nodes"][1]["attrs"].update(a_min=a_min, a_max=a_max)
        sym = sg.sym.load_json(json.dumps(doc))
        assert sym.attr("a_min") == str(want_lo) and sym.attr("a_max") == str(want_hi)
    doc = json.loads(text)
    doc["nodes"][1]["attrs"]["a_max"] = "nan"
    assert np.isnan(float(sg.sym.load_json(json.dumps(doc)).attr("a_max")))


def test_nonfinite_in_an_integer_attribute_names_node_and_attr() -> None:
    doc = json.loads(sg.sym.FullyConnected(S.var("x"), num_hidden=4, name="fc1").tojson())
    doc["nodes"][-1]["attrs"]["num_hidden"] = "inf"
    text = json.dumps(doc)
    with pytest.raises(sg.GraphError, match=r"fc1 \(FullyConnected\): attribute num_hidden"):
        sg.sym.load_json(text)
    assert json.loads(text) == doc  # the caller's text is untouched


def test_bare_json_nan_token_is_refused_with_graph_error(tmp_path: Path) -> None:
    """``NaN`` unquoted is not JSON; symgraph never writes it and refuses it by name."""
    f = tmp_path / "bad-symbol.json"
    text = sg.sym.clip(S.var("x"), a_min=0.0, a_max=1.0).tojson().replace('"1.0"', "NaN")
    f.write_text(text)
    with pytest.raises(sg.GraphError, match=f"{f}.*NaN is not JSON"):
        sg.sym.load(str(f))
    assert f.read_text() == text


def test_python_api_accepts_the_same_spellings() -> None:
    sym = S.clip(S.var("x"), a_min="-inf", a_max="inf")
    np.testing.assert_array_equal(_forward(sym, X), X.astype(np.float32))
