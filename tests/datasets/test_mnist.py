"""MNIST IDX reading (gz and raw), corrupt/missing files, and the download path without
network (file:// URLs)."""
from __future__ import annotations

import gzip
import hashlib
import struct

import numpy as np
import pytest

import symgraph as sg
from symgraph.core.base import DataError
from symgraph.training.datasets import mnist


def _idx(arr: np.ndarray) -> bytes:
    """IDX bytes written independently of the reader: magic 0x0000080N, big-endian dims."""
    return struct.pack(">I", 0x800 + arr.ndim) + b"".join(
        struct.pack(">I", d) for d in arr.shape) + arr.astype(np.uint8).tobytes()


def _write_set(folder, n=7, gz=True, rng=None):
    rng = rng or np.random.default_rng(0)
    arrays = {}
    for split, count in (("train", n), ("test", n - 2)):
        images = rng.integers(0, 256, (count, 28, 28))
        labels = rng.integers(0, 10, count)
        arrays[split] = (images, labels)
        for key, arr in ((f"{split}_images", images), (f"{split}_labels", labels)):
            raw = _idx(arr)
            stem = mnist.FILES[key]
            if gz:
                (folder / (stem + ".gz")).write_bytes(gzip.compress(raw))
            else:
                (folder / stem).write_bytes(raw)
    return arrays


@pytest.mark.parametrize("gz", [True, False])
def test_read_gz_and_raw(tmp_path, gz):
    arrays = _write_set(tmp_path, gz=gz)
    images, labels = mnist.load(tmp_path, "train")
    np.testing.assert_array_equal(images, arrays["train"][0])
    np.testing.assert_array_equal(labels, arrays["train"][1])
    d = mnist.load_data(tmp_path)
    assert d["test_data"].shape == (5, 1, 28, 28) and d["test_data"].dtype == np.float32
    np.testing.assert_allclose(d["test_data"][:, 0], arrays["test"][0] / 255.0, rtol=1e-6)


def test_env_var_and_mnistiter(tmp_path, monkeypatch):
    arrays = _write_set(tmp_path, n=8)
    monkeypatch.setenv("SYMGRAPH_DATA", str(tmp_path))
    images, _ = mnist.load(split="train")
    assert images.shape == (8, 28, 28)
    it = sg.io.MNISTIter(str(tmp_path / "train-images-idx3-ubyte.gz"),
                         str(tmp_path / "train-labels-idx1-ubyte.gz"), batch_size=4,
                         shuffle=False, flat=True)
    batch = next(iter(it))
    assert batch.data[0].shape == (4, 784)
    np.testing.assert_allclose(batch.data[0].asnumpy()[1], arrays["train"][0][1].ravel() / 255.,
                               rtol=1e-6)


def test_missing_files(tmp_path):
    with pytest.raises(DataError, match="train-images-idx3-ubyte.*not found"):
        mnist.load(tmp_path)


def test_no_folder(monkeypatch):
    monkeypatch.delenv("SYMGRAPH_DATA", raising=False)
    with pytest.raises(DataError, match="SYMGRAPH_DATA"):
        mnist.load()


def test_wrong_magic(tmp_path):
    _write_set(tmp_path, gz=False)
    path = tmp_path / "train-labels-idx1-ubyte"
    raw = bytearray(path.read_bytes())
    raw[3] = 0x03
    path.write_bytes(bytes(raw))
    with pytest.raises(DataError, match="wrong magic number 0x00000803"):
        mnist.load(tmp_path)


def test_truncated(tmp_path):
    _write_set(tmp_path)
    path = tmp_path / "train-images-idx3-ubyte.gz"
    raw = gzip.decompress(path.read_bytes())
    path.write_bytes(gzip.compress(raw[:-100]))
    with pytest.raises(DataError, match="truncated"):
        mnist.load(tmp_path)
    path.write_bytes(path.read_bytes()[:50])  # a cut gzip stream
    with pytest.raises(DataError, match="cannot read"):
        mnist.load(tmp_path)


def _mirror(tmp_path, monkeypatch):
    src = tmp_path / "mirror"
    src.mkdir()
    _write_set(src)
    sums = {stem: hashlib.sha256(gzip.decompress((src / (stem + ".gz")).read_bytes())).hexdigest()
            for stem in mnist.FILES.values()}
    monkeypatch.setattr(mnist, "SHA256", sums)
    return src


def test_download_file_url(tmp_path, monkeypatch):
    src = _mirror(tmp_path, monkeypatch)
    dest = tmp_path / "dest"
    mnist.download(dest, base_url=src.as_uri())
    for stem in mnist.FILES.values():
        assert (dest / (stem + ".gz")).read_bytes() == (src / (stem + ".gz")).read_bytes()
    assert sorted(p.name for p in dest.iterdir()) == sorted(
        s + ".gz" for s in mnist.FILES.values())


def test_download_bad_checksum_leaves_nothing(tmp_path, monkeypatch):
    src = _mirror(tmp_path, monkeypatch)
    monkeypatch.setitem(mnist.SHA256, "t10k-labels-idx1-ubyte", "0" * 64)
    dest = tmp_path / "dest"
    with pytest.raises(DataError, match="SHA-256"):
        mnist.download(dest, base_url=src.as_uri())
    assert not (dest / "t10k-labels-idx1-ubyte.gz").exists()
    assert not [p for p in dest.iterdir() if p.name.startswith(".")]


def test_download_interrupted_leaves_nothing(tmp_path, monkeypatch):
    _mirror(tmp_path, monkeypatch)

    class Broken:
        def __enter__(self):
            return self

        def __exit__(self, *a):
            return False

        def read(self, n):
            raise OSError("connection reset")

    dest = tmp_path / "dest"
    with pytest.raises(OSError, match="connection reset"):
        mnist.download(dest, opener=lambda url: Broken())
    assert list(dest.iterdir()) == []
