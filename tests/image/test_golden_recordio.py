"""Golden files written by MXNet 1.9.1's im2rec and read by its ImageRecordIter
(tests/data/recordio/make_golden.py): our reader and iterator give the same records and
batches (exactly, except bilinear resizing: within one grey level)."""
from __future__ import annotations

import os

import numpy as np
import pytest

import symgraph as sg
from tests.data.recordio.cases import CASES as ARGS  # what make_golden.py gave MXNet

pytest.importorskip("PIL")
HERE = os.path.join(os.path.dirname(__file__), "..", "data", "recordio")
GOLD = np.load(os.path.join(HERE, "batches.npz"))
CASES = sorted({k.split("/")[0] for k in GOLD.files})


def test_cases_cover_the_golden_file() -> None:
    assert sorted(ARGS) == CASES


def test_records_match_the_list_and_images() -> None:
    rec = sg.recordio.MXIndexedRecordIO(os.path.join(HERE, "golden.idx"),
                                        os.path.join(HERE, "golden.rec"), "r")
    with open(os.path.join(HERE, "golden.lst")) as f:
        rows = [line.rstrip("\n").split("\t") for line in f]
    assert sorted(rec.keys) == sorted(int(r[0]) for r in rows)
    for idx, label, path in rows:
        header, img = sg.recordio.unpack_img(rec.read_idx(int(idx)))
        assert header.id == int(idx) and header.label == float(label) and header.flag == 0
        direct = sg.image.imread(os.path.join(HERE, "images", path), to_rgb=False).asnumpy()
        np.testing.assert_array_equal(img, direct)  # both BGR, as OpenCV
        assert img.shape[2] == 3


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("threads", [1, 3])
def test_batches_equal_mxnet(case: str, threads: int) -> None:
    it = sg.io.ImageRecordIter(path_imgrec=os.path.join(HERE, "golden.rec"), batch_size=2,
                               preprocess_threads=threads, **ARGS[case])
    keys = sorted({k.rsplit("/", 1)[0] for k in GOLD.files if k.startswith(case + "/")})
    got = {}
    for epoch in range(2 if case == "raw" else 1):
        for j, batch in enumerate(it):
            got[f"{case}/e{epoch}b{j}"] = batch
        it.reset()
    for key in keys:
        batch = got.pop(key)
        want = GOLD[key + "/data"].astype(np.float32)
        atol = 1.0 if case == "resize" else 0.0
        np.testing.assert_allclose(batch.data[0].asnumpy(), want, rtol=0, atol=atol,
                                   err_msg=key)
        np.testing.assert_array_equal(batch.label[0].asnumpy(), GOLD[key + "/label"])
        assert batch.pad == int(GOLD[key + "/pad"]), key
    if case != "plain":  # the float case keeps only its first batch
        assert not got, f"batches MXNet did not give: {sorted(got)}"
