"""MXNet 1.x metrics of metric_extra and the global/local statistics: hand-computed values,
and MXNet 1.9.1 run live on the same batches (marked ``mxnet``)."""
from __future__ import annotations

import math

import numpy as np
import pytest

import symgraph as sg
from symgraph.core.base import AttrError, DataError

from .mxnet_live import mxnet_json


def _batches(kind: str, seed: int = 0) -> list[tuple[list, list]]:
    """Three updates of (labels, preds) for a metric kind."""
    rng = np.random.default_rng(seed)
    out = []
    for n in (6, 5, 7):
        if kind == "binary":
            label = rng.integers(0, 2, n).astype(np.float32)
            pred = rng.random((n, 2)).astype(np.float32)
        elif kind == "classes":
            label = rng.integers(0, 4, n).astype(np.float32)
            pred = rng.random((n, 4)).astype(np.float32)
            pred /= pred.sum(axis=1, keepdims=True)
        else:
            label = rng.normal(size=n).astype(np.float32)
            pred = (label + rng.normal(scale=0.5, size=n)).astype(np.float32)
        out.append(([label], [pred]))
    return out


CASES = {  # name: (create args, batch kind)
    "f1": ({"metric": "f1"}, "binary"),
    "f1_micro": ({"metric": "f1", "average": "micro"}, "binary"),
    "mcc": ({"metric": "mcc"}, "binary"),
    "mcc_micro": ({"metric": "mcc", "average": "micro"}, "binary"),
    "perplexity": ({"metric": "perplexity", "ignore_label": 2}, "classes"),
    "mae": ({"metric": "mae"}, "real"),
    "mse": ({"metric": "mse"}, "real"),
    "rmse": ({"metric": "rmse"}, "real"),
    "nll": ({"metric": "nll_loss"}, "classes"),
    "pearsonr": ({"metric": "pearsonr"}, "real"),
    "pearsonr_micro": ({"metric": "pearsonr", "average": "micro"}, "real"),
    "pcc": ({"metric": "pcc"}, "classes"),
    "torch": ({"metric": "torch"}, "real"),
    "caffe": ({"metric": "caffe"}, "real"),
    "acc": ({"metric": "acc"}, "classes"),
}


def _values(case: str) -> list:
    """local value after update 2, then (after reset_local and update 3) local and global."""
    args, kind = CASES[case]
    args = dict(args)
    m = sg.metric.create(args.pop("metric"), **args)
    b = _batches(kind)
    m.update(*b[0])
    m.update(*b[1])
    first = m.get()[1]
    m.reset_local()
    m.update(*b[2])
    return [first, m.get()[1], m.get_global()[1]]


def test_hand_computed_scores() -> None:
    label = [sg.nd.array([1, 0, 1, 1, 0])]
    pred = [sg.nd.array([[0.2, 0.8], [0.6, 0.4], [0.7, 0.3], [0.1, 0.9], [0.3, 0.7]])]
    f1, mcc = sg.metric.create("f1"), sg.metric.create("mcc")
    f1.update(label, pred)
    mcc.update(label, pred)
    tp, fp, fn, tn = 2, 1, 1, 1
    assert f1.get() == ("f1", pytest.approx(2 * (2 / 3) * (2 / 3) / (4 / 3)))
    assert mcc.get()[1] == pytest.approx((tp * tn - fp * fn) / math.sqrt(3 * 3 * 2 * 2))
    ppl = sg.metric.Perplexity(ignore_label=None)
    ppl.update([np.array([0, 1])], [np.array([[0.5, 0.5], [0.2, 0.8]])])
    assert ppl.get()[1] == pytest.approx(math.exp(-(math.log(0.5) + math.log(0.8)) / 2))
    # MXNet picks in 'clip' mode: label 2 of two classes reads class 1; -1 is ignored
    ppl = sg.metric.Perplexity(ignore_label=-1)
    ppl.update([np.array([2, -1, 0])], [np.array([[0.3, 0.7], [0.5, 0.5], [0.9, 0.1]])])
    assert ppl.get()[1] == pytest.approx(math.exp(-(math.log(0.7) + math.log(0.9)) / 2))
    rmse = sg.metric.create("rmse")
    rmse.update([np.array([1.0, 2.0])], [np.array([2.0, 4.0])])
    assert rmse.get()[1] == pytest.approx(math.sqrt(2.5))
    pr = sg.metric.PearsonCorrelation()
    x, y = np.array([1.0, 2.0, 4.0]), np.array([1.0, 3.0, 2.0])
    pr.update([y], [x])
    xc, yc = x - x.mean(), y - y.mean()
    assert pr.get()[1] == pytest.approx(xc @ yc / math.sqrt((xc @ xc) * (yc @ yc)))


