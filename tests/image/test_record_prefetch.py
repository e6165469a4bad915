"""ImageRecordIter preparing batches ahead (threads, and worker processes writing into
shared-memory slots): the batches are those of one thread whatever the calls to ``reset``,
a batch kept by the caller is never overwritten, a reused slot's padding rows are zero, slots
are files where /dev/shm lacks room (an error where the temp folder lacks it too), and an
error preparing a batch ahead reaches the caller with that batch."""
from __future__ import annotations

import os

import numpy as np
import pytest

import symgraph as sg
from symgraph.core.base import DataError
from symgraph.training.image import record_slots

pytest.importorskip("PIL")
HERE = os.path.join(os.path.dirname(__file__), "..", "data", "recordio")
ARGS = dict(path_imgrec=os.path.join(HERE, "golden.rec"), data_shape=(3, 9, 9), batch_size=2,
            resize=11, rand_crop=True, rand_mirror=True, shuffle=True, mean_g=20.0, std_b=3.0,
            seed=7)
# next() counts between resets: a reset mid-epoch, whole epochs, a carried-over round batch
SCRIPT = (1, 4, 2, 0, 4)


def run(it: sg.io.ImageRecordIter) -> list:
    out = []
    for count in SCRIPT:
        for _ in range(count):
            try:
                b = it.next()
            except StopIteration:
                out.append("stop")
                break
            out.append((b.data[0].asnumpy(), b.label[0].asnumpy(), b.pad, list(b.index)))
        it.reset()
    return out


def assert_same(got: list, want: list) -> None:
    assert [g == "stop" for g in got] == [w == "stop" for w in want]
    for g, w in zip(got, want):
        if g != "stop":
            np.testing.assert_array_equal(g[0], w[0])
            np.testing.assert_array_equal(g[1], w[1])
            assert g[2:] == w[2:]


@pytest.mark.parametrize("processes", ["0", "1"])
def test_prefetched_batches_equal_one_threads(processes: str,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    want = run(sg.io.ImageRecordIter(preprocess_threads=1, **ARGS))
    assert "stop" in want and len(want) > 8
    monkeypatch.setenv("SYMGRAPH_IO_PROCESSES", processes)
    it = sg.io.ImageRecordIter(preprocess_threads=2, prefetch_buffer=3, **ARGS)
    assert it._depth == 4 and (it._procs is not None) == (processes == "1")
    assert_same(run(it), want)


def test_kept_batches_are_not_overwritten_and_file_slots(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # /dev/shm without room: the slots are files (the shared-memory path is the other tests')
    monkeypatch.setattr(record_slots, "_room", lambda folder: (
        0 if folder == record_slots.SHM_DIR else 1 << 40))
    monkeypatch.setenv("SYMGRAPH_IO_PROCESSES", "1")
    it = sg.io.ImageRecordIter(preprocess_threads=2, prefetch_buffer=1, round_batch=False,
                               **ARGS)
    kept, copies = [], []
    with pytest.warns(ResourceWarning, match="write batches into files of"):
        for _ in range(3):  # 3 epochs of 3 batches, the last one padded
            for b in it:
                kept.append(b.data[0])
                copies.append(b.data[0].asnumpy())
            it.reset()
    assert len(kept) == 9 and kept[2].asnumpy()[1:].max() == kept[2].asnumpy()[1:].min() == 0
    for array, copy in zip(kept, copies):
        np.testing.assert_array_equal(array.asnumpy(), copy)
    paths = list(it._slots._live)
    assert len(paths) >= 9 and all(os.path.isfile(p) for p in paths)  # one per kept batch
    del kept, array, b
    for _ in range(3):  # dropped batches give their slots back: the pool stops growing
        for b in it:
            assert b.pad == 0 or b.data[0].asnumpy()[2 - b.pad:].max() == 0
        it.reset()
    assert len(it._slots._live) <= len(paths)
    paths = list(it._slots._live)
    del it, b
    assert not any(os.path.exists(p) for p in paths)  # unlinked with the iterator


def test_a_batch_without_room_anywhere_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(record_slots, "_room", lambda folder: 5 << 20)
    monkeypatch.setattr(record_slots.os.path, "isdir", lambda folder: True)
    pool = record_slots.SlotPool((64, 3, 224, 224), "float32", keep=1)
    with pytest.raises(DataError, match=r"a batch needs 37 MiB and neither /dev/shm \(5 MiB "
                                        r"free\) nor .* \(5 MiB free\) has room"):
        pool.take()
    pool.shutdown()


@pytest.mark.parametrize("threads, processes", [(1, "0"), (2, "0"), (2, "1")])
def test_a_damaged_record_fails_its_own_batch(tmp_path, threads: int, processes: str,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    prefix = str(tmp_path / "damaged")
    rec = sg.recordio.MXIndexedRecordIO(prefix + ".idx", prefix + ".rec", "w")
    for k in range(6):
        img = np.full((10, 10, 3), 40 * k, np.uint8)
        rec.write_idx(k, sg.recordio.pack_img(sg.recordio.IRHeader(0, float(k), k, 0), img,
                                              img_fmt=".png"))
    rec.close()
    offsets = sg.recordio.MXIndexedRecordIO(prefix + ".idx", prefix + ".rec", "r").idx
    with open(prefix + ".rec", "r+b") as f:  # record 2's magic number overwritten
        f.seek(offsets[2])
        f.write(b"\0\0\0\0")
    monkeypatch.setenv("SYMGRAPH_IO_PROCESSES", processes)
    it = sg.io.ImageRecordIter(path_imgrec=prefix + ".rec", path_imgidx=prefix + ".idx",
                               data_shape=(3, 10, 10), batch_size=2,
                               preprocess_threads=threads)
    first = it.next()  # records 0 and 1, while the next batches are being prepared
    np.testing.assert_array_equal(first.label[0].asnumpy(), [0.0, 1.0])
    assert first.data[0].asnumpy()[1].min() == 40
    with pytest.raises(DataError, match=rf"damaged\.rec: offset {offsets[2]}: bad magic"):
        it.next()
    third = it.next()  # the iterator goes on after the damaged batch
    np.testing.assert_array_equal(third.label[0].asnumpy(), [4.0, 5.0])
