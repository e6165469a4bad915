"""Classic LeNet-5 with tanh and max pooling: conv5x5x20 - tanh - maxpool2 - conv5x5x50 - tanh -
maxpool2 - flatten - fc500 - tanh - fc10 - SoftmaxOutput (MXNet's MNIST tutorial)."""
from __future__ import annotations

import sys

import symgraph as sg

RECIPE = {"batch_size": 64, "optimizer": "sgd", "learning_rate": 0.05, "momentum": 0.9}


def build() -> sg.sym.Symbol:
    S = sg.sym
    x = S.var("data")
    x = S.Convolution(x, kernel=(5, 5), num_filter=20, name="conv1")
    x = S.Activation(x, act_type="tanh", name="tanh1")
    x = S.Pooling(x, pool_type="max", kernel=(2, 2), stride=(2, 2), name="pool1")
    x = S.Convolution(x, kernel=(5, 5), num_filter=50, name="conv2")
    x = S.Activation(x, act_type="tanh", name="tanh2")
    x = S.Pooling(x, pool_type="max", kernel=(2, 2), stride=(2, 2), name="pool2")
    x = S.Flatten(x, name="flatten")
    x = S.FullyConnected(x, num_hidden=500, name="fc1")
    x = S.Activation(x, act_type="tanh", name="tanh3")
    x = S.FullyConnected(x, num_hidden=10, name="fc2")
    return S.SoftmaxOutput(x, name="softmax")


if __name__ == "__main__":
    from models.runner import main
    sys.exit(main("lenet", sys.argv[1:]))
