"""ImageRecordIter with ``SYMGRAPH_IO_PROCESSES=1``: samples prepared in worker processes give
the batches that threads give (random crops and mirrors included), and a worker's error
reaches the caller as the typed error naming the file and record."""
from __future__ import annotations

import io
import os

import numpy as np
import pytest

import symgraph as sg
from symgraph.core.base import AttrError, DataError

PIL = pytest.importorskip("PIL.Image")
HERE = os.path.join(os.path.dirname(__file__), "..", "data", "recordio")
ARGS = dict(path_imgrec=os.path.join(HERE, "golden.rec"), data_shape=(3, 9, 9), batch_size=2,
            resize=11, rand_crop=True, rand_mirror=True, shuffle=True, mean_g=20.0, std_b=3.0,
            preprocess_threads=2, seed=5)


def epochs(it: sg.io.ImageRecordIter, n: int) -> list:
    out = []
    for _ in range(n):
        out += [(b.data[0].asnumpy(), b.label[0].asnumpy(), b.pad) for b in it]
        it.reset()
    return out


def test_processes_give_the_batches_threads_give(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SYMGRAPH_IO_PROCESSES", "0")
    want = epochs(sg.io.ImageRecordIter(**ARGS), 2)
    monkeypatch.setenv("SYMGRAPH_IO_PROCESSES", "1")
    it = sg.io.ImageRecordIter(**ARGS)
    assert it._procs is not None  # the workers are in use, not threads
    got = epochs(it, 2)
    assert len(got) == len(want) == 5  # 3 + 2: round_batch carries into epoch 2
    for (gd, gl, gp), (wd, wl, wp) in zip(got, want):
        np.testing.assert_array_equal(gd, wd)
        np.testing.assert_array_equal(gl, wl)
        assert gp == wp
    # the draws differ between epochs: the comparison above covers crops and mirrors
    assert not all(np.array_equal(a[0], b[0]) for a, b in zip(got[:2], got[3:]))


def test_a_worker_error_names_the_file_and_record(tmp_path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    path = str(tmp_path / "bad.rec")
    rec = sg.recordio.MXRecordIO(path, "w")
    good = io.BytesIO()
    PIL.fromarray(np.zeros((12, 12, 3), np.uint8)).save(good, "PNG")
    rec.write(sg.recordio.pack(sg.recordio.IRHeader(0, 0.0, 0, 0), good.getvalue()))
    rec.write(sg.recordio.pack(sg.recordio.IRHeader(0, 1.0, 41, 0), b"not an image at all"))
    rec.close()
    monkeypatch.setenv("SYMGRAPH_IO_PROCESSES", "1")
    it = sg.io.ImageRecordIter(path_imgrec=path, data_shape=(3, 8, 8), batch_size=2,
                               preprocess_threads=2)
    with pytest.raises(DataError, match=r"bad\.rec: record id 41: cannot decode image"):
        it.next()


def test_an_invalid_setting_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SYMGRAPH_IO_PROCESSES", "sometimes")
    with pytest.raises(AttrError, match="SYMGRAPH_IO_PROCESSES"):
        sg.io.ImageRecordIter(path_imgrec=ARGS["path_imgrec"], data_shape=(3, 9, 9),
                              batch_size=2, preprocess_threads=2)
