"""Layer blocks the example networks share (MXNet layer names: conv1, relu1, pool1...)."""
from __future__ import annotations

from typing import Sequence

import symgraph as sg


def conv_act_pool(x: sg.sym.Symbol, i: int, num_filter: int, kernel: tuple, act: str,
                  pad: tuple = (0, 0)) -> sg.sym.Symbol:
    """Convolution ``conv{i}`` - Activation ``{act}{i}`` - 2x2/2 max Pooling ``pool{i}``."""
    S = sg.sym
    x = S.Convolution(x, kernel=kernel, pad=pad, num_filter=num_filter, name=f"conv{i}")
    x = S.Activation(x, act_type=act, name=f"{act}{i}")
    return S.Pooling(x, pool_type="max", kernel=(2, 2), stride=(2, 2), name=f"pool{i}")


def dense_head(x: sg.sym.Symbol, hidden: Sequence[int], act: str, num_classes: int = 10,
               first: int = 1, act_first: int = 1) -> sg.sym.Symbol:
    """FullyConnected ``fc{k}`` + Activation per hidden width, a last ``fc``, SoftmaxOutput."""
    S = sg.sym
    for k, width in enumerate(hidden):
        x = S.FullyConnected(x, num_hidden=width, name=f"fc{first + k}")
        x = S.Activation(x, act_type=act, name=f"{act}{act_first + k}")
    x = S.FullyConnected(x, num_hidden=num_classes, name=f"fc{first + len(hidden)}")
    return S.SoftmaxOutput(x, name="softmax")
