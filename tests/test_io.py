"""NDArrayIter batching modes against hand-listed index sequences; bad input."""
from __future__ import annotations

import numpy as np
import pytest

import symgraph as sg
from symgraph.core.base import DataError


def _epoch(it):
    return [(b.data[0].asnumpy()[:, 0].astype(int).tolist(), b.pad,
             b.label[0].asnumpy().astype(int).tolist()) for b in it]


def _iter(mode, n=10, bs=4, shuffle=False):
    x = np.arange(n, dtype=np.float32).reshape(n, 1)
    return sg.io.NDArrayIter(x, np.arange(n) + 100, bs, shuffle=shuffle, last_batch_handle=mode)


def test_pad():
    got = _epoch(_iter("pad"))
    assert [d for d, _, _ in got] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 0, 1]]
    assert [p for _, p, _ in got] == [0, 0, 2]
    assert got[2][2] == [108, 109, 100, 101]


def test_discard():
    got = _epoch(_iter("discard"))
    assert [d for d, _, _ in got] == [[0, 1, 2, 3], [4, 5, 6, 7]]


def test_roll_over():
    it = _iter("roll_over")
    first = _epoch(it)
    it.reset()
    second = _epoch(it)
    assert [d for d, _, _ in first] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert [d for d, _, _ in second] == [[8, 9, 0, 1], [2, 3, 4, 5], [6, 7, 8, 9]]


def test_shuffle_is_permutation_and_seeded():
    sg.random.seed(3)
    a = sum((d for d, _, _ in _epoch(_iter("discard", 12, 4, True))), [])
    sg.random.seed(3)
    b = sum((d for d, _, _ in _epoch(_iter("discard", 12, 4, True))), [])
    assert sorted(a) == list(range(12)) and a == b and a != list(range(12))
    it = _iter("discard", 12, 4, True)
    for data, _, label in _epoch(it):  # labels stay with their samples
        assert [v + 100 for v in data] == label


def test_provide_data_label_and_dict_input():
    it = sg.io.NDArrayIter({"img": np.zeros((6, 1, 2, 2))}, {"lab": np.zeros(6)}, 3)
    assert it.provide_data == [("img", (3, 1, 2, 2))]
    assert it.provide_data[0].dtype == np.float32  # float64 input is stored as float32
    assert it.provide_label == [("lab", (3,))]


def test_bad_input():
    with pytest.raises(DataError, match="different numbers of samples"):
        sg.io.NDArrayIter(np.zeros((5, 2)), np.zeros(4), 2)
    with pytest.raises(DataError, match="last_batch_handle"):
        sg.io.NDArrayIter(np.zeros((5, 2)), np.zeros(5), 2, last_batch_handle="wrap")
    with pytest.raises(DataError, match="batch_size"):
        sg.io.NDArrayIter(np.zeros((5, 2)), np.zeros(5), 0)


def test_numpy_inputs_become_float32_as_in_mxnet():
    """MXNet 1.9.1: NDArrayIter(np int32 data, np int64 labels) yields float32 batches (its
    provide_data/label say float32); an NDArray keeps its own dtype."""
    it = sg.io.NDArrayIter(np.zeros((4, 2), np.int32), np.arange(4), 2)
    assert [d.dtype for d in it.provide_data + it.provide_label] == [np.float32] * 2
    batch = next(iter(it))
    assert batch.label[0].dtype == np.float32 and batch.label[0].asnumpy().tolist() == [0, 1]
    kept = sg.io.NDArrayIter(sg.nd.array(np.zeros((4, 2)), dtype=np.float16), None, 2)
    assert kept.provide_data[0].dtype == np.float16
    # integer labels train as in MXNet (SoftmaxOutput's label is float32)
    net = sg.sym.SoftmaxOutput(sg.sym.FullyConnected(sg.sym.var("data"), num_hidden=2), name="sm")
    mod = sg.mod.Module(net, label_names=["sm_label"])
    mod.fit(sg.io.NDArrayIter(np.ones((4, 3)), np.array([0, 1, 0, 1]), 2, label_name="sm_label"),
            num_epoch=1, progress_bar=False)