def test_global_and_local_statistics() -> None:
    m = sg.metric.create("mae")
    m.update([np.array([1.0])], [np.array([3.0])])
    m.reset_local()
    m.update([np.array([1.0])], [np.array([2.0])])
    assert m.get()[1] == 1.0 and m.get_global()[1] == 1.5
    assert m.get_global_name_value() == [("mae", 1.5)]
    m.update_dict({"lab": np.array([0.0])}, {"out": np.array([4.0])})
    assert m.get()[1] == 2.5
    comp = sg.metric.create(["mae", "rmse"])
    comp.update([np.array([0.0, 0.0])], [np.array([3.0, 4.0])])
    assert comp.get_global() == (["mae", "rmse"], [3.5, pytest.approx(math.sqrt(12.5))])
    assert comp.get_config()["metrics"][0]["metric"] == "MAE"


def test_custom_metric_and_np() -> None:
    m = sg.metric.np(lambda label, pred: (float(np.abs(label - pred).sum()), label.size))
    assert m.name == "custom(<lambda>)"
    m.update([np.array([1.0, 2.0])], [np.array([2.0, 2.0])])
    m.update([np.array([0.0])], [np.array([3.0])])
    assert m.get()[1] == pytest.approx(4.0 / 3)
    with pytest.raises(AttrError, match="cannot be serialized"):
        m.get_config()


def test_bad_input_is_a_typed_error() -> None:
    f1 = sg.metric.create("f1")
    with pytest.raises(DataError, match="not binary"):
        f1.update([np.array([0, 1, 2])], [np.ones((3, 2))])
    assert f1.num_inst == 0
    with pytest.raises(DataError, match="no array named"):
        sg.metric.MAE(label_names=["x"]).update_dict({"y": np.ones(1)}, {"o": np.ones(1)})
    with pytest.raises(DataError, match="differ in shape"):
        sg.metric.create("pearsonr").update([np.ones(3)], [np.ones(4)])


MX_SCRIPT = r"""
import json, sys
import numpy as np
import mxnet as mx
cases, batches = json.loads(sys.stdin.read())
out = {}
for key, (args, kind) in cases.items():
    args = dict(args)
    m = mx.metric.create(args.pop("metric"), **args)
    b = [([mx.nd.array(np.array(l, np.float32)) for l in ls],
          [mx.nd.array(np.array(p, np.float32)) for p in ps]) for ls, ps in batches[kind]]
    m.update(*b[0]); m.update(*b[1])
    first = m.get()[1]
    m.reset_local()
    m.update(*b[2])
    out[key] = [float(first), float(m.get()[1]), float(m.get_global()[1])]
print(json.dumps(out))
"""


@pytest.mark.mxnet
def test_metrics_match_mxnet() -> None:
    batches = {k: [([x.tolist() for x in ls], [x.tolist() for x in ps]) for ls, ps in
                   _batches(k)] for k in ("binary", "classes", "real")}
    mx = mxnet_json(MX_SCRIPT, [CASES, batches])
    for case in CASES:
        np.testing.assert_allclose(_values(case), mx[case], rtol=1e-5, err_msg=case)
