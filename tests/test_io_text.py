"""sg.io's CSVIter, LibSVMIter, ResizeIter, PrefetchingIter and the iter_next/get* protocol:
batches checked against numpy, epochs and padding against MXNet 1.9.1 live where installed."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import symgraph as sg

from .mxnet_live import mxnet_json


def _csv(tmp_path: Path, rows: np.ndarray, name: str = "d.csv") -> str:
    path = tmp_path / name
    path.write_text("".join(",".join(str(v) for v in r) + "\n" for r in rows))
    return str(path)


def _epochs(it: sg.io.DataIter, n: int = 3) -> list:
    out = []
    for _ in range(n):
        out.append([(b.data[0].asnumpy().tolist(), b.label[0].asnumpy().tolist(), b.pad)
                    for b in it])
        it.reset()
    return out


def test_csv_batches_match_the_file(tmp_path: Path) -> None:
    rows = np.arange(5 * 6).reshape(5, 6)
    it = sg.io.CSVIter(data_csv=_csv(tmp_path, rows), data_shape=(2, 3), batch_size=2,
                       label_csv=_csv(tmp_path, rows[:, :1] * 10, "l.csv"), dtype="int64")
    assert it.provide_data[0].shape == (2, 2, 3) and it.provide_label[0].shape == (2,)
    got = [(it.getdata().asnumpy(), it.getlabel().asnumpy(), it.getpad()) for _ in it]
    want = rows[[0, 1, 2, 3, 4, 0]].reshape(3, 2, 2, 3)
    assert [g[2] for g in got] == [0, 0, 1] and got[0][0].dtype == np.int64
    np.testing.assert_array_equal(np.stack([g[0] for g in got]), want)
    np.testing.assert_array_equal(got[1][1], rows[[2, 3], 0] * 10)


def test_csv_errors_name_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.csv"
    path.write_text("1,2\n3\n")
    with pytest.raises(sg.DataError, match=r"bad.csv:2 has 1 values, expected 2"):
        sg.io.CSVIter(data_csv=str(path), data_shape=(2,))
    path.write_text("1,x\n")
    with pytest.raises(sg.DataError, match=r"bad.csv:1: 'x' is not a float32"):
        sg.io.CSVIter(data_csv=str(path), data_shape=(2,))
    with pytest.raises(sg.DataError, match="dtype"):
        sg.io.CSVIter(data_csv=str(path), data_shape=(2,), dtype="float16")
    with pytest.raises(sg.DataError, match="cannot read"):
        sg.io.CSVIter(data_csv=str(tmp_path / "none.csv"), data_shape=(2,))


def test_libsvm_dense(tmp_path: Path) -> None:
    (tmp_path / "d.t").write_text("1 0:0.5 2:1.5\n-2\n3 1:2\n")
    it = sg.io.LibSVMIter(data_libsvm=str(tmp_path / "d.t"), data_shape=(3,), batch_size=3)
    batch = next(it)
    np.testing.assert_array_equal(batch.data[0].asnumpy(),
                                  [[0.5, 0, 1.5], [0, 0, 0], [0, 2, 0]])
    np.testing.assert_array_equal(batch.label[0].asnumpy(), [1, -2, 3])
    (tmp_path / "bad.t").write_text("1 3:1\n")
    with pytest.raises(sg.DataError, match=r"bad.t:1: bad feature '3:1'"):
        sg.io.LibSVMIter(data_libsvm=str(tmp_path / "bad.t"), data_shape=(3,))


def test_protocol_resize_and_prefetch() -> None:
    nd = sg.io.NDArrayIter(np.arange(20.0).reshape(10, 2), np.arange(10.0), batch_size=4,
                           layout="NTC")
    assert nd.provide_data[0].layout == "NTC"
    assert nd.iter_next() and nd.getindex().tolist() == [0, 1, 2, 3]
    np.testing.assert_array_equal(nd.getdata()[0].asnumpy(), np.arange(8.0).reshape(4, 2))
    nd.reset()
    resized = sg.io.ResizeIter(nd, 5)
    assert [b.index[0] for b in resized] == [0, 4, 8, 0, 4]
    a = sg.io.NDArrayIter(np.zeros((6, 2)), np.zeros(6), batch_size=3)
    b = sg.io.NDArrayIter(np.ones((6, 1)), np.ones(6), batch_size=3, data_name="e",
                          label_name="f")
    pre = sg.io.PrefetchingIter([a, b], rename_data=[{"data": "x"}, {"e": "y"}])
    assert [d.name for d in pre.provide_data] == ["x", "y"]
    for _ in range(2):
        shapes = [[d.shape for d in batch.data + batch.label] for batch in pre]
        assert shapes == [[(3, 2), (3, 1), (3,), (3,)]] * 2
        pre.reset()


def test_user_iterator_with_only_iter_next() -> None:
    class Two(sg.io.DataIter):
        def __init__(self) -> None:
            super().__init__(1)
            self.provide_data = [("data", (1,))]
            self.n = 0

        def iter_next(self) -> bool:
            self.n += 1
            return self.n <= 2

        def getdata(self) -> list:
            return [sg.nd.array([self.n])]
    it = Two()
    assert [b.data[0].asnumpy()[0] for b in it] == [1, 2] and it.provide_data[0][0] == "data"


@pytest.mark.mxnet
def test_csv_and_libsvm_epochs_match_mxnet(tmp_path: Path) -> None:
    data = _csv(tmp_path, np.arange(10).reshape(5, 2))
    (tmp_path / "s.t").write_text("1 0:0.5\n2 1:1\n3\n")
    args = {"csv": data, "svm": str(tmp_path / "s.t")}
    script = (
        "import json, sys, mxnet as mx\n"
        "a = json.load(sys.stdin)\n"
        "def ep(it):\n"
        "    out = []\n"
        "    for _ in range(3):\n"
        "        out.append([(b.data[0].asnumpy().tolist(), b.label[0].asnumpy().tolist(), b.pad)"
        " for b in it]); it.reset()\n"
        "    return out\n"
        "print(json.dumps([ep(mx.io.CSVIter(data_csv=a['csv'], data_shape=(2,), batch_size=2)),"
        " ep(mx.io.CSVIter(data_csv=a['csv'], data_shape=(2,), batch_size=3, round_batch=False))"
        "[0][0], [[b.data[0].asnumpy().tolist(), b.label[0].asnumpy().tolist()] for b in"
        " mx.io.LibSVMIter(data_libsvm=a['svm'], data_shape=(2,), batch_size=3)]]))")
    want = mxnet_json(script, args)
    ours = [_epochs(sg.io.CSVIter(data_csv=data, data_shape=(2,), batch_size=2)),
            _epochs(sg.io.CSVIter(data_csv=data, data_shape=(2,), batch_size=3,
                                  round_batch=False))[0][0],
            [[b.data[0].asnumpy().tolist(), b.label[0].asnumpy().tolist()] for b in
             sg.io.LibSVMIter(data_libsvm=args["svm"], data_shape=(2,), batch_size=3)]]
    assert ours == [[[tuple(x) for x in e] for e in want[0]], tuple(want[1]), want[2]]
