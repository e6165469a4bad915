"""The seed documents' MNIST CNN: conv3x3x32 pad1 - relu - maxpool2 - conv3x3x64 pad1 - relu -
maxpool2 - flatten - fc128 - relu - fc10 - SoftmaxOutput; SGD lr 0.01, momentum 0.9, batch 64."""
from __future__ import annotations

import sys

import symgraph as sg

RECIPE = {"batch_size": 64, "optimizer": "sgd", "learning_rate": 0.01, "momentum": 0.9}


def build() -> sg.sym.Symbol:
    S = sg.sym
    x = S.var("data")
    x = S.Convolution(x, kernel=(3, 3), stride=(1, 1), pad=(1, 1), num_filter=32, name="conv1")
    x = S.Activation(x, act_type="relu", name="relu1")
    x = S.Pooling(x, pool_type="max", kernel=(2, 2), stride=(2, 2), name="pool1")
    x = S.Convolution(x, kernel=(3, 3), stride=(1, 1), pad=(1, 1), num_filter=64, name="conv2")
    x = S.Activation(x, act_type="relu", name="relu2")
    x = S.Pooling(x, pool_type="max", kernel=(2, 2), stride=(2, 2), name="pool2")
    x = S.Flatten(x, name="flatten")
    x = S.FullyConnected(x, num_hidden=128, name="fc1")
    x = S.Activation(x, act_type="relu", name="relu3")
    x = S.FullyConnected(x, num_hidden=10, name="fc2")
    return S.SoftmaxOutput(x, name="softmax")


if __name__ == "__main__":
    from models.runner import main
    sys.exit(main("simple_cnn", sys.argv[1:]))
