"""``gluon.rnn``: recurrent layers over the fused ``RNN`` op (``RNN``, ``LSTM``, ``GRU``) and
recurrent cells with ``unroll`` (MXNet 1.9.1's names, arguments and parameter names, so
parameter files cross both ways). See docs/gluon.md."""
from __future__ import annotations

from .cell_containers import (BidirectionalCell, DropoutCell, HybridSequentialRNNCell,
                              ModifierCell, ResidualCell, SequentialRNNCell,
                              VariationalDropoutCell, ZoneoutCell)
from .rnn_cell import (GRUCell, HybridRecurrentCell, LSTMCell, LSTMPCell, RecurrentCell,
                       RNNCell)
from .rnn_layer import GRU, LSTM, RNN

__all__ = ["RNN", "LSTM", "GRU", "RecurrentCell", "HybridRecurrentCell", "RNNCell", "LSTMCell",
           "GRUCell", "LSTMPCell", "SequentialRNNCell", "HybridSequentialRNNCell",
           "BidirectionalCell", "ModifierCell", "DropoutCell", "ZoneoutCell", "ResidualCell",
           "VariationalDropoutCell"]
