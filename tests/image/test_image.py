"""sg.image functions, augmenters and iterators against numpy / scipy references."""
from __future__ import annotations

import io as _io

import numpy as np
import pytest

import symgraph as sg
from symgraph.core.base import DataError

PIL = pytest.importorskip("PIL.Image")


def _png(arr: np.ndarray) -> bytes:
    out = _io.BytesIO()
    PIL.fromarray(arr).save(out, "PNG")
    return out.getvalue()


def test_imdecode_rgb_bgr_gray() -> None:
    arr = np.random.default_rng(0).integers(0, 256, (5, 7, 3), dtype=np.uint8)
    np.testing.assert_array_equal(sg.image.imdecode(_png(arr)).asnumpy(), arr)
    np.testing.assert_array_equal(sg.image.imdecode(bytearray(_png(arr)), to_rgb=0).asnumpy(),
                                  arr[:, :, ::-1])
    gray = sg.image.imdecode(_png(arr), flag=0).asnumpy()
    assert gray.shape == (5, 7, 1)
    ref = arr.astype(np.float64) @ [0.299, 0.587, 0.114]
    assert np.abs(gray[:, :, 0] - ref).max() <= 1.0


@pytest.mark.parametrize("buf, message", [(b"", "empty image buffer"),
                                          (b"clearly not image content", "cannot decode")])
def test_imdecode_bad_input(buf: bytes, message: str) -> None:
    with pytest.raises(DataError, match=message):
        sg.image.imdecode(buf)


def test_imread_missing_file() -> None:
    with pytest.raises(DataError, match="imread: cannot read /no/such/dir/blah.jpg"):
        sg.image.imread("/no/such/dir/blah.jpg")


def test_resize_nearest_and_bilinear_reference() -> None:
    img = np.arange(4 * 6 * 1, dtype=np.float32).reshape(4, 6, 1)
    near = sg.image.imresize(img, 3, 8, interp=0).asnumpy()
    # OpenCV's nearest rule: source index floor(dst * src / dst_size)
    np.testing.assert_array_equal(near[:, :, 0], img[[0, 0, 1, 1, 2, 2, 3, 3]][:, [0, 2, 4], 0])
    lin = sg.image.imresize(img, 12, 4, interp=1).asnumpy()[:, :, 0]
    x = np.clip((np.arange(12) + 0.5) / 2 - 0.5, 0, 5)
    ref = np.stack([np.interp(x, np.arange(6), row) for row in img[:, :, 0]])
    np.testing.assert_allclose(lin, ref, atol=1e-5)


def test_scale_down_and_crops() -> None:
    assert sg.image.scale_down((640, 480), (720, 120)) == (640, 106)
    assert sg.image.scale_down((360, 1000), (480, 500)) == (360, 375)
    src = np.random.default_rng(1).random((30, 40, 3)).astype(np.float32)
    out, box = sg.image.center_crop(src, (20, 10))
    assert box == (10, 10, 20, 10)
    np.testing.assert_array_equal(out.asnumpy(), src[10:20, 10:30])
    out, (x0, y0, w, h) = sg.image.random_crop(src, (8, 6))
    np.testing.assert_array_equal(out.asnumpy(), src[y0:y0 + 6, x0:x0 + 8])
    out, (x0, y0, w, h) = sg.image.random_size_crop(src, (40, 30), 0.3, (0.75, 1.33))
    assert out.shape == (30, 40, 3) and 0.7 <= w / h <= 1.4
    with pytest.raises(DataError, match="not inside the 40x30 image"):
        sg.image.fixed_crop(src, 35, 0, 10, 10)


def test_color_normalize_leaves_input() -> None:
    src = sg.nd.array(np.random.default_rng(2).random((4, 5, 3)) * 255)
    before = src.asnumpy().copy()
    mean, std = np.array([1.0, 2.0, 3.0]), np.array([2.0, 3.0, 4.0])
    out = sg.image.color_normalize(src, sg.nd.array(mean), sg.nd.array(std))
    np.testing.assert_allclose(out.asnumpy(), (before - mean) / std, rtol=1e-5)
    np.testing.assert_array_equal(src.asnumpy(), before)


def test_imrotate_matches_scipy() -> None:
    scipy_ndimage = pytest.importorskip("scipy.ndimage")
    xlin = np.expand_dims(np.linspace(0, 0.5, 30), axis=1)
    ylin = np.expand_dims(np.linspace(0, 0.5, 60), axis=0)
    np_img = np.expand_dims(xlin + ylin, axis=2)
    rot = sg.image.imrotate(sg.nd.array(np_img.transpose(2, 0, 1)), 6).asnumpy()
    ref = scipy_ndimage.rotate(np_img, 6, axes=(1, 0), reshape=False, order=1,
                               mode="constant", prefilter=False)
    np.testing.assert_allclose(rot.transpose(1, 2, 0)[10:20, 20:40], ref[10:20, 20:40],
                               atol=1e-5)
    with pytest.raises(ValueError, match="cannot both be True"):
        sg.image.imrotate(sg.nd.array(np_img.transpose(2, 0, 1)), 6, True, True)


def test_augmenters_and_create() -> None:
    sg.random.seed(3)
    src = np.random.default_rng(3).integers(0, 256, (20, 30, 3)).astype(np.uint8)
    augs = sg.image.CreateAugmenter((3, 16, 16), resize=18, rand_crop=True, rand_mirror=True,
                                    mean=True, std=True, brightness=0.2, contrast=0.2,
                                    saturation=0.2, hue=0.1, pca_noise=0.1, rand_gray=0.3)
    names = [type(a).__name__ for a in augs]
    assert names == ["ResizeAug", "RandomCropAug", "HorizontalFlipAug", "CastAug",
                     "ColorJitterAug", "HueJitterAug", "LightingAug", "RandomGrayAug",
                     "ColorNormalizeAug"]
    x = sg.nd.array(src, dtype=np.uint8)
    for a in augs:
        x = a(x)
    assert x.shape == (16, 16, 3) and x.dtype == np.float32
    flipped = sg.image.HorizontalFlipAug(1.0)(src).asnumpy()
    np.testing.assert_array_equal(flipped, src[:, ::-1])
    sat = sg.image.SaturationJitterAug(0.0)(src.astype(np.float32)).asnumpy()
    np.testing.assert_allclose(sat, src, rtol=1e-6)  # alpha = 1 is the identity


def test_image_iter_last_batch_modes(tmp_path) -> None:
    rng = np.random.default_rng(4)
    items = []
    for i in range(5):
        path = tmp_path / f"{i}.png"
        path.write_bytes(_png(rng.integers(0, 256, (8, 8, 3), dtype=np.uint8)))
        items.append([float(i), str(path)])
    kw = dict(imglist=items, path_root="")
    assert sum(1 for _ in sg.image.ImageIter(2, (3, 8, 8), **kw)) == 3
    assert sum(1 for _ in sg.image.ImageIter(2, (3, 8, 8), last_batch_handle="discard",
                                             **kw)) == 2
    it = sg.image.ImageIter(2, (3, 8, 8), last_batch_handle="roll_over", **kw)
    labels = [b.label[0].asnumpy().tolist() for b in it]
    assert labels == [[0.0, 1.0], [2.0, 3.0]]
    it.reset()
    first = next(it)
    assert first.label[0].asnumpy().tolist() == [4.0, 0.0] and first.pad == 1
