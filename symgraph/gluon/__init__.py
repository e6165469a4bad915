"""``sg.gluon``: MXNet 1.x's Gluon API (blocks, parameters, layers, losses, Trainer, data)
on top of symgraph's imperative ``sg.nd`` / ``sg.autograd`` and its compiler.

``from symgraph import gluon`` then ``gluon.nn.Conv2D``, ``gluon.loss``, ``gluon.Trainer``,
``gluon.data.DataLoader``, ``gluon.data.vision``, ``gluon.model_zoo.vision`` and
``gluon.utils`` as in MXNet; see docs/gluon.md for what is supported and where it departs.
"""
from __future__ import annotations

from ..frontend import autograd  # noqa: F401  (sg.autograd with sg.gluon, as in MXNet)
from .parameter import Constant, DeferredInitializationError, Parameter
from .parameter_dict import ParameterDict
from .block import Block, HybridBlock
from .symbol_block import SymbolBlock
from .trainer import Trainer
from . import data, loss, nn, rnn, utils
from . import contrib  # (after nn and data, which it builds on)
from . import model_zoo  # (after contrib, whose HybridConcurrent it uses)

__all__ = ["Block", "HybridBlock", "SymbolBlock", "Parameter", "ParameterDict", "Constant",
           "DeferredInitializationError", "Trainer", "contrib", "data", "loss", "model_zoo",
           "nn", "rnn", "utils"]
