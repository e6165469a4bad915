"""``gluon.loss``: per-sample losses as MXNet 1.x computes them (the mean over every axis but
``batch_axis``), each a HybridBlock composed of registered ops through ``F``."""
from __future__ import annotations

from .basic import (L1Loss, L2Loss, Loss, SigmoidBCELoss, SigmoidBinaryCrossEntropyLoss,
                    SoftmaxCELoss, SoftmaxCrossEntropyLoss)
from .margin import (CosineEmbeddingLoss, HingeLoss, HuberLoss, LogisticLoss,
                     SquaredHingeLoss, TripletLoss)
from .prob import CTCLoss, KLDivLoss, PoissonNLLLoss, SDMLLoss

__all__ = ["Loss", "SoftmaxCrossEntropyLoss", "SoftmaxCELoss", "L2Loss", "L1Loss",
           "SigmoidBinaryCrossEntropyLoss", "SigmoidBCELoss", "KLDivLoss", "HuberLoss",
           "HingeLoss", "SquaredHingeLoss", "LogisticLoss", "TripletLoss", "PoissonNLLLoss",
           "CosineEmbeddingLoss", "SDMLLoss", "CTCLoss"]
