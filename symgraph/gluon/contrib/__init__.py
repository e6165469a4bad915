"""``gluon.contrib``: MXNet 1.x's contributed Gluon layers (``contrib.nn``) and samplers
(``contrib.data``), recurrent cells (``contrib.rnn``) and the Estimator training loop (``contrib.estimator``)."""
from __future__ import annotations

from . import data, estimator, nn, rnn

__all__ = ["data", "estimator", "nn", "rnn"]
