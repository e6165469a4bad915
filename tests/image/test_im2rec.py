"""``symgraph im2rec``: the list matches the one MXNet 1.9.1's im2rec wrote for the golden
images, and the packed records decode to the same pixels as MXNet's."""
from __future__ import annotations

import os
import shutil

import numpy as np
import pytest

import symgraph as sg
from symgraph.interop.cli import main

pytest.importorskip("PIL")
GOLD = os.path.join(os.path.dirname(__file__), "..", "data", "recordio")


def test_list_and_pack_like_mxnet(tmp_path, capsys) -> None:
    root = tmp_path / "images"
    shutil.copytree(os.path.join(GOLD, "images"), root)
    prefix = str(tmp_path / "golden")
    assert main(["im2rec", "--list", "--recursive", prefix, str(root)]) == 0
    assert open(prefix + ".lst").read() == open(os.path.join(GOLD, "golden.lst")).read()
    assert main(["im2rec", "--encoding", ".png", "--num-thread", "2", prefix, str(root)]) == 0
    assert open(prefix + ".idx").read().split("\n")[0].split("\t")[0] == "2"
    ours = sg.recordio.MXIndexedRecordIO(prefix + ".idx", prefix + ".rec", "r")
    theirs = sg.recordio.MXIndexedRecordIO(os.path.join(GOLD, "golden.idx"),
                                           os.path.join(GOLD, "golden.rec"), "r")
    assert ours.keys == theirs.keys
    for k in ours.keys:
        (h1, a), (h2, b) = (sg.recordio.unpack_img(r.read_idx(k)) for r in (ours, theirs))
        assert h1 == h2
        np.testing.assert_array_equal(a, b)
    assert "wrote 5 of 5 images" in capsys.readouterr().out


def test_missing_list_is_an_error(tmp_path, capsys) -> None:
    assert main(["im2rec", str(tmp_path / "none"), str(tmp_path)]) == 2
    assert "no .lst file with prefix" in capsys.readouterr().err
