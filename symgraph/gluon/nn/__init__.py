"""``gluon.nn``: layers built on the registered ops (MXNet 1.x names)."""
from __future__ import annotations

from .activations import ELU, GELU, SELU, Activation, LeakyReLU, PReLU, Swish
from .basic_layers import (BatchNorm, Dense, Dropout, Embedding, Flatten, HybridLambda,
                           HybridSequential, Lambda, Sequential)
from .conv_layers import (AvgPool1D, AvgPool2D, Conv1D, Conv2D, Conv2DTranspose, Conv3D,
                          GlobalAvgPool2D, GlobalMaxPool2D, MaxPool1D, MaxPool2D)
from .norm_layers import GroupNorm, InstanceNorm, LayerNorm
from ..block import Block, HybridBlock
from ..symbol_block import SymbolBlock  # MXNet's gluon.nn re-exports its gluon.block names

__all__ = ["Activation", "LeakyReLU", "PReLU", "ELU", "SELU", "GELU", "Swish", "LayerNorm",
           "GroupNorm", "InstanceNorm", "BatchNorm", "Dense", "Dropout", "Embedding", "Flatten",
           "HybridLambda", "HybridSequential", "Lambda", "Sequential", "AvgPool1D",
           "AvgPool2D", "Conv1D", "Conv2D", "Conv2DTranspose", "Conv3D", "GlobalAvgPool2D",
           "GlobalMaxPool2D", "MaxPool1D", "MaxPool2D", "Block", "HybridBlock", "SymbolBlock"]
