"""Seed 003's names: ``mx.rtc(...)`` called as in MXNet 0.x, and ``mx.test_utils.get_mnist()``
in MXNet's dict layout from the local files."""
from __future__ import annotations

import numpy as np
import pytest

import symgraph as mx


def test_rtc_is_callable_like_mxnet_0x() -> None:
    x, y = mx.nd.zeros((100, 10)), mx.nd.zeros((100, 10))
    kernel = mx.rtc('softmax', [('x', x)], [('y', y)], "y[0] = x[0];")
    assert isinstance(kernel, mx.rtc.Rtc)
    assert kernel.source == mx.rtc.Rtc('softmax', [('x', x)], [('y', y)], "y[0] = x[0];").source
    assert "const int x_dims[] = {100, 10};" in kernel.source
    with pytest.raises(mx.DTypeError, match="float32"):
        mx.rtc('k', [('x', mx.nd.zeros((2,), dtype=np.int32))], [('y', y)], "")


def test_get_mnist_layout(mnist_dir) -> None:
    d = mx.test_utils.get_mnist(str(mnist_dir))
    assert d["train_data"].shape == (60000, 1, 28, 28) and d["test_data"].shape[0] == 10000
    assert d["train_data"].dtype == np.float32 and 0 <= d["train_data"].min() < \
        d["train_data"].max() <= 1
    images, labels = mx.datasets.mnist.load(mnist_dir, "test")
    np.testing.assert_allclose(d["test_data"][5, 0], images[5] / 255.0, rtol=1e-6)
    np.testing.assert_array_equal(d["test_label"], labels)


def test_get_mnist_missing_folder(tmp_path, monkeypatch) -> None:
    from symgraph.gluon.data.vision.datasets import mnist as datasets
    monkeypatch.setattr(datasets, "_opener", lambda url: (_ for _ in ()).throw(OSError("down")))
    with pytest.raises(mx.DataError) as err:
        mx.test_utils.get_mnist(str(tmp_path))
    msg = str(err.value)  # names get_mnist's own parameter, not MNIST's root=
    assert msg.startswith(f"get_mnist: folder {tmp_path} lacks train-images-idx3-ubyte")
    assert "pass path=..." in msg and "root=" not in msg and "down" in msg
