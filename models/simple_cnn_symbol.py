"""The seed MNIST CNN: conv3x3x32 - relu - maxpool2 - conv3x3x64 - relu - maxpool2 - flatten -
fc128 - relu - fc10 - SoftmaxOutput, with MXNet's layer names (conv1, pool1, ..., softmax)."""
from __future__ import annotations

import symgraph as sg


def get_symbol(num_classes: int = 10) -> sg.sym.Symbol:
    """The seed CNN; arguments data, conv1_weight ... fc2_bias, softmax_label."""
    S = sg.sym
    net = S.var("data")
    for i, filters in ((1, 32), (2, 64)):
        net = S.Convolution(net, kernel=(3, 3), pad=(1, 1), num_filter=filters, name=f"conv{i}")
        net = S.Activation(net, act_type="relu", name=f"relu{i}")
        net = S.Pooling(net, pool_type="max", kernel=(2, 2), stride=(2, 2), name=f"pool{i}")
    net = S.flatten(net, name="flatten")
    net = S.FullyConnected(net, num_hidden=128, name="fc1")
    net = S.Activation(net, act_type="relu", name="relu3")
    net = S.FullyConnected(net, num_hidden=num_classes, name="fc2")
    return S.SoftmaxOutput(net, name="softmax")
