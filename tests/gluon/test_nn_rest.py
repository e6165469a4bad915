"""The rest of gluon.nn (transposed 1-D/3-D convolutions, 3-D and global 1-D/3-D pools,
channels-last layouts, ReflectionPad2D, BatchNormReLU, contrib SyncBatchNorm) against
independent float64 numpy references; bad arguments give typed errors."""
from __future__ import annotations

import itertools
import re

import numpy as np
import pytest

import symgraph as sg
from symgraph.core.base import AttrError
from symgraph.gluon import contrib, nn

nd = sg.nd
RNG = np.random.default_rng(7)


def _conv_ref(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Direct NC... cross-correlation, stride 1, no padding, one group."""
    k = w.shape[2:]
    out = tuple(s - kk + 1 for s, kk in zip(x.shape[2:], k))
    y = np.zeros((x.shape[0], w.shape[0]) + out)
    for pos in itertools.product(*[range(o) for o in out]):
        win = x[(slice(None), slice(None)) + tuple(slice(p, p + kk) for p, kk in zip(pos, k))]
        y[(slice(None), slice(None)) + pos] = np.tensordot(win, w, axes=(
            list(range(1, x.ndim)), list(range(1, w.ndim))))
    return y + b.reshape((1, -1) + (1,) * len(k))


def _deconv_ref(x: np.ndarray, w: np.ndarray, stride: int) -> np.ndarray:
    """Transposed convolution by scattering: weight (C_in, C_out, *k), no padding."""
    k = w.shape[2:]
    out = tuple((s - 1) * stride + kk for s, kk in zip(x.shape[2:], k))
    y = np.zeros((x.shape[0], w.shape[1]) + out)
    for pos in itertools.product(*[range(s) for s in x.shape[2:]]):
        contrib_ = np.tensordot(x[(slice(None), slice(None)) + pos], w, axes=(1, 0))
        sl = tuple(slice(p * stride, p * stride + kk) for p, kk in zip(pos, k))
        y[(slice(None), slice(None)) + sl] += contrib_
    return y


def _pool_ref(x: np.ndarray, k: int, s: int, kind: str) -> np.ndarray:
    """Valid pooling of NC... data with a cubic window ``k`` and stride ``s``."""
    out = tuple((n - k) // s + 1 for n in x.shape[2:])
    y = np.zeros(x.shape[:2] + out)
    for pos in itertools.product(*[range(o) for o in out]):
        win = x[(slice(None), slice(None)) + tuple(slice(p * s, p * s + k) for p in pos)]
        red = tuple(range(2, x.ndim))
        y[(slice(None), slice(None)) + pos] = win.max(axis=red) if kind == "max" \
            else win.mean(axis=red)
    return y


def _last(a: np.ndarray) -> np.ndarray:
    return np.moveaxis(a, 1, -1)


def _first(a: np.ndarray) -> np.ndarray:
    return np.moveaxis(a, -1, 1)


@pytest.mark.parametrize("cls,layout,shape", [(nn.Conv1D, "NWC", (2, 7, 3)),
                                              (nn.Conv2D, "NHWC", (2, 6, 5, 3)),
                                              (nn.Conv3D, "NDHWC", (1, 4, 5, 4, 3))])
def test_channels_last_convolution(cls: type, layout: str, shape: tuple) -> None:
    conv = cls(4, 3, layout=layout, in_channels=3)
    conv.initialize()
    x = RNG.normal(size=shape)
    conv.cast("float64")
    y = conv(nd.array(x, dtype=np.float64)).asnumpy()
    w = conv.weight.data().asnumpy()  # (O, *k, I): MXNet's channels-last weights
    assert w.shape == (4,) + (3,) * (len(shape) - 2) + (3,)
    want = _last(_conv_ref(_first(x), _first(w), conv.bias.data().asnumpy()))
    np.testing.assert_allclose(y, want, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("cls,shape,layout", [(nn.Conv1DTranspose, (2, 3, 5), "NCW"),
                                              (nn.Conv3DTranspose, (1, 3, 3, 2, 3), "NCDHW"),
                                              (nn.Conv2DTranspose, (2, 4, 3, 3), "NHWC")])
def test_transposed_convolution(cls: type, shape: tuple, layout: str) -> None:
    deconv = cls(2, 3, strides=2, layout=layout, use_bias=False, in_channels=3)
    deconv.initialize()
    deconv.cast("float64")
    x = RNG.normal(size=shape)
    w = deconv.weight.data().asnumpy()  # (C_in, C_out, *k) in every layout
    assert w.shape == (3, 2) + (3,) * (len(shape) - 2)
    y = deconv(nd.array(x, dtype=np.float64)).asnumpy()
    if layout.endswith("C"):
        want = _last(_deconv_ref(_first(x), w, 2))
    else:
        want = _deconv_ref(x, w, 2)
    np.testing.assert_allclose(y, want, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("cls,kind,layout,shape", [
    (nn.MaxPool3D, "max", "NCDHW", (1, 2, 5, 4, 6)),
    (nn.AvgPool3D, "avg", "NDHWC", (1, 5, 4, 6, 2)),
    (nn.MaxPool1D, "max", "NWC", (2, 7, 3)), (nn.AvgPool2D, "avg", "NHWC", (1, 6, 5, 2))])
def test_pools(cls: type, kind: str, layout: str, shape: tuple) -> None:
    pool = cls(3, 2, layout=layout)
    x = RNG.normal(size=shape)
    y = pool(nd.array(x, dtype=np.float64)).asnumpy()
    last = layout.endswith("C")
    want = _pool_ref(_first(x) if last else x, 3, 2, kind)
    np.testing.assert_allclose(y, _last(want) if last else want, rtol=1e-12)


@pytest.mark.parametrize("cls,layout,shape,red", [
    (nn.GlobalAvgPool1D, "NCW", (2, 3, 5), (2,)), (nn.GlobalMaxPool1D, "NWC", (2, 5, 3), (1,)),
    (nn.GlobalAvgPool3D, "NDHWC", (1, 3, 2, 4, 2), (1, 2, 3)),
    (nn.GlobalMaxPool3D, "NCDHW", (1, 2, 3, 2, 4), (2, 3, 4))])
def test_global_pools(cls: type, layout: str, shape: tuple, red: tuple) -> None:
    x = RNG.normal(size=shape)
    y = cls(layout=layout)(nd.array(x)).asnumpy()
    want = x.max(axis=red, keepdims=True) if "Max" in cls.__name__ \
        else x.mean(axis=red, keepdims=True)
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-6)


def test_hybridized_channels_last_pool_trains() -> None:
    net = nn.HybridSequential()
    net.add(nn.Conv2D(3, 3, layout="NHWC", in_channels=2), nn.MaxPool2D(layout="NHWC"))
    net.initialize()
    net.hybridize()
    x = nd.array(RNG.normal(size=(1, 6, 6, 2)))
    with sg.autograd.record():
        y = net(x)
    y.backward()
    assert y.shape == (1, 2, 2, 3)
    assert np.abs(net[0].weight.grad().asnumpy()).sum() > 0


def test_reflection_pad() -> None:
    x = RNG.normal(size=(2, 3, 4, 5))
    y = nn.ReflectionPad2D(2)(nd.array(x)).asnumpy()
    want = np.pad(x, ((0, 0), (0, 0), (2, 2), (2, 2)), mode="reflect")
    np.testing.assert_allclose(y, want, rtol=1e-6)
    y = nn.ReflectionPad2D((0, 0, 0, 0, 1, 0, 0, 2))(nd.array(x)).asnumpy()
    np.testing.assert_allclose(y, np.pad(x, ((0, 0), (0, 0), (1, 0), (0, 2)), mode="reflect"),
                               rtol=1e-6)


def _bn_ref(x: np.ndarray, eps: float = 1e-5) -> np.ndarray:
    red = tuple(i for i in range(x.ndim) if i != 1)
    return (x - x.mean(axis=red, keepdims=True)) / np.sqrt(x.var(axis=red, keepdims=True) + eps)


def test_sync_batchnorm_one_device_is_batchnorm() -> None:
    bn = contrib.nn.SyncBatchNorm(in_channels=3, num_devices=1)
    bn.initialize()
    bn.cast("float64")
    x = RNG.normal(size=(5, 3, 4))
    xs = nd.array(x, dtype=np.float64)
    xs.attach_grad()
    head = RNG.normal(size=x.shape)
    with sg.autograd.record():
        y = bn(xs)
        loss = (y * nd.array(head, dtype=np.float64)).sum()
    loss.backward()
    np.testing.assert_allclose(y.asnumpy(), _bn_ref(x), rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(bn.running_mean.data().asnumpy(),
                               0.1 * x.mean(axis=(0, 2)), rtol=1e-9)
    h, num = 1e-6, np.zeros_like(x)  # central differences of the loss in float64
    for i in np.ndindex(*x.shape):
        d = np.zeros_like(x)
        d[i] = h
        num[i] = ((_bn_ref(x + d) * head).sum() - (_bn_ref(x - d) * head).sum()) / (2 * h)
    np.testing.assert_allclose(xs.grad.asnumpy(), num, rtol=1e-5, atol=1e-7)


def test_batchnorm_relu() -> None:
    layer = nn.BatchNormReLU(in_channels=3)
    layer.initialize()
    x = RNG.normal(size=(4, 3, 2))
    with sg.autograd.record():
        y = layer(nd.array(x)).asnumpy()
    np.testing.assert_allclose(y, np.maximum(_bn_ref(x), 0), rtol=1e-4, atol=1e-5)
    # the counter in the prefix depends on the layers made before in this process
    assert re.fullmatch(r"batchnormrelu\d+_", layer.prefix), layer.prefix
    assert sorted(layer.collect_params()) == sorted(
        f"{layer.prefix}{n}" for n in ("gamma", "beta", "running_mean", "running_var"))


@pytest.mark.parametrize("make,what", [
    (lambda: nn.Conv2D(4, 3, layout="NCWH"), "layout 'NCWH'"),
    (lambda: nn.MaxPool3D(layout="NHWC"), "layout 'NHWC'"),
    (lambda: nn.GlobalAvgPool1D(layout="NCHW"), "layout 'NCHW'"),
    (lambda: nn.ReflectionPad2D((1, 2)), "8 ints"),
    (lambda: contrib.nn.SyncBatchNorm(num_devices=0), "num_devices"),
    (lambda: nn.Conv3DTranspose(2, (3, 3)), "kernel_size")])
def test_bad_arguments(make, what: str) -> None:
    with pytest.raises(AttrError, match=what):
        make()
