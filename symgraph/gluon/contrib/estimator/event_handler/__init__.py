"""``gluon.contrib.estimator.event_handler``: the events an Estimator raises and MXNet's
handlers of them (``basic.py``), checkpointing and early stopping (``checkpoint.py``)."""
from __future__ import annotations

from .basic import (BatchBegin, BatchEnd, EpochBegin, EpochEnd, EventHandler,  # noqa: F401
                    GradientUpdateHandler, LoggingHandler, MetricHandler, StoppingHandler,
                    TrainBegin, TrainEnd, ValidationHandler)
from .checkpoint import CheckpointHandler, EarlyStoppingHandler

__all__ = ["EventHandler", "TrainBegin", "TrainEnd", "EpochBegin", "EpochEnd", "BatchBegin",
           "BatchEnd", "StoppingHandler", "MetricHandler", "ValidationHandler",
           "LoggingHandler", "CheckpointHandler", "EarlyStoppingHandler",
           "GradientUpdateHandler"]
