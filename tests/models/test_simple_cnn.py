"""The seed CNN: argument shapes from simple_bind, and one training step against PyTorch."""
from __future__ import annotations

import numpy as np
import pytest

import symgraph as sg
from symgraph.interop.models.simple_cnn import build
from symgraph.interop.test_utils import assert_almost_equal

EXPECTED = {"conv1_weight": (32, 1, 3, 3), "conv1_bias": (32,), "conv2_weight": (64, 32, 3, 3),
            "conv2_bias": (64,), "fc1_weight": (128, 3136), "fc1_bias": (128,),
            "fc2_weight": (10, 128), "fc2_bias": (10,), "softmax_label": (64,)}


def test_simple_bind_argument_shapes() -> None:
    exe = build().simple_bind(sg.cpu(), data=(64, 1, 28, 28))
    got = {k: v.shape for k, v in exe.arg_dict.items() if k != "data"}
    assert got == EXPECTED
    assert exe.outputs[0].shape == (64, 10)
    assert build().list_arguments() == ["data"] + list(EXPECTED)


def test_wrong_label_shape_names_the_node() -> None:
    with pytest.raises(sg.ShapeError, match=r"softmax \(SoftmaxOutput\).*label"):
        build().simple_bind(sg.cpu(), data=(64, 1, 28, 28), softmax_label=(32,))


def test_one_step_matches_pytorch() -> None:
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    rng = np.random.default_rng(3)
    batch = 8
    sym = build()
    exe = sym.simple_bind(sg.cpu(), data=(batch, 1, 28, 28))
    values = {k: (rng.normal(size=s) * 0.1).astype(np.float32) for k, s in EXPECTED.items()}
    values["data"] = rng.random((batch, 1, 28, 28), dtype=np.float32)
    values["softmax_label"] = rng.integers(0, 10, batch).astype(np.float32)
    for k, v in values.items():
        exe.arg_dict[k][:] = v
    prob = exe.forward(is_train=True)[0].asnumpy()
    exe.backward()

    t = {k: torch.tensor(v, dtype=torch.float64, requires_grad=True) for k, v in values.items()
         if k.endswith(("weight", "bias"))}
    x = torch.tensor(values["data"], dtype=torch.float64, requires_grad=True)
    h = F.max_pool2d(F.relu(F.conv2d(x, t["conv1_weight"], t["conv1_bias"], padding=1)), 2)
    h = F.max_pool2d(F.relu(F.conv2d(h, t["conv2_weight"], t["conv2_bias"], padding=1)), 2)
    h = F.relu(F.linear(h.flatten(1), t["fc1_weight"], t["fc1_bias"]))
    logits = F.linear(h, t["fc2_weight"], t["fc2_bias"])
    label = torch.tensor(values["softmax_label"]).long()
    F.cross_entropy(logits, label, reduction="sum").backward()

    assert_almost_equal(prob, F.softmax(logits, 1).detach().numpy(), 1e-4, 1e-5)
    for k, v in t.items():
        assert_almost_equal(exe.grad_dict[k].asnumpy(), v.grad.numpy(), 1e-4, 1e-4,
                            (f"symgraph d{k}", "torch"))
    assert_almost_equal(exe.grad_dict["data"].asnumpy(), x.grad.numpy(), 1e-4, 1e-4)
