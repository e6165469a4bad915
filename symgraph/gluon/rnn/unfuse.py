"""A fused recurrent layer as a stack of cells (MXNet 1.9.1's ``_unfuse``): one cell per layer
(a :class:`BidirectionalCell` of two per layer when bidirectional), a :class:`DropoutCell`
between layers when the layer has dropout, all in a :class:`HybridSequentialRNNCell` that
shares the layer's :class:`ParameterDict` and prefix, so the cells read and train the very
parameters of the layer (``l0_i2h_weight``, ``r1_h2h_bias``...) and unroll to its outputs.

Example::

    layer = gluon.rnn.LSTM(8, num_layers=2, bidirectional=True)
    stack = layer._unfuse()
    layer.initialize()
    out, states = stack.unroll(5, x, layout="TNC", merge_outputs=True)   # == layer(x)
"""
from __future__ import annotations

from typing import Any, Callable

from ...core.base import AttrError
from .cell_containers import BidirectionalCell, DropoutCell, HybridSequentialRNNCell
from .rnn_cell import GRUCell, LSTMCell, RNNCell

# the layer's mode: the cell computing one of its layers, from the hidden size and cell kwargs
CELLS: dict[str, Callable[..., Any]] = {
    "rnn_relu": lambda h, **kw: RNNCell(h, activation="relu", **kw),
    "rnn_tanh": lambda h, **kw: RNNCell(h, activation="tanh", **kw),
    "lstm": lambda h, **kw: LSTMCell(h, **kw),
    "gru": lambda h, **kw: GRUCell(h, **kw),
}


def unfuse(layer: Any) -> HybridSequentialRNNCell:
    """The cells computing ``layer`` (an ``RNN``/``LSTM``/``GRU``) step by step, sharing its
    parameters; ``AttrError`` for a projection layer (LSTMP), as MXNet refuses it."""
    if layer._projection_size:
        raise AttrError(f"{layer.name}: _unfuse does not support projection_size "
                        f"({layer._projection_size}), as in MXNet 1.9.1")
    make, h = CELLS[layer._mode], layer._hidden_size
    inits = dict(zip(("i2h_weight_initializer", "h2h_weight_initializer",
                      "i2h_bias_initializer", "h2h_bias_initializer"), layer._inits))
    stack = HybridSequentialRNNCell(prefix=layer.prefix, params=layer.params)
    with stack.name_scope():
        width = layer._input_size
        for i in range(layer._num_layers):
            cells = [make(h, input_size=width, prefix=f"{d}{i}_", **inits)
                     for d in "lr"[:layer._dir]]
            stack.add(BidirectionalCell(*cells) if layer._dir == 2 else cells[0])
            if layer._dropout > 0 and i != layer._num_layers - 1:
                stack.add(DropoutCell(layer._dropout))
            width = h * layer._dir
    return stack
