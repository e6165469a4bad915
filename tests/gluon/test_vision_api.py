"""gluon.data.vision: CIFAR-10/100 read from small files in MXNet's binary layout, image
folders and RecordIO files, sg.nd.image ops and the transforms, against numpy."""
from __future__ import annotations

import numpy as np
import pytest

import symgraph as sg
from symgraph.core.base import DataError, DTypeError, ShapeError
from symgraph.gluon.data import vision
from symgraph.gluon.data.vision import transforms as T
from symgraph.gluon.data.vision.datasets import more as datasets_more

RNG = np.random.default_rng(0)


def _cifar_rows(n: int, label_bytes: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    labels = RNG.integers(0, 100, (n, label_bytes), dtype=np.uint8)
    pixels = RNG.integers(0, 256, (n, 3, 32, 32), dtype=np.uint8)
    return np.concatenate([labels, pixels.reshape(n, -1)], axis=1), labels, pixels


def test_cifar10_and_100_from_files(tmp_path):
    folder = tmp_path / "c10" / "cifar-10-batches-bin"
    folder.mkdir(parents=True)
    rows, labels, pixels = _cifar_rows(3, 1)
    rows.tofile(folder / "test_batch.bin")
    ds = vision.CIFAR10(root=str(tmp_path / "c10"), train=False)
    assert len(ds) == 3
    img, label = ds[2]
    np.testing.assert_array_equal(img.asnumpy(), pixels[2].transpose(1, 2, 0))
    assert label == labels[2, 0]
    folder = tmp_path / "c100" / "cifar-100-binary"
    folder.mkdir(parents=True)
    rows, labels, pixels = _cifar_rows(4, 2)
    rows.tofile(folder / "train.bin")
    coarse = vision.CIFAR100(root=str(tmp_path / "c100"))
    fine = vision.CIFAR100(root=str(tmp_path / "c100"), fine_label=True,
                           transform=lambda x, y: (x.asnumpy().mean(), y))
    assert [coarse[i][1] for i in range(4)] == list(labels[:, 0])
    assert fine[1] == (pytest.approx(pixels[1].mean()), labels[1, 1])


def test_cifar_missing_offline(tmp_path, monkeypatch):
    def offline(*a, **k):
        raise OSError("network unreachable")
    monkeypatch.setattr(datasets_more, "download", offline)
    with pytest.raises(DataError, match="data_batch_1.bin") as info:
        vision.CIFAR10(root=str(tmp_path))
    assert str(tmp_path) in str(info.value)
    (tmp_path / "cifar-10-batches-bin").mkdir()
    (tmp_path / "cifar-10-batches-bin" / "test_batch.bin").write_bytes(b"\0" * 100)
    with pytest.raises(DataError, match="3073"):
        vision.CIFAR10(root=str(tmp_path), train=False)


def test_image_folder_and_record_datasets(tmp_path):
    from PIL import Image
    from symgraph.training import recordio
    images = {}
    for cls in ("cat", "dog"):
        (tmp_path / "imgs" / cls).mkdir(parents=True)
        arr = RNG.integers(0, 256, (6, 5, 3), dtype=np.uint8)
        Image.fromarray(arr).save(tmp_path / "imgs" / cls / "a.png")
        images[cls] = arr
    (tmp_path / "imgs" / "notes.txt").write_text("not a class")
    ds = vision.ImageFolderDataset(str(tmp_path / "imgs"))
    assert ds.synsets == ["cat", "dog"] and len(ds) == 2
    img, label = ds[1]
    np.testing.assert_array_equal(img.asnumpy(), images["dog"])
    assert label == 1.0
    rec = recordio.MXIndexedRecordIO(str(tmp_path / "d.idx"), str(tmp_path / "d.rec"), "w")
    for i, arr in enumerate(images.values()):
        rec.write_idx(i, recordio.pack_img(recordio.IRHeader(0, float(i + 3), i, 0),
                                           arr[:, :, ::-1], img_fmt=".png"))
    rec.close()
    raw = sg.gluon.data.RecordFileDataset(str(tmp_path / "d.rec"))
    assert len(raw) == 2 and isinstance(raw[0], bytes)
    ids = vision.ImageRecordDataset(str(tmp_path / "d.rec"))
    img, label = ids[1]
    np.testing.assert_array_equal(img.asnumpy(), images["dog"])
    assert label == 4.0
    with pytest.raises(DataError, match="nothere.rec"):
        sg.gluon.data.RecordFileDataset(str(tmp_path / "nothere.rec"))


def test_image_ops_match_numpy():
    x = RNG.integers(0, 256, (2, 4, 5, 3)).astype(np.uint8)
    got = sg.nd.image.to_tensor(sg.nd.array(x, dtype="uint8")).asnumpy()
    np.testing.assert_allclose(got, x.transpose(0, 3, 1, 2) / 255.0, rtol=1e-6)
    t = RNG.random((3, 4, 5)).astype(np.float32)
    mean, std = np.array([0.1, 0.2, 0.3]), np.array([0.5, 2.0, 4.0])
    got = sg.nd.image.normalize(sg.nd.array(t), mean=tuple(mean), std=tuple(std)).asnumpy()
    np.testing.assert_allclose(got, (t - mean[:, None, None]) / std[:, None, None], rtol=1e-6,
                               atol=1e-6)
    np.testing.assert_array_equal(sg.nd.image.flip_left_right(sg.nd.array(x)).asnumpy(),
                                  x[:, :, ::-1])
    np.testing.assert_array_equal(sg.nd.image.flip_top_bottom(sg.nd.array(x[0])).asnumpy(),
                                  x[0, ::-1])
    with pytest.raises(ShapeError, match="4 channels"):
        sg.nd.image.normalize(sg.nd.ones((4, 2, 2)), mean=(0, 1, 2), std=(1, 1, 1))
    with pytest.raises(ShapeError, match="shape"):
        sg.nd.image.to_tensor(sg.nd.ones((1, 2, 3, 4, 3)))


def test_flip_gradient_is_flipped_head_gradient():
    x = sg.nd.array(RNG.random((3, 4, 2)))
    w = RNG.random((3, 4, 2))
    x.attach_grad()
    with sg.autograd.record():
        y = (sg.nd.image.flip_left_right(x) * sg.nd.array(w)).sum()
    y.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), w[:, ::-1], rtol=1e-6)  # d/dx of linear map


