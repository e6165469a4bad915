"""``gluon.contrib.rnn`` (MXNet 1.9.1's names): the convolutional recurrent cells
(``Conv{1,2,3}D{RNN,LSTM,GRU}Cell``), ``LSTMPCell`` and ``VariationalDropoutCell`` (the cells
of ``gluon.rnn``, which MXNet 1.9.1 keeps here) and ``rnn_cell.dynamic_unroll``."""
from __future__ import annotations

from . import conv_rnn_cell, rnn_cell
from .conv_rnn_cell import (Conv1DGRUCell, Conv1DLSTMCell, Conv1DRNNCell, Conv2DGRUCell,
                            Conv2DLSTMCell, Conv2DRNNCell, Conv3DGRUCell, Conv3DLSTMCell,
                            Conv3DRNNCell)
from .rnn_cell import LSTMPCell, VariationalDropoutCell, dynamic_unroll

__all__ = ["Conv1DRNNCell", "Conv2DRNNCell", "Conv3DRNNCell", "Conv1DLSTMCell",
           "Conv2DLSTMCell", "Conv3DLSTMCell", "Conv1DGRUCell", "Conv2DGRUCell",
           "Conv3DGRUCell", "LSTMPCell", "VariationalDropoutCell", "dynamic_unroll",
           "conv_rnn_cell", "rnn_cell"]
