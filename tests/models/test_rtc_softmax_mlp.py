"""The seed's rtc softmax loss layer (an NDArrayOp) on an MLP."""
from __future__ import annotations

import numpy as np
import pytest

import symgraph as sg
from symgraph.interop.models import rtc_softmax_mlp
from symgraph.interop.models.rtc_softmax_mlp import NDArraySoftmax, mlp
from symgraph.interop.models.runner import parser, train
from symgraph.interop.test_utils import assert_almost_equal


def _xent(x: np.ndarray, label: np.ndarray) -> float:
    z = x - x.max(axis=1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    return float(-logp[np.arange(len(x)), label.astype(int)].sum())


def test_forward_and_loss_gradient(rng) -> None:
    x, label = rng.normal(size=(5, 4)), rng.integers(0, 4, size=5).astype(np.float64)
    sym = NDArraySoftmax()(data=sg.sym.var("data"), name="softmax")
    assert sym.list_arguments() == ["data", "softmax_label"]
    exe = sym.bind(sg.cpu(), {"data": sg.nd.array(x, dtype=np.float64),
                              "softmax_label": sg.nd.array(label, dtype=np.float64)},
                   args_grad={"data": sg.nd.zeros(x.shape, dtype=np.float64)},
                   grad_req={"data": "write", "softmax_label": "null"})
    prob = exe.forward(is_train=True)[0].asnumpy()
    e = np.exp(x)
    assert_almost_equal(prob, e / e.sum(axis=1, keepdims=True), rtol=1e-10)
    exe.backward()  # a loss layer: no head gradient read
    numeric = np.zeros_like(x)
    for idx in np.ndindex(*x.shape):
        for sign in (1, -1):
            xp = x.copy()
            xp[idx] += sign * 1e-6
            numeric[idx] += sign * _xent(xp, label) / 2e-6
    assert_almost_equal(exe.grad_dict["data"], numeric, rtol=1e-5, atol=1e-7)


def _train(sym, mnist_dir, *flags: str):
    args = parser("rtc_softmax_mlp", rtc_softmax_mlp.RECIPE).parse_args(
        ["--data-dir", str(mnist_dir), "--log-every", "100000", *flags])
    return train("rtc_softmax_mlp", args, rtc_softmax_mlp.RECIPE, sym)


def test_training_matches_builtin_softmax_output(mnist_dir) -> None:
    """Same seed, same data: parameters after 20 SGD steps equal SoftmaxOutput's."""
    ours = _train(mlp(), mnist_dir, "--num-train", "2000")["module"].get_params()[0]
    h = sg.sym.flatten(sg.sym.var("data"))
    for i, n in enumerate((128, 64)):
        h = sg.sym.Activation(sg.sym.FullyConnected(h, num_hidden=n, name=f"fc{i + 1}"),
                              act_type="relu")
    ref_sym = sg.sym.SoftmaxOutput(sg.sym.FullyConnected(h, num_hidden=10, name="fc3"),
                                   name="softmax")
    ref = _train(ref_sym, mnist_dir, "--num-train", "2000")["module"].get_params()[0]
    for name in ("fc1_weight", "fc3_weight", "fc3_bias"):
        assert_almost_equal(ours[name], ref[name], rtol=1e-4, atol=1e-6)


def test_one_epoch_accuracy(mnist_dir) -> None:
    assert _train(mlp(), mnist_dir, "--epochs", "1")["accuracy"] > 0.92


@pytest.mark.gpu
def test_gpu_matches_cpu(rng) -> None:
    x = rng.normal(size=(100, 10)).astype(np.float32)
    label = rng.integers(0, 10, size=100).astype(np.float32)
    results = []
    for ctx in (sg.cpu(), sg.gpu()):
        sym = NDArraySoftmax()(data=sg.sym.var("data"), name="softmax")
        exe = sym.bind(ctx, {"data": sg.nd.array(x, ctx),
                             "softmax_label": sg.nd.array(label, ctx)},
                       args_grad={"data": sg.nd.zeros(x.shape, ctx)},
                       grad_req={"data": "write", "softmax_label": "null"})
        out = exe.forward(is_train=True)[0].asnumpy()
        exe.backward()
        results.append((out, exe.grad_dict["data"].asnumpy()))
    assert_almost_equal(results[1][0], results[0][0], rtol=1e-5, atol=1e-7)
    assert_almost_equal(results[1][1], results[0][1], rtol=1e-5, atol=1e-7)