def test_hybridized_tensor_transforms_equal_imperative():
    x = sg.nd.array(RNG.integers(0, 256, (6, 7, 3)), dtype="uint8")
    chain = T.HybridCompose([T.ToTensor(), T.Normalize((0.4, 0.5, 0.6), (0.2, 0.3, 0.4))])
    want = chain(x).asnumpy()
    chain.hybridize()
    np.testing.assert_allclose(chain(x).asnumpy(), want, rtol=1e-6, atol=1e-6)
    host = x.asnumpy().transpose(2, 0, 1) / 255.0
    ref = (host - np.array([0.4, 0.5, 0.6])[:, None, None]) / np.array([.2, .3, .4])[:, None, None]
    np.testing.assert_allclose(want, ref, rtol=1e-5, atol=1e-5)


def test_geometry_transforms():
    x = sg.nd.array(np.arange(60).reshape(5, 4, 3), dtype="float32")
    out = T.CropResize(1, 2, 2, 3)(x).asnumpy()
    np.testing.assert_array_equal(out, np.arange(60).reshape(5, 4, 3)[2:5, 1:3])
    with pytest.raises(ShapeError, match="does not fit"):
        T.CropResize(3, 0, 4, 2)(x)
    assert T.Resize((6, 9))(x).shape == (9, 6, 3)
    assert T.Resize(8, keep_ratio=True)(x).shape == (10, 8, 3)
    assert T.CenterCrop(2)(x).shape == (2, 2, 3)
    assert T.RandomResizedCrop(3)(x).shape == (3, 3, 3)
    assert T.RandomCrop(4, pad=1)(x).shape == (4, 4, 3)
    with pytest.raises(ShapeError):
        T.Resize(-3)(x)
    t = sg.nd.array(np.eye(3, dtype=np.float32)[None])
    np.testing.assert_allclose(T.Rotate(180.0)(t).asnumpy()[0], np.eye(3)[::-1, ::-1],
                               atol=1e-6)
    with pytest.raises(DTypeError):
        T.RandomRotation((-5, 5))(sg.nd.ones((3, 4, 4), dtype="uint8"))
    with pytest.raises(DataError):
        T.RandomRotation((-5, 5), rotate_with_proba=1.5)


