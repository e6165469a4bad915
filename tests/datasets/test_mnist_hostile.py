"""Hostile MNIST inputs: IDX headers that disagree with the labels or overflow 64 bits, and
downloads that are gzip bombs or corrupt gzip, all DataError naming the file or URL; a bomb
is stopped while it streams (bounded memory), and nothing is left in the folder."""
from __future__ import annotations

import gzip
import struct
import tracemalloc
import zlib
from pathlib import Path

import numpy as np
import pytest

from symgraph.core.base import DataError
from symgraph.training.datasets import mnist
from symgraph.gluon.data.vision import MNIST

from .test_mnist import _idx, _mirror, _write_set


def test_images_of_other_dimensions_are_refused_by_file(tmp_path: Path) -> None:
    _write_set(tmp_path)
    path = tmp_path / "train-images-idx3-ubyte.gz"
    path.write_bytes(gzip.compress(_idx(np.zeros((7, 14, 56)))))  # 7 * 784 bytes, wrong dims
    with pytest.raises(DataError, match=r"train-images-idx3-ubyte.gz: images of 14x56 pixels"):
        mnist.load_data(tmp_path)
    with pytest.raises(DataError, match="14x56"):
        MNIST(root=str(tmp_path))


def test_image_and_label_counts_must_agree(tmp_path: Path) -> None:
    _write_set(tmp_path)
    (tmp_path / "train-labels-idx1-ubyte.gz").write_bytes(gzip.compress(_idx(np.zeros(6))))
    with pytest.raises(DataError, match=r"holds 7 train images but .*labels-idx1-ubyte.gz 6"):
        mnist.load(tmp_path)


def test_dimensions_overflowing_64_bits_do_not_wrap(tmp_path: Path) -> None:
    # 2^32 * 2^32 * 1 wraps to 0 in int64: an empty body would then "match" the header.
    raw = struct.pack(">IIII", 0x803, 2 ** 16, 2 ** 24, 2 ** 24)
    with pytest.raises(DataError, match=r"0 data bytes, header \(65536, 16777216, 16777216\) "
                                        r"says 18446744073709551616"):
        mnist.parse_idx(raw, 3, "bomb")


def _serve(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stem: str, body: bytes) -> Path:
    src = _mirror(tmp_path, monkeypatch)
    (src / (stem + ".gz")).write_bytes(body)
    return src


def test_gzip_bomb_download_is_stopped_while_streaming(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mnist, "MAX_CONTENT", 8 << 20)
    bomb = gzip.compress(b"\0" * (40 << 20), compresslevel=9)  # ~40 KB, 40 MB inflated
    src = _serve(tmp_path, monkeypatch, "train-images-idx3-ubyte", bomb)
    dest = tmp_path / "dest"
    tracemalloc.start()
    try:
        with pytest.raises(DataError, match=r"train-images-idx3-ubyte.gz: content expands "
                                            r"past 8388608 bytes, refused as a gzip bomb"):
            mnist.download(dest, base_url=src.as_uri())
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 32 << 20
    assert list(dest.iterdir()) == []


@pytest.mark.parametrize("damage", ["flipped", "cut", "trailing"])
def test_corrupt_gzip_download_is_a_data_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               damage: str) -> None:
    good = gzip.compress(_idx(np.zeros(5)))
    body = {"flipped": good[:12] + bytes(b ^ 0xFF for b in good[12:20]) + good[20:],
            "cut": good[:-6], "trailing": good + b"junk"}[damage]
    src = _serve(tmp_path, monkeypatch, "t10k-labels-idx1-ubyte", body)
    dest = tmp_path / "dest"
    with pytest.raises(DataError, match=r"t10k-labels-idx1-ubyte.gz: .*gzip") as err:
        mnist.download(dest, base_url=src.as_uri())
    assert not isinstance(err.value.__cause__, zlib.error)
    assert not (dest / "t10k-labels-idx1-ubyte.gz").exists()
