"""``gluon.nn``: layers built on the registered ops (MXNet 1.x names)."""
from __future__ import annotations

from .activations import ELU, GELU, SELU, Activation, LeakyReLU, PReLU, Swish
from .basic_layers import (BatchNorm, BatchNormReLU, Dense, Dropout, Embedding, Flatten,
                           HybridLambda, HybridSequential, Lambda, Sequential)
from .conv_layers import (Conv1D, Conv1DTranspose, Conv2D, Conv2DTranspose, Conv3D,
                          Conv3DTranspose, ReflectionPad2D)
from .pool_layers import (AvgPool1D, AvgPool2D, AvgPool3D, GlobalAvgPool1D, GlobalAvgPool2D,
                          GlobalAvgPool3D, GlobalMaxPool1D, GlobalMaxPool2D, GlobalMaxPool3D,
                          MaxPool1D, MaxPool2D, MaxPool3D)
from .norm_layers import GroupNorm, InstanceNorm, LayerNorm
from .sync_batch_norm import SyncBatchNorm
from ..block import Block, HybridBlock
from ..symbol_block import SymbolBlock  # MXNet's gluon.nn re-exports its gluon.block names

__all__ = ["Activation", "LeakyReLU", "PReLU", "ELU", "SELU", "GELU", "Swish", "LayerNorm",
           "GroupNorm", "InstanceNorm", "SyncBatchNorm", "BatchNorm", "BatchNormReLU", "Dense", "Dropout",
           "Embedding", "Flatten", "HybridLambda", "HybridSequential", "Lambda", "Sequential",
           "AvgPool1D",
           "AvgPool2D", "AvgPool3D", "Conv1D", "Conv2D", "Conv3D", "Conv1DTranspose",
           "Conv2DTranspose", "Conv3DTranspose", "ReflectionPad2D", "GlobalAvgPool1D",
           "GlobalAvgPool2D", "GlobalAvgPool3D", "GlobalMaxPool1D", "GlobalMaxPool2D",
           "GlobalMaxPool3D", "MaxPool1D", "MaxPool2D", "MaxPool3D", "Block", "HybridBlock",
           "SymbolBlock"]
