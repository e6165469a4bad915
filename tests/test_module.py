"""Module: one SGD step against numpy float64, fit/score/predict, checkpoints (round trip in a
new process), and bad input."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import symgraph as sg
from symgraph.core.base import BindError, DataError

REPO = Path(__file__).resolve().parents[1]


def _softmax_net(hidden=None):
    x = sg.sym.var("data")
    if hidden:
        x = sg.sym.Activation(sg.sym.FullyConnected(x, num_hidden=hidden, name="fc0"),
                              act_type="relu")
    x = sg.sym.FullyConnected(x, num_hidden=3, name="fc")
    return sg.sym.SoftmaxOutput(x, name="softmax")


def _blobs(rng, n=240, d=5):
    centers = rng.standard_normal((3, d)) * 3
    y = rng.integers(0, 3, n)
    x = centers[y] + rng.standard_normal((n, d))
    return x.astype(np.float32), y.astype(np.float32)


def test_one_sgd_step_matches_numpy(rng):
    x, y = _blobs(rng, n=8)
    mod = sg.mod.Module(_softmax_net())
    mod.bind([("data", (8, 5))], [("softmax_label", (8,))])
    mod.init_params(sg.init.Normal(0.3))
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.5})
    arg, _ = mod.get_params()
    w, b = arg["fc_weight"].asnumpy().astype(np.float64), arg["fc_bias"].asnumpy()
    mod.forward_backward(sg.io.DataBatch([sg.nd.array(x)], [sg.nd.array(y)]))
    mod.update()
    z = x.astype(np.float64) @ w.T + b
    p = np.exp(z - z.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    dz = (p - np.eye(3)[y.astype(int)]) / 8  # rescale_grad defaults to 1/batch
    new, _ = mod.get_params()
    np.testing.assert_allclose(new["fc_weight"].asnumpy(), w - 0.5 * dz.T @ x, rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(new["fc_bias"].asnumpy(), b - 0.5 * dz.sum(0), rtol=1e-5,
                               atol=1e-6)


def test_fit_score_predict(rng):
    x, y = _blobs(rng)
    train = sg.io.NDArrayIter(x[:200], y[:200], 16, shuffle=True)
    test = sg.io.NDArrayIter(x[200:], y[200:], 16)  # 40 samples: last batch padded by 8
    mod = sg.mod.Module(_softmax_net(hidden=8))
    mod.fit(train, eval_data=test, num_epoch=5, optimizer_params={"learning_rate": 0.2},
            initializer=sg.init.Xavier())
    assert len(mod.history) == 5
    (name, acc), = mod.score(test, "acc")
    prob = mod.predict(test).asnumpy()
    assert prob.shape == (40, 3)
    assert acc == pytest.approx((prob.argmax(1) == y[200:]).mean())  # pad left out
    assert acc > 0.9
    arg, _ = mod.get_params()
    h = np.maximum(x[200:] @ arg["fc0_weight"].asnumpy().T + arg["fc0_bias"].asnumpy(), 0)
    z = h @ arg["fc_weight"].asnumpy().T + arg["fc_bias"].asnumpy()
    ref = np.exp(z - z.max(1, keepdims=True))
    np.testing.assert_allclose(prob, ref / ref.sum(1, keepdims=True), rtol=1e-4, atol=1e-6)


_SCORE_CHILD = """
import json, sys
import numpy as np
import symgraph as sg
prefix, data = sys.argv[1], np.load(sys.argv[2])
mod = sg.mod.Module.load(prefix, 1)
it = sg.io.NDArrayIter(data["x"], data["y"], 16)
mod.bind(it.provide_data, it.provide_label, for_training=False)
print(json.dumps(dict(mod.score(it, "acc"))))
"""


def test_checkpoint_round_trip_new_process(rng, tmp_path):
    x, y = _blobs(rng)
    prefix = str(tmp_path / "net")
    train = sg.io.NDArrayIter(x[:200], y[:200], 16, shuffle=True)
    test = sg.io.NDArrayIter(x[200:], y[200:], 16)
    mod = sg.mod.Module(_softmax_net(hidden=8))
    mod.fit(train, num_epoch=1, epoch_end_callback=sg.callback.do_checkpoint(prefix),
            optimizer_params={"learning_rate": 0.1})
    want = dict(mod.score(test, "acc"))["accuracy"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["net-0001.params", "net-symbol.json"]
    assert sorted(sg.nd.load(str(tmp_path / "net-0001.params"))) == [
        "arg:fc0_bias", "arg:fc0_weight", "arg:fc_bias", "arg:fc_weight"]
    np.savez(tmp_path / "data.npz", x=x[200:], y=y[200:])
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = subprocess.run([sys.executable, "-c", _SCORE_CHILD, prefix, str(tmp_path / "data.npz")],
                         capture_output=True, text=True, env=env, check=True)
    assert json.loads(out.stdout.strip().splitlines()[-1])["accuracy"] == want


def test_checkpoint_of_another_network(rng, tmp_path):
    prefix = str(tmp_path / "other")
    other = _softmax_net(hidden=4)
    mod = sg.mod.Module(other)
    mod.bind([("data", (2, 5))], [("softmax_label", (2,))])
    mod.init_params()
    mod.save_checkpoint(prefix, 3)
    _, arg, aux = sg.model.load_checkpoint(prefix, 3)
    mine = sg.mod.Module(_softmax_net(hidden=6))
    mine.bind([("data", (2, 5))], [("softmax_label", (2,))])
    mine.init_params()
    before = mine.get_params()[0]["fc_weight"].asnumpy()
    with pytest.raises(BindError, match=r"fc0_weight has shape \(4, 5\), the network needs "
                                        r"\(6, 5\)"):
        mine.set_params(arg, aux)
    np.testing.assert_array_equal(mine.get_params()[0]["fc_weight"].asnumpy(), before)
    with pytest.raises(BindError, match="are not arguments of this network"):
        mine.set_params({**arg, "conv9_weight": arg["fc_bias"]}, aux)
    smaller = sg.mod.Module(_softmax_net())
    smaller.bind([("data", (2, 5))], [("softmax_label", (2,))])
    with pytest.raises(BindError, match=r"\['fc0_bias', 'fc0_weight'\] are not arguments"):
        smaller.set_params(arg, aux)
    with pytest.raises(DataError, match="not found"):
        sg.model.load_checkpoint(prefix, 4)
    unbound = sg.mod.Module(_softmax_net(hidden=6))
    unbound.set_params(arg, aux)  # checked when bind knows the shapes
    with pytest.raises(BindError, match="fc0_weight has shape"):
        unbound.bind([("data", (2, 5))], [("softmax_label", (2,))])


def test_label_data_batch_mismatch():
    mod = sg.mod.Module(_softmax_net())
    mod.bind([("data", (4, 5))], [("softmax_label", (4,))])
    mod.init_params()
    batch = sg.io.DataBatch([sg.nd.zeros((4, 5))], [sg.nd.zeros((3,))])
    with pytest.raises(DataError, match=r"batch sizes differ: \{'data': 4, 'softmax_label': 3\}"):
        mod.forward(batch)
    with pytest.raises(BindError, match="batch sizes differ"):
        sg.mod.Module(_softmax_net()).bind([("data", (4, 5))], [("softmax_label", (5,))])
    with pytest.raises(BindError, match="data name 'img'"):
        sg.mod.Module(_softmax_net(), data_names=("img",))


def test_fit_bad_names(rng):
    x, y = _blobs(rng, n=32)
    it = sg.io.NDArrayIter(x, y, 16)
    from symgraph.core.base import AttrError
    for kwargs, msg in (({"optimizer": "sgdm"}, "unknown optimizer"),
                        ({"eval_metric": "acc1"}, "unknown metric")):
        mod = sg.mod.Module(_softmax_net())
        with pytest.raises(AttrError, match=msg):
            mod.fit(it, num_epoch=1, **kwargs)
        assert not mod.binded  # refused before anything was bound


def test_reshape_on_new_batch_size(rng):
    x, y = _blobs(rng, n=10)
    mod = sg.mod.Module(_softmax_net())
    mod.bind([("data", (4, 5))], [("softmax_label", (4,))])
    mod.init_params(sg.init.Normal(0.5))
    mod.forward(sg.io.DataBatch([sg.nd.array(x)], [sg.nd.array(y)]), is_train=False)
    out = mod.get_outputs()[0].asnumpy()
    assert out.shape == (10, 3)
    arg, _ = mod.get_params()
    z = x @ arg["fc_weight"].asnumpy().T + arg["fc_bias"].asnumpy()
    np.testing.assert_allclose(out.argmax(1), z.argmax(1))


def _fit_epochs(mod, x, y, begin, end):
    it = sg.io.NDArrayIter(x, y, 16)  # no shuffle: both runs see the same batches
    mod.fit(it, begin_epoch=begin, num_epoch=end, initializer=sg.init.Normal(0.3),
            optimizer_params={"learning_rate": 0.1, "momentum": 0.9})


def test_resume_with_optimizer_states(rng, tmp_path):
    x, y = _blobs(rng, n=64)
    sg.random.seed(5)
    whole = sg.mod.Module(_softmax_net())
    _fit_epochs(whole, x, y, 0, 2)
    sg.random.seed(5)
    first = sg.mod.Module(_softmax_net())
    _fit_epochs(first, x, y, 0, 1)
    prefix = str(tmp_path / "r")
    first.save_checkpoint(prefix, 1, save_optimizer_states=True)
    want = whole.get_params()[0]["fc_weight"].asnumpy()
    for load_states in (True, False):
        resumed = sg.mod.Module.load(prefix, 1, load_optimizer_states=load_states)
        _fit_epochs(resumed, x, y, 1, 2)
        got = resumed.get_params()[0]["fc_weight"].asnumpy()
        if load_states:
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
        else:  # momentum restarts from zero: a different result
            assert np.abs(got - want).max() > 1e-4


def test_corrupt_params_file(tmp_path):
    (tmp_path / "bad-symbol.json").write_text(_softmax_net().tojson())
    (tmp_path / "bad-0001.params").write_bytes(b"not a zip file at all")
    with pytest.raises(DataError, match="bad-0001.params is neither MXNet's NDArray-list format "
                                        "nor an .npz"):
        sg.model.load_checkpoint(str(tmp_path / "bad"), 1)
