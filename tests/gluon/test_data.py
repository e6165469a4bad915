"""gluon.data: datasets, transforms, samplers and the DataLoader (also with worker processes),
checked against plain numpy indexing."""
from __future__ import annotations

import urllib.error

import numpy as np
import pytest

import symgraph as sg
from symgraph.core.base import AttrError, DataError
from symgraph.gluon import data as gdata
from symgraph.gluon.data.vision import datasets as vdatasets
from symgraph.gluon.data.vision.datasets import mnist as vmnist
from symgraph.gluon.data.vision import transforms


def _loader_batches(loader) -> list:
    return [[x.asnumpy() for x in b] if isinstance(b, (list, tuple)) else b.asnumpy()
            for b in loader]


def test_array_dataset_and_transform_first() -> None:
    x = np.arange(20, dtype=np.float32).reshape(10, 2)
    y = np.arange(10, dtype=np.int32)
    ds = gdata.ArrayDataset(x, y)
    assert len(ds) == 10
    a, b = ds[3]
    np.testing.assert_array_equal(a, x[3])
    assert b == 3
    t = ds.transform_first(lambda v: v * 2)
    a, b = t[4]
    np.testing.assert_array_equal(a, x[4] * 2)
    assert b == 4
    both = ds.transform(lambda v, w: (v + 1, w + 100))
    assert both[2][1] == 102
    with pytest.raises(DataError, match="same length"):
        gdata.ArrayDataset(x, y[:5])


@pytest.mark.parametrize("last_batch,sizes", [("keep", [4, 4, 2]), ("discard", [4, 4]),
                                              ("rollover", [4, 4])])
def test_dataloader_last_batch(last_batch: str, sizes: list) -> None:
    x = np.arange(10, dtype=np.float32)
    loader = gdata.DataLoader(gdata.ArrayDataset(x), batch_size=4, last_batch=last_batch)
    assert len(loader) == len(sizes)
    batches = _loader_batches(loader)
    assert [len(b) for b in batches] == sizes
    np.testing.assert_array_equal(np.concatenate(batches), x[:sum(sizes)])
    if last_batch == "rollover":  # the 2 left over lead the next epoch
        assert len(loader) == 3
        second = _loader_batches(loader)
        assert [len(b) for b in second] == [4, 4, 4]
        np.testing.assert_array_equal(second[0][:2], x[8:])


def test_dataloader_shuffle_is_a_permutation_and_reproducible() -> None:
    x = np.arange(50, dtype=np.float32)
    y = np.arange(50, dtype=np.int32) * 10
    loader = gdata.DataLoader(gdata.ArrayDataset(x, y), batch_size=8, shuffle=True)
    sg.random.seed(3)
    first = _loader_batches(loader)
    data = np.concatenate([b[0] for b in first])
    labels = np.concatenate([b[1] for b in first])
    assert sorted(data.tolist()) == x.tolist() and data.tolist() != x.tolist()
    np.testing.assert_array_equal(labels, (data * 10).astype(np.int32))  # pairs stay together
    assert first[0][1].dtype == np.int32 and first[0][0].dtype == np.float32
    sg.random.seed(3)
    again = np.concatenate([b[0] for b in _loader_batches(loader)])
    np.testing.assert_array_equal(again, data)


def _square(v):
    return v * v


def test_dataloader_workers_match_single_process() -> None:
    x = np.random.default_rng(0).normal(size=(37, 3)).astype(np.float32)
    y = np.arange(37, dtype=np.int32)
    ds = gdata.ArrayDataset(x, y).transform_first(_square)
    ref = _loader_batches(gdata.DataLoader(ds, batch_size=5))
    got = _loader_batches(gdata.DataLoader(ds, batch_size=5, num_workers=2))
    assert len(got) == len(ref) == 8
    for (a, b), (c, d) in zip(got, ref):
        np.testing.assert_array_equal(a, c)
        np.testing.assert_array_equal(b, d)
    assert isinstance(next(iter(gdata.DataLoader(ds, batch_size=5, num_workers=2)))[0],
                      sg.nd.NDArray)


def test_dataloader_workers_run_in_other_processes() -> None:
    import os

    class Pids(gdata.Dataset):
        def __len__(self) -> int:
            return 8

        def __getitem__(self, i: int) -> int:
            return os.getpid()

    pids = set(np.concatenate(_loader_batches(
        gdata.DataLoader(Pids(), batch_size=2, num_workers=2))).tolist())
    assert os.getpid() not in pids and len(pids) >= 1


