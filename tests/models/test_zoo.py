"""The example networks: argument shapes against hand-computed layer sizes, and the runner's
recipe flags."""
from __future__ import annotations

import importlib

import pytest

import symgraph as sg
from symgraph.core.registry import all_ops


def _shapes(model, data_shape):
    net = importlib.import_module(f"symgraph.interop.models.{model}").build()
    args, outs, _ = net.infer_shape(data=data_shape)
    return dict(zip(net.list_arguments(), args)), outs


def test_mlp_shapes():
    args, outs = _shapes("mlp", (5, 784))
    assert args["fc1_weight"] == (128, 784) and args["fc2_weight"] == (64, 128)
    assert args["fc3_weight"] == (10, 64) and outs == [(5, 10)]


@pytest.mark.skipif("Convolution" not in all_ops(), reason="needs the ops branch")
def test_cnn_shapes():
    args, outs = _shapes("simple_cnn", (2, 1, 28, 28))
    assert args["conv1_weight"] == (32, 1, 3, 3) and args["conv2_weight"] == (64, 32, 3, 3)
    assert args["fc1_weight"] == (128, 64 * 7 * 7) and outs == [(2, 10)]
    args, outs = _shapes("lenet", (2, 1, 28, 28))
    # 28 -5+1 = 24 -> pool 12 -> -5+1 = 8 -> pool 4: 50*4*4 features
    assert args["conv2_weight"] == (50, 20, 5, 5) and args["fc1_weight"] == (500, 800)


def test_runner_recipe_defaults():
    from symgraph.interop.models.runner import parser
    import symgraph.interop.models.simple_cnn as cnn
    a = parser("simple_cnn", cnn.RECIPE).parse_args([])
    assert (a.batch_size, a.lr, a.momentum, a.optimizer) == (64, 0.01, 0.9, "sgd")
    init = sg.init.create("xavier") if a.init != "pytorch" else None
    assert init is None  # PyTorch-like U(+-1/sqrt(fan_in)) by default
