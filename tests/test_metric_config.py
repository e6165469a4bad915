"""``sg.metric.create`` from ``get_config`` (dict or JSON, MXNet's round trip), Accuracy on labels
given as a 2-d array; configs compared with MXNet 1.9.1's live."""
from __future__ import annotations

import json

import numpy as np
import pytest

import symgraph as sg
from symgraph.core.base import AttrError, DataError

from .mxnet_live import mxnet_json

SPECS = [["acc", [], {"axis": 0}], ["f1", [], {}], ["mcc", [], {}], ["perplexity", [-1], {}],
         ["pearsonr", [], {}], ["pcc", [], {}], ["nll_loss", [], {}], ["loss", [], {}],
         ["ce", [], {}], [["acc", "mae"], [], {}]]
UPDATABLE = ("perplexity", "nll_loss", "loss", "ce")  # (metrics of this test's batch)


def _batch():
    rng = np.random.default_rng(3)
    pred = rng.uniform(0.05, 1, (8, 4))
    return rng.integers(0, 4, 8).astype(np.float64), pred / pred.sum(1, keepdims=True)


@pytest.mark.parametrize("name,args,kwargs", SPECS, ids=str)
def test_round_trip_gives_the_same_metric(name, args, kwargs) -> None:
    first = sg.metric.create(name, *args, **kwargs)
    for config in (first.get_config(), json.dumps(first.get_config())):
        again = sg.metric.create(config)
        assert type(again) is type(first) and again.get_config() == first.get_config()
    label, pred = _batch()
    if name in UPDATABLE:
        again = sg.metric.create(json.dumps(first.get_config()))
        for m in (first, again):
            m.update([sg.nd.array(label)], [sg.nd.array(pred)])
        assert again.get() == first.get()


def test_bad_configs_are_refused() -> None:
    with pytest.raises(AttrError, match="expected a dict with a 'metric' key"):
        sg.metric.create('{"name": "acc"}')
    with pytest.raises(AttrError, match="not JSON"):
        sg.metric.create('{"metric": ')
    with pytest.raises(AttrError, match="no further arguments"):
        sg.metric.create({"metric": "Accuracy"}, 1)


def test_accuracy_with_2d_labels_counts_flattened_labels() -> None:
    pred = np.array([[0.3, 0.7], [0, 1.], [0.4, 0.6], [0.8, 0.2], [0.3, 0.5], [0.6, 0.4]])
    label = np.array([[0, 1, 1], [1, 0, 1]])
    acc = sg.metric.create("acc")
    acc.update([sg.nd.array(label)], [sg.nd.array(pred)])
    want = np.mean(np.argmax(pred, axis=1) == label.ravel())
    assert acc.get()[1] == pytest.approx(want)
    with pytest.raises(DataError, match="accuracy: 2 labels for 6 predictions"):
        acc.update([sg.nd.array([1, 0])], [sg.nd.array(pred)])
    assert acc.num_inst == 6  # the refused batch counted nothing


MX_SCRIPT = """
import json, sys
import mxnet as mx
specs = json.load(sys.stdin)
print(json.dumps([mx.metric.create(n, *a, **k).get_config() for n, a, k in specs]))
"""


@pytest.mark.mxnet
def test_configs_hold_mxnet_keys() -> None:
    specs = SPECS + [["top_k_accuracy", [3], {}]]
    mx = mxnet_json(MX_SCRIPT, specs)
    for (name, args, kwargs), theirs in zip(specs, mx):
        ours = sg.metric.create(name, *args, **kwargs).get_config()
        ours.pop("average", None)  # (ours also records F1/MCC/Pearson's averaging)
        for sub in ours.get("metrics", []):
            sub.pop("average", None)
        assert ours == theirs, name
