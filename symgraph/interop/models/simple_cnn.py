"""The seed documents' MNIST CNN: conv3x3x32 pad1 - relu - maxpool2 - conv3x3x64 pad1 - relu -
maxpool2 - flatten - fc128 - relu - fc10 - SoftmaxOutput; SGD lr 0.01, momentum 0.9, batch 64."""
from __future__ import annotations

import sys

import symgraph as sg
from symgraph.interop.models.blocks import conv_act_pool, dense_head

RECIPE = {"batch_size": 64, "optimizer": "sgd", "learning_rate": 0.01, "momentum": 0.9}


def build() -> sg.sym.Symbol:
    x = sg.sym.var("data")
    x = conv_act_pool(x, 1, 32, (3, 3), "relu", pad=(1, 1))
    x = conv_act_pool(x, 2, 64, (3, 3), "relu", pad=(1, 1))
    return dense_head(sg.sym.Flatten(x, name="flatten"), [128], "relu", act_first=3)


if __name__ == "__main__":
    from symgraph.interop.models.runner import main
    sys.exit(main("simple_cnn", sys.argv[1:]))
