"""MLP 784-128-64-10 with ReLU (MXNet's classic MNIST MLP)."""
from __future__ import annotations

import sys

import symgraph as sg
from symgraph.interop.models.blocks import dense_head

RECIPE = {"batch_size": 64, "optimizer": "sgd", "learning_rate": 0.05, "momentum": 0.9,
          "flat": True}


def build() -> sg.sym.Symbol:
    return dense_head(sg.sym.var("data"), [128, 64], "relu")


if __name__ == "__main__":
    from symgraph.interop.models.runner import main
    sys.exit(main("mlp", sys.argv[1:]))