def test_color_transforms_keep_shape_and_dtype():
    x = sg.nd.array(RNG.integers(0, 256, (6, 7, 3)), dtype="uint8")
    for t in (T.RandomBrightness(0.1), T.RandomContrast(0.1), T.RandomSaturation(0.1),
              T.RandomHue(0.1), T.RandomColorJitter(0.1, 0.1, 0.1, 0.1), T.RandomLighting(0.1),
              T.RandomGray(1.0), T.RandomFlipLeftRight(), T.RandomFlipTopBottom()):
        y = t(x)
        assert y.shape == (6, 7, 3) and y.dtype == np.uint8, type(t).__name__
    gray = T.RandomGray(1.0)(x).asnumpy()
    assert (gray[..., 0] == gray[..., 1]).all() and (gray[..., 1] == gray[..., 2]).all()


def test_crop_and_its_gradient():
    a = RNG.random((2, 5, 4, 3))
    x = sg.nd.array(a)
    x.attach_grad()
    head = RNG.random((2, 2, 3, 3))
    with sg.autograd.record():
        y = (sg.nd.image.crop(x, 1, 2, 3, 2) * sg.nd.array(head)).sum()
    y.backward()
    want = np.zeros_like(a)
    want[:, 2:4, 1:4] = head  # the head gradient placed where the window was, zeros elsewhere
    np.testing.assert_allclose(x.grad.asnumpy(), want, rtol=1e-6)
    with pytest.raises(ShapeError, match="does not fit"):
        sg.nd.image.crop(x, 2, 0, 3, 2)


def test_random_apply_rate():
    sg.random.seed(11)
    t = T.RandomApply(T.Resize(4), p=0.3)
    img = sg.nd.ones((6, 6, 3), dtype="uint8")
    hits = sum(t(img).shape[0] == 4 for _ in range(400))
    assert 0.22 < hits / 400 < 0.38  # binomial(400, 0.3): 4 standard deviations
    with pytest.raises(DataError):
        T.RandomApply(T.Resize(4), p=2.0)


@pytest.mark.gpu
def test_image_ops_on_gpu_match_cpu():
    a = RNG.integers(0, 256, (2, 6, 5, 3)).astype(np.uint8)
    chain = T.HybridCompose([T.ToTensor(), T.Normalize((0.4, 0.5, 0.6), (0.2, 0.3, 0.4))])
    chain.hybridize()
    cpu = chain(sg.nd.array(a, dtype="uint8")).asnumpy()
    gpu = chain(sg.nd.array(a, sg.gpu(0), dtype="uint8")).asnumpy()
    np.testing.assert_allclose(gpu, cpu, rtol=1e-6, atol=1e-6)
    for fn, ref in ((sg.nd.image.flip_left_right, a[:, :, ::-1]),
                    (sg.nd.image.flip_top_bottom, a[:, ::-1])):
        np.testing.assert_array_equal(fn(sg.nd.array(a, sg.gpu(0), dtype="uint8")).asnumpy(),
                                      ref)
    x = sg.nd.array(a.astype(np.float32), sg.gpu(0))
    np.testing.assert_array_equal(sg.nd.image.crop(x, 1, 2, 3, 2).asnumpy(),
                                  a[:, 2:4, 1:4].astype(np.float32))
