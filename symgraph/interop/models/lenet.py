"""Classic LeNet-5 with tanh and max pooling: conv5x5x20 - tanh - maxpool2 - conv5x5x50 - tanh -
maxpool2 - flatten - fc500 - tanh - fc10 - SoftmaxOutput (MXNet's MNIST tutorial)."""
from __future__ import annotations

import sys

import symgraph as sg
from symgraph.interop.models.blocks import conv_act_pool, dense_head

RECIPE = {"batch_size": 64, "optimizer": "sgd", "learning_rate": 0.05, "momentum": 0.9}


def build() -> sg.sym.Symbol:
    x = sg.sym.var("data")
    x = conv_act_pool(x, 1, 20, (5, 5), "tanh")
    x = conv_act_pool(x, 2, 50, (5, 5), "tanh")
    return dense_head(sg.sym.Flatten(x, name="flatten"), [500], "tanh", act_first=3)


if __name__ == "__main__":
    from symgraph.interop.models.runner import main
    sys.exit(main("lenet", sys.argv[1:]))