def test_dataloader_errors() -> None:
    ds = gdata.ArrayDataset(np.zeros(4))
    with pytest.raises(AttrError, match="last_batch"):
        gdata.DataLoader(ds, batch_size=2, last_batch="drop")
    with pytest.raises(AttrError, match="batch_size"):
        gdata.DataLoader(ds)


def test_to_tensor_normalize_compose_cast() -> None:
    img = np.random.default_rng(1).integers(0, 256, size=(5, 4, 3)).astype(np.uint8)
    t = transforms.ToTensor()(sg.nd.array(img, dtype=np.uint8))
    assert t.shape == (3, 5, 4) and t.dtype == np.float32
    np.testing.assert_allclose(t.asnumpy(), img.transpose(2, 0, 1) / 255.0, rtol=1e-6)
    mean, std = (0.1, 0.2, 0.3), (0.5, 0.25, 2.0)
    chain = transforms.Compose([transforms.ToTensor(), transforms.Normalize(mean, std)])
    ref = (img.transpose(2, 0, 1) / 255.0 - np.array(mean)[:, None, None]) / \
        np.array(std)[:, None, None]
    np.testing.assert_allclose(chain(img).asnumpy(), ref, rtol=1e-5, atol=1e-6)
    assert transforms.Cast("float16")(img).dtype == np.float16


def test_mnist_dataset(mnist_dir) -> None:
    ds = vdatasets.MNIST(root=str(mnist_dir), train=False)
    assert len(ds) == 10000
    image, label = ds[0]
    raw = sg.datasets.mnist.load(mnist_dir, "test")
    assert image.shape == (28, 28, 1) and image.dtype == np.uint8
    np.testing.assert_array_equal(image.asnumpy()[:, :, 0], raw[0][0])
    assert label == raw[1][0] and label.dtype == np.int32
    loader = gdata.DataLoader(ds.transform_first(transforms.ToTensor()), batch_size=64)
    data, lab = next(iter(loader))
    assert data.shape == (64, 1, 28, 28) and data.dtype == np.float32
    np.testing.assert_allclose(data.asnumpy()[3, 0], raw[0][3] / 255.0, rtol=1e-6)
    np.testing.assert_array_equal(lab.asnumpy(), raw[1][:64])


def test_mnist_missing_folder_names_folder_and_files(tmp_path, monkeypatch) -> None:
    def offline(url: str):
        raise urllib.error.URLError("no network")
    monkeypatch.setattr(vmnist, "_opener", offline)
    root = tmp_path / "nowhere"
    with pytest.raises(DataError) as err:
        vdatasets.MNIST(root=str(root), train=True)
    msg = str(err.value)
    assert str(root) in msg and "train-images-idx3-ubyte" in msg
    assert "train-labels-idx1-ubyte" in msg and "download failed" in msg
    assert not any(root.glob("*.gz"))  # nothing half-written left behind
    with pytest.raises(DataError, match="fashion-mnist|t10k-images"):
        vdatasets.FashionMNIST(root=str(tmp_path / "f"), train=False)


def test_mnist_default_root_is_symgraph_data(mnist_dir, monkeypatch) -> None:
    monkeypatch.setenv("SYMGRAPH_DATA", str(mnist_dir))
    assert len(vdatasets.MNIST(train=False)) == 10000
    monkeypatch.delenv("SYMGRAPH_DATA")
    assert str(vdatasets.default_root("mnist")).endswith(".symgraph/datasets/mnist")


def test_split_and_load() -> None:
    x = np.arange(12, dtype=np.float32).reshape(6, 2)
    parts = sg.gluon.utils.split_and_load(x, [sg.cpu(0), sg.cpu(1)])
    assert [p.context for p in parts] == [sg.cpu(0), sg.cpu(1)]
    np.testing.assert_array_equal(parts[1].asnumpy(), x[3:])
    uneven = sg.gluon.utils.split_data(np.arange(7), 3, even_split=False)
    assert [len(u) for u in uneven] == [3, 2, 2]
    with pytest.raises(sg.ShapeError, match="evenly"):
        sg.gluon.utils.split_and_load(np.arange(7), [sg.cpu(0), sg.cpu(1)])
