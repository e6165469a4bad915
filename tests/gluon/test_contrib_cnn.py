"""gluon.contrib.cnn's deformable convolution layers against a float64 numpy reference
written here (zero-padded bilinear sampling of every kernel tap, then a grouped sum), outputs
and gradients (central differences of the reference), imperatively and hybridized; against
MXNet 1.9.1 live (a subprocess: same parameters, outputs and gradients); bad arguments give
typed errors."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import symgraph as sg
from symgraph.core.base import AttrError, ShapeError
from symgraph.gluon.contrib.cnn import DeformableConvolution, ModulatedDeformableConvolution

from ._mxnet_child import run_child

K, PAD, STRIDE, DG, GROUPS = (2, 3), (1, 0), (1, 2), 2, 2


def _bilinear(img: np.ndarray, y: float, x: float, v1: bool) -> np.ndarray:
    """img (C, H, W) sampled at (y, x), pixels outside the image being zero; ``v1``: MXNet's
    DeformableConvolution's border instead (nothing outside [0, H) x [0, W), positions past
    the last row or column moved onto it)."""
    h, w = img.shape[1:]
    if v1:
        if not (0 <= y < h and 0 <= x < w):
            return np.zeros(img.shape[0])
        y, x = min(y, h - 1.0), min(x, w - 1.0)
    y0, x0 = int(np.floor(y)), int(np.floor(x))
    out = np.zeros(img.shape[0])
    for yy, wy in ((y0, 1 - (y - y0)), (y0 + 1, y - y0)):
        for xx, wx in ((x0, 1 - (x - x0)), (x0 + 1, x - x0)):
            if 0 <= yy < h and 0 <= xx < w:
                out = out + wy * wx * img[:, yy, xx]
    return out


def _conv2d(x: np.ndarray, w: np.ndarray, b, pad, stride, groups) -> np.ndarray:
    """Plain grouped 2-d cross-correlation, float64."""
    n, c, h, wd = x.shape
    f, cg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad[0],) * 2, (pad[1],) * 2))
    ho, wo = (h + 2 * pad[0] - kh) // stride[0] + 1, (wd + 2 * pad[1] - kw) // stride[1] + 1
    out = np.zeros((n, f, ho, wo))
    for o in range(f):
        g = o // (f // groups)
        for i in range(ho):
            for j in range(wo):
                win = xp[:, g * cg:(g + 1) * cg, i * stride[0]:i * stride[0] + kh,
                         j * stride[1]:j * stride[1] + kw]
                out[:, o, i, j] = np.einsum("nckl,ckl->n", win, w[o])
    return out if b is None else out + b.reshape(1, -1, 1, 1)


def reference(x, ow, ob, w, b, modulated: bool) -> np.ndarray:
    """The layer's output: offsets (and masks) from a plain convolution, then each output
    pixel's taps sampled at the shifted positions of their deformable group."""
    off = _conv2d(x, ow, ob, PAD, STRIDE, GROUPS)
    n, c = x.shape[:2]
    f, cg, kh, kw = w.shape
    taps, ho, wo = kh * kw, off.shape[2], off.shape[3]
    mask = 2 / (1 + np.exp(-off[:, 2 * DG * taps:])) if modulated else np.ones((n, DG * taps, ho, wo))
    out = np.zeros((n, f, ho, wo))
    for bn in range(n):
        for i in range(ho):
            for j in range(wo):
                cols = np.zeros((c, kh, kw))
                for d in range(DG):
                    chans = slice(d * c // DG, (d + 1) * c // DG)
                    for t in range(taps):
                        dy, dx = off[bn, 2 * (d * taps + t), i, j], off[bn, 2 * (d * taps + t) + 1, i, j]
                        y = i * STRIDE[0] - PAD[0] + t // kw + dy
                        xx = j * STRIDE[1] - PAD[1] + t % kw + dx
                        cols[chans, t // kw, t % kw] = mask[bn, d * taps + t, i, j] * _bilinear(
                            x[bn, chans], y, xx, not modulated)
                for o in range(f):
                    g = o // (f // GROUPS)
                    out[bn, o, i, j] = np.sum(cols[g * cg:(g + 1) * cg] * w[o])
    return out if b is None else out + b.reshape(1, -1, 1, 1)


def _setup(modulated: bool, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    per = 3 if modulated else 2
    taps = K[0] * K[1]
    return {"x": rng.normal(size=(2, 4, 5, 6)),
            "offset_weight": 0.4 * rng.normal(size=(per * DG * taps, 4 // GROUPS) + K),
            "offset_bias": 0.3 * rng.normal(size=(per * DG * taps,)),
            "deformable_conv_weight": rng.normal(size=(6, 4 // GROUPS) + K),
            "deformable_conv_bias": rng.normal(size=(6,))}


def _layer(cls, hybridize: bool):
    net = cls(6, kernel_size=K, strides=STRIDE, padding=PAD, groups=GROUPS,
              num_deformable_group=DG, in_channels=4)
    net.initialize()
    if hybridize:
        net.hybridize()
    return net


def _ours(cls, arrays: dict, head: np.ndarray, hybridize: bool) -> dict:
    """Output and gradients (x and every parameter) of the layer for head gradient ``head``."""
    net = _layer(cls, hybridize)
    x = sg.nd.array(arrays["x"].astype(np.float32))
    x.attach_grad()
    with sg.autograd.record():
        net(x)  # deferred shapes
        params = {k[len(net.prefix):]: p for k, p in net.collect_params().items()}
        for name, p in params.items():
            p.set_data(sg.nd.array(arrays[name].astype(np.float32)))
        y = net(x)
    y.backward(sg.nd.array(head.astype(np.float32)))
    got = {"y": y.asnumpy(), "x": x.grad.asnumpy()}
    got.update({k: p.grad().asnumpy() for k, p in params.items()})
    return got


def _fd_grad(fun, arrays: dict, name: str, head: np.ndarray, picks: np.ndarray,
             h: float = 1e-6) -> np.ndarray:
    """d sum(head * fun(arrays)) / d arrays[name] at the flat positions ``picks``, by central
    differences in float64."""
    base = arrays[name]
    grad = []
    for flat in picks:
        vals = []
        for step in (h, -h):
            moved = base.copy()
            moved.flat[flat] += step
            vals.append(np.sum(head * fun({**arrays, name: moved})))
        grad.append((vals[0] - vals[1]) / (2 * h))
    return np.array(grad)


@pytest.mark.parametrize("hybridize", [False, True])
@pytest.mark.parametrize("cls,modulated", [(DeformableConvolution, False),
                                           (ModulatedDeformableConvolution, True)])
def test_output_matches_float64_reference(cls, modulated: bool, hybridize: bool) -> None:
    arrays = _setup(modulated)
    want = reference(*(arrays[k] for k in ("x", "offset_weight", "offset_bias",
                                           "deformable_conv_weight", "deformable_conv_bias")),
                     modulated)
    got = _ours(cls, arrays, np.ones_like(want), hybridize)
    assert want.shape == (2, 6, 6, 2)
    np.testing.assert_allclose(got["y"], want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("cls,modulated", [(DeformableConvolution, False),
                                           (ModulatedDeformableConvolution, True)])
def test_gradients_match_central_differences(cls, modulated: bool) -> None:
    arrays = _setup(modulated, seed=1)
    arrays["x"] = arrays["x"][:1, :, :4, :4]  # keeps the differences few
    names = ("x", "offset_weight", "offset_bias", "deformable_conv_weight",
             "deformable_conv_bias")
    fun = lambda a: reference(*(a[k] for k in names), modulated)  # noqa: E731
    head = np.random.default_rng(2).normal(size=fun(arrays).shape)
    got = _ours(cls, arrays, head, hybridize=True)
    rng = np.random.default_rng(3)
    for name in ("x", "offset_weight", "deformable_conv_weight", "deformable_conv_bias"):
        # 30 entries of each (all of the small ones) keep the differences few
        picks = rng.choice(arrays[name].size, min(30, arrays[name].size), replace=False)
        np.testing.assert_allclose(got[name].ravel()[picks],
                                   _fd_grad(fun, arrays, name, head, picks),
                                   rtol=2e-3, atol=2e-3, err_msg=name)


def test_parameters_and_bad_arguments() -> None:
    net = DeformableConvolution(4, 3, use_bias=False, offset_use_bias=False)
    assert [k[len(net.prefix):] for k in net.collect_params()] == [
        "offset_weight", "deformable_conv_weight"]
    assert net.collect_params()[net.prefix + "offset_weight"].shape == (18, 0, 3, 3)
    with pytest.raises(AttrError, match="layout 'NCW'"):
        DeformableConvolution(4, 3, layout="NCW")
    with pytest.raises(AttrError, match="kernel_size"):
        ModulatedDeformableConvolution(4, (3, 3, 3))
    net = DeformableConvolution(4, 3, in_channels=3)
    net.initialize()
    data = np.ones((1, 2, 5, 5), np.float32)
    x = sg.nd.array(data)
    with pytest.raises(ShapeError, match="deformable_conv"):
        net(x)
    np.testing.assert_array_equal(x.asnumpy(), data)


# run by both processes: ``mx`` is mxnet or symgraph
CODE = '''
def run(mx, arrays):
    from_cnn = mx.gluon.contrib.cnn
    out = {}
    for cls in (from_cnn.DeformableConvolution, from_cnn.ModulatedDeformableConvolution):
        net = cls(6, kernel_size=(2, 3), strides=(1, 2), padding=(1, 0), groups=2,
                  num_deformable_group=2, activation="tanh")
        net.initialize()
        x = mx.nd.array(arrays["x"])
        x.attach_grad()
        net(x)
        key = cls.__name__
        for name, p in net.collect_params().items():
            p.set_data(mx.nd.array(arrays[key + "_" + name[len(net.prefix):]]))
        # MXNet 1.9.1 computes the modulated layer's data gradient on GPUs only
        grads = key == "DeformableConvolution"
        with mx.autograd.record():
            y = net(x)
        out[key] = {"names": [k[len(net.prefix):] for k in net.collect_params()],
                    "shapes": [list(p.shape) for p in net.collect_params().values()],
                    "y": y.asnumpy().tolist()}
        if grads:
            y.backward(mx.nd.array(arrays["head"]))
            out[key]["x"] = x.grad.asnumpy().tolist()
            out[key].update({k[len(net.prefix):]: p.grad().asnumpy().tolist()
                             for k, p in net.collect_params().items()})
    return out
'''

CHILD = CODE + '''
import json, sys
import numpy as np
import mxnet as mx
with open(sys.argv[2], "w") as f:
    json.dump(run(mx, dict(np.load(sys.argv[1]))), f)
'''


@pytest.mark.mxnet
def test_layers_match_mxnet(tmp_path: Path) -> None:
    arrays = {"x": _setup(False)["x"].astype(np.float32),
              "head": np.random.default_rng(3).normal(size=(2, 6, 6, 2)).astype(np.float32)}
    for cls, modulated in (("DeformableConvolution", False),
                           ("ModulatedDeformableConvolution", True)):
        for name, value in _setup(modulated, seed=4).items():
            if name != "x":
                arrays[f"{cls}_{name}"] = value.astype(np.float32)
    want = json.loads(run_child(tmp_path, CHILD, arrays, "out.json").read_text())
    ns: dict = {}
    exec(CODE, ns)  # noqa: S102 (the code both frameworks run)
    got = ns["run"](sg, arrays)
    for cls in want:
        assert got[cls]["names"] == want[cls]["names"]
        assert got[cls]["shapes"] == want[cls]["shapes"]
        for key in set(want[cls]) - {"names", "shapes"}:
            np.testing.assert_allclose(np.array(got[cls][key]), np.array(want[cls][key]),
                                       rtol=1e-4, atol=1e-4, err_msg=f"{cls} {key}")
