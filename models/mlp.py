"""MLP 784-128-64-10 with ReLU (MXNet's classic MNIST MLP)."""
from __future__ import annotations

import sys

import symgraph as sg

RECIPE = {"batch_size": 64, "optimizer": "sgd", "learning_rate": 0.05, "momentum": 0.9,
          "flat": True}


def build() -> sg.sym.Symbol:
    data = sg.sym.var("data")
    x = sg.sym.FullyConnected(data, num_hidden=128, name="fc1")
    x = sg.sym.Activation(x, act_type="relu", name="relu1")
    x = sg.sym.FullyConnected(x, num_hidden=64, name="fc2")
    x = sg.sym.Activation(x, act_type="relu", name="relu2")
    x = sg.sym.FullyConnected(x, num_hidden=10, name="fc3")
    return sg.sym.SoftmaxOutput(x, name="softmax")


if __name__ == "__main__":
    from models.runner import main
    sys.exit(main("mlp", sys.argv[1:]))
