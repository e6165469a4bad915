"""Every gluon.nn layer against a float64 numpy reference, imperatively (F = sg.nd) and
hybridized (F = sg.sym, traced once and replayed)."""
from __future__ import annotations

import numpy as np
import pytest

import symgraph as sg
from symgraph.gluon import nn

from . import _refs

RTOL, ATOL = 1e-4, 1e-5


def _param(p) -> np.ndarray:
    return p.data().asnumpy().astype(np.float64)


def _check(block, ref, *inputs, both) -> None:
    a, b = both(block, *inputs)
    np.testing.assert_allclose(a, ref(), rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("flatten", [True, False])
def test_dense(rng, both, flatten: bool) -> None:
    x = rng.normal(size=(4, 3, 5)).astype(np.float32)
    layer = nn.Dense(6, activation="tanh", flatten=flatten)
    layer.initialize(sg.init.Normal(0.5))
    layer(sg.nd.array(x))  # deferred: in_units is inferred here

    def ref() -> np.ndarray:
        w, b = _param(layer.weight), _param(layer.bias)
        xx = x.reshape(4, -1) if flatten else x
        return np.tanh(xx.astype(np.float64) @ w.T + b)
    assert layer.weight.shape == ((6, 15) if flatten else (6, 5))
    _check(layer, ref, x, both=both)


def test_dense_in_units_and_no_bias(rng, both) -> None:
    layer = nn.Dense(3, use_bias=False, in_units=4)
    layer.initialize()
    assert layer.weight.data().shape == (3, 4) and layer.bias is None
    x = rng.normal(size=(2, 4)).astype(np.float32)
    _check(layer, lambda: x @ _param(layer.weight).T, x, both=both)


@pytest.mark.parametrize("ndim,cls", [(1, nn.Conv1D), (2, nn.Conv2D), (3, nn.Conv3D)])
def test_conv(rng, both, ndim: int, cls) -> None:
    shape = {1: (2, 4, 9), 2: (2, 4, 7, 6), 3: (1, 4, 5, 4, 5)}[ndim]
    x = rng.normal(size=shape).astype(np.float32)
    layer = cls(6, kernel_size=3, strides=2 if ndim < 3 else 1, padding=1,
                dilation=1 if ndim == 3 else 2 if ndim == 1 else 1, groups=2)
    layer.initialize(sg.init.Xavier())
    layer(sg.nd.array(x))
    assert layer.weight.shape == (6, 2) + (3,) * ndim
    k = layer._kwargs

    def ref() -> np.ndarray:
        return _refs.conv_nd(x.astype(np.float64), _param(layer.weight), _param(layer.bias),
                             k["stride"], k["pad"], k["dilate"], 2)
    _check(layer, ref, x, both=both)


def test_conv2d_activation_in_channels(rng, both) -> None:
    layer = nn.Conv2D(3, (3, 2), in_channels=2, activation="relu")
    layer.initialize(sg.init.Normal(1.0))
    assert layer.weight.data().shape == (3, 2, 3, 2)
    x = rng.normal(size=(2, 2, 5, 5)).astype(np.float32)
    ref = lambda: np.maximum(_refs.conv_nd(x, _param(layer.weight), _param(layer.bias),  # noqa
                                           (1, 1), (0, 0), (1, 1), 1), 0)
    _check(layer, ref, x, both=both)


def test_conv2d_transpose(rng, both) -> None:
    x = rng.normal(size=(2, 3, 4, 5)).astype(np.float32)
    layer = nn.Conv2DTranspose(4, kernel_size=3, strides=2, padding=1, output_padding=1)
    layer.initialize(sg.init.Normal(0.3))
    layer(sg.nd.array(x))
    assert layer.weight.shape == (3, 4, 3, 3)
    ref = lambda: _refs.deconv_2d(x, _param(layer.weight), _param(layer.bias),  # noqa
                                  (2, 2), (1, 1), (1, 1))
    _check(layer, ref, x, both=both)


@pytest.mark.parametrize("layer,kind,kernel,stride,pad", [
    (lambda: nn.MaxPool2D(), "max", (2, 2), (2, 2), (0, 0)),
    (lambda: nn.MaxPool2D(3, 2, 1), "max", (3, 3), (2, 2), (1, 1)),
    (lambda: nn.AvgPool2D(3, 1, 1), "avg", (3, 3), (1, 1), (1, 1)),
    (lambda: nn.MaxPool1D(2), "max", (2,), (2,), (0,)),
])
def test_pooling(rng, both, layer, kind, kernel, stride, pad) -> None:
    x = rng.normal(size=(2, 3, 6, 6) if len(kernel) == 2 else (2, 3, 8)).astype(np.float32)
    _check(layer(), lambda: _refs.pool_nd(x, kernel, stride, pad, kind), x, both=both)


def test_global_avg_pool_and_flatten(rng, both) -> None:
    x = rng.normal(size=(2, 3, 5, 4)).astype(np.float32)
    _check(nn.GlobalAvgPool2D(), lambda: x.mean(axis=(2, 3), keepdims=True), x, both=both)
    _check(nn.Flatten(), lambda: x.reshape(2, -1), x, both=both)


@pytest.mark.parametrize("act,fn", [
    ("relu", lambda v: np.maximum(v, 0)), ("sigmoid", lambda v: 1 / (1 + np.exp(-v))),
    ("tanh", np.tanh), ("softrelu", lambda v: np.log1p(np.exp(v))),
])
def test_activation(rng, both, act, fn) -> None:
    x = rng.normal(size=(3, 4)).astype(np.float32)
    _check(nn.Activation(act), lambda: fn(x.astype(np.float64)), x, both=both)


def test_leaky_relu(rng, both) -> None:
    x = rng.normal(size=(3, 4)).astype(np.float32)
    _check(nn.LeakyReLU(0.1), lambda: np.where(x > 0, x, 0.1 * x), x, both=both)


def test_embedding(rng, both) -> None:
    layer = nn.Embedding(10, 4)
    layer.initialize(sg.init.Normal(1.0))
    idx = np.array([[1, 3], [9, 0]], np.float32)
    _check(layer, lambda: _param(layer.weight)[idx.astype(int)], idx, both=both)


def test_sequential_and_lambda(rng, both) -> None:
    net = nn.HybridSequential()
    with net.name_scope():
        net.add(nn.Dense(5, in_units=3), nn.HybridLambda(lambda F, v: F.relu(v)),
                nn.HybridLambda("tanh"))
    net.initialize(sg.init.Normal(1.0))
    x = rng.normal(size=(2, 3)).astype(np.float32)
    d = net[0]
    ref = lambda: np.tanh(np.maximum(x @ _param(d.weight).T + _param(d.bias), 0))  # noqa
    _check(net, ref, x, both=both)
    seq = nn.Sequential()
    seq.add(nn.Lambda("relu"), nn.Lambda(lambda v: v * 2))
    out = seq(sg.nd.array(x)).asnumpy()
    np.testing.assert_allclose(out, np.maximum(x, 0) * 2, rtol=1e-6)
    assert len(seq) == 2 and len(net) == 3


def test_dropout_modes(rng) -> None:
    x = np.ones((200, 50), np.float32)
    layer = nn.Dropout(0.4)
    np.testing.assert_array_equal(layer(sg.nd.array(x)).asnumpy(), x)  # predict mode
    with sg.autograd.record():
        out = layer(sg.nd.array(x)).asnumpy()
    kept = out != 0
    assert abs(kept.mean() - 0.6) < 0.02
    np.testing.assert_allclose(out[kept], 1 / 0.6, rtol=1e-5)


def test_batchnorm_train_updates_running_stats(rng, both) -> None:
    x = (rng.normal(size=(8, 3, 4, 4)) * 2 + 1).astype(np.float32)
    layer = nn.BatchNorm(momentum=0.8)
    layer.initialize()
    layer.gamma.set_data(np.array([1.0, 2.0, 0.5], np.float32))
    layer.beta.set_data(np.array([0.0, 1.0, -1.0], np.float32))
    x64 = x.astype(np.float64)
    mean, var = x64.mean(axis=(0, 2, 3)), x64.var(axis=(0, 2, 3))
    g, b = np.array([1.0, 2.0, 0.5]), np.array([0.0, 1.0, -1.0])
    ref = (x64 - mean[None, :, None, None]) / np.sqrt(var[None, :, None, None] + 1e-5) * \
        g[None, :, None, None] + b[None, :, None, None]
    with sg.autograd.record():
        out = layer(sg.nd.array(x))
    np.testing.assert_allclose(out.asnumpy(), ref, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(_param(layer.running_mean), 0.2 * mean, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(_param(layer.running_var), 0.8 + 0.2 * var, rtol=1e-5)
    # Predict mode: the running statistics normalise, imperatively and hybridized alike.
    rm, rv = _param(layer.running_mean), _param(layer.running_var)
    pred = (x64 - rm[None, :, None, None]) / np.sqrt(rv[None, :, None, None] + 1e-5) * \
        g[None, :, None, None] + b[None, :, None, None]
    _check(layer, lambda: pred, x, both=both)
    assert [p.grad_req for p in layer.collect_params().values()] == \
        ["write", "write", "null", "null"]


def test_positional_arguments_in_mxnets_order(rng, both) -> None:
    """Conv2D(channels, kernel, strides, padding, dilation, groups, layout, activation, ...)
    and AvgPool2D(pool_size, strides, padding, ceil_mode, layout, count_include_pad)."""
    conv = nn.Conv2D(2, 3, 1, 1, 1, 1, "NCHW", "relu", False)
    assert conv.act is not None and conv.bias is None
    x = rng.normal(size=(1, 1, 5, 5)).astype(np.float32)
    pool = nn.AvgPool2D(3, 1, 1, False, "NCHW", False)
    _check(pool, lambda: _refs.pool_nd(x, (3, 3), (1, 1), (1, 1), "avg", False), x, both=both)
