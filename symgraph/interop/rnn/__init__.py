"""``sg.rnn``: MXNet's symbolic recurrent cells, bucketing sentence iterator and RNN
checkpoints (``mx.rnn``)."""
from __future__ import annotations

from . import io
from .conv_cells import BaseConvRNNCell, ConvGRUCell, ConvLSTMCell, ConvRNNCell
from .containers import (BidirectionalCell, DropoutCell, FusedRNNCell, ModifierCell,
                         ResidualCell, SequentialRNNCell, ZoneoutCell)
from .io import BucketSentenceIter, encode_sentences
from .rnn import do_rnn_checkpoint, load_rnn_checkpoint, save_rnn_checkpoint
from .rnn_cell import BaseRNNCell, GRUCell, LSTMCell, RNNCell, RNNParams

__all__ = ["RNNParams", "BaseRNNCell", "RNNCell", "LSTMCell", "GRUCell", "SequentialRNNCell",
           "BidirectionalCell", "ModifierCell", "DropoutCell", "ZoneoutCell", "ResidualCell",
           "FusedRNNCell", "BaseConvRNNCell", "ConvRNNCell", "ConvLSTMCell", "ConvGRUCell",
           "BucketSentenceIter", "encode_sentences", "save_rnn_checkpoint",
           "load_rnn_checkpoint", "do_rnn_checkpoint", "io"]
