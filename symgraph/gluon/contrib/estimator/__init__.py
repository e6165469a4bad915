"""``gluon.contrib.estimator``: MXNet 1.x's Estimator (a ``fit``/``evaluate`` loop over a
DataLoader) with its event handlers and batch processor."""
from __future__ import annotations

from . import batch_processor, estimator, event_handler
from .batch_processor import BatchProcessor
from .estimator import Estimator
from .event_handler import (BatchBegin, BatchEnd, CheckpointHandler, EarlyStoppingHandler,
                            EpochBegin, EpochEnd, GradientUpdateHandler, LoggingHandler,
                            MetricHandler, StoppingHandler, TrainBegin, TrainEnd,
                            ValidationHandler)

__all__ = ["Estimator", "BatchProcessor", "TrainBegin", "TrainEnd", "EpochBegin", "EpochEnd",
           "BatchBegin", "BatchEnd", "StoppingHandler", "MetricHandler", "ValidationHandler",
           "LoggingHandler", "CheckpointHandler", "EarlyStoppingHandler",
           "GradientUpdateHandler", "batch_processor", "estimator", "event_handler"]
