"""``gluon.contrib``: MXNet 1.x's contributed Gluon layers (``contrib.nn``, ``contrib.cnn``)
and samplers (``contrib.data``), recurrent cells (``contrib.rnn``) and the Estimator training loop (``contrib.estimator``)."""
from __future__ import annotations

from . import cnn, data, estimator, nn, rnn

__all__ = ["cnn", "data", "estimator", "nn", "rnn"]
