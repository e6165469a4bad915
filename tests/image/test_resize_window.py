"""Resizing only a window of the output, and ImageRecordIter's resize-then-crop that uses it,
against a float64 reference of OpenCV's bilinear rule written here (half-pixel centres,
clamped borders, rounded half up)."""
from __future__ import annotations

import io

import numpy as np
import pytest

import symgraph as sg
from symgraph.core.base import DataError
from symgraph.training.image.resize import resize

PIL = pytest.importorskip("PIL.Image")


def taps(src: int, dst: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per output position: left and right source index and the right one's weight."""
    left, right, frac = [], [], []
    for i in range(dst):
        pos = (i + 0.5) * (src / dst) - 0.5  # as OpenCV: scale = src / dst first
        lo = int(np.floor(pos))
        f = pos - lo
        if lo < 0:
            lo, f = 0, 0.0
        if lo >= src - 1:
            lo, f = src - 1, 0.0
        left.append(lo)
        right.append(min(lo + 1, src - 1))
        frac.append(f)
    return np.array(left), np.array(right), np.array(frac)


def reference(img: np.ndarray, w: int, h: int) -> np.ndarray:
    y0, y1, fy = taps(img.shape[0], h)
    x0, x1, fx = taps(img.shape[1], w)
    src = img.astype(np.float64)
    rows = src[y0] * (1 - fy)[:, None, None] + src[y1] * fy[:, None, None]
    out = rows[:, x0] * (1 - fx)[None, :, None] + rows[:, x1] * fx[None, :, None]
    return np.clip(np.floor(out + 0.5), 0, 255).astype(np.uint8)


@pytest.mark.parametrize("shape, size", [((37, 50, 3), (33, 25)), ((9, 7, 1), (20, 30)),
                                         ((40, 3, 4), (5, 2)), ((300, 400, 3), (171, 128))])
def test_bilinear_window_equals_the_reference(shape: tuple, size: tuple) -> None:
    rng = np.random.default_rng(sum(shape))
    img = rng.integers(0, 256, shape, dtype=np.uint8)
    w, h = size
    want = reference(img, w, h)
    np.testing.assert_array_equal(resize(img, w, h, 1), want)
    for _ in range(4):
        top, left = int(rng.integers(0, h)), int(rng.integers(0, w))
        oh, ow = int(rng.integers(1, h - top + 1)), int(rng.integers(1, w - left + 1))
        got = resize(img, w, h, 1, window=(top, left, oh, ow))
        np.testing.assert_array_equal(got, want[top:top + oh, left:left + ow])


def test_nearest_window_equals_opencv_rule() -> None:
    img = np.random.default_rng(3).integers(0, 256, (11, 13, 3), dtype=np.uint8)
    rows = np.floor(np.arange(8) * 11 / 8).astype(int)
    cols = np.floor(np.arange(20) * 13 / 20).astype(int)
    np.testing.assert_array_equal(resize(img, 20, 8, 0, window=(2, 5, 4, 9)),
                                  img[rows][:, cols][2:6, 5:14])


def test_window_outside_the_output_is_refused() -> None:
    img = np.zeros((6, 8, 3), np.uint8)
    before = img.copy()
    with pytest.raises(DataError, match=r"window .* = \(2, 0, 4, 3\) is not inside the 5x4"):
        resize(img, 4, 5, 1, window=(2, 0, 4, 3))
    np.testing.assert_array_equal(img, before)


def write_rec(tmp_path, images: list) -> str:
    path = str(tmp_path / "w.rec")
    rec = sg.recordio.MXRecordIO(path, "w")
    for k, img in enumerate(images):
        buf = io.BytesIO()
        PIL.fromarray(img).save(buf, "PNG")  # lossless: the reference decodes the same pixels
        rec.write(sg.recordio.pack(sg.recordio.IRHeader(0, float(k), k, 0), buf.getvalue()))
    rec.close()
    return path


@pytest.mark.parametrize("rand_crop", [False, True])
def test_record_iter_resize_then_crop(tmp_path, rand_crop: bool) -> None:
    rng = np.random.default_rng(7)
    images = [rng.integers(0, 256, (30 + 7 * k, 41 - 3 * k, 3), dtype=np.uint8)
              for k in range(4)]
    it = sg.io.ImageRecordIter(path_imgrec=write_rec(tmp_path, images), data_shape=(3, 16, 16),
                               batch_size=4, resize=20, rand_crop=rand_crop, mean_r=10.0,
                               std_g=2.0, preprocess_threads=2)
    got = it.next().data[0].asnumpy()
    mean = np.array([10.0, 0, 0], np.float32)[:, None, None]
    mult = (np.float32(1) / np.array([1.0, 2.0, 1.0], np.float32))[:, None, None]
    for k, img in enumerate(images):
        h, w = img.shape[:2]
        nh, nw = (20 * h // w, 20) if h > w else (20, 20 * w // h)
        full = reference(img, nw, nh)
        spots = [(y, x) for y in range(nh - 15) for x in range(nw - 15)] if rand_crop else \
            [((nh - 16) // 2, (nw - 16) // 2)]
        wants = [(full[y:y + 16, x:x + 16].transpose(2, 0, 1).astype(np.float32) - mean) * mult
                 for y, x in spots]
        assert any(np.array_equal(got[k], want) for want in wants), k
