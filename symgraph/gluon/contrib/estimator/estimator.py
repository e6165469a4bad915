"""``Estimator``: MXNet 1.x's training loop over a Gluon DataLoader, driven by event
handlers (see ``event_handler``) and a ``BatchProcessor``."""
from __future__ import annotations

import copy
import logging
import sys
import warnings
from typing import Any, Optional

from ....core.base import DataError, GraphError, MissingParamError
from ....core.context import Context, cpu, gpu, num_gpus
from ....training.metric import Loss as LossMetric
from ...data import DataLoader
from ...loss import Loss
from ...trainer import Trainer
from .batch_processor import BatchProcessor
from .event_handler import (BatchBegin, BatchEnd, EpochBegin, EpochEnd, GradientUpdateHandler,
                            LoggingHandler, MetricHandler, StoppingHandler, TrainBegin,
                            TrainEnd, ValidationHandler)
from .event_handler.basic import check_event_handlers
from .utils import (check_handler_metric_ref, check_metrics, example_after_setup,
                    suggest_metric_for_loss)

__all__ = ["Estimator"]

_EVENTS = (TrainBegin, EpochBegin, BatchBegin, BatchEnd, EpochEnd, TrainEnd)


class ContextError(GraphError, AssertionError):
    """A context that is not on this machine (an AssertionError too, as MXNet asserts)."""


def _check_loss(loss: Any) -> Loss:
    if not isinstance(loss, Loss):
        raise DataError(f"Estimator: loss must be a gluon.loss.Loss, got {loss!r}")
    return loss


def _check_context(context: Any) -> list:
    """``context`` as a list of usable contexts (default: gpu(0) when there is one)."""
    gpus = [gpu(i) for i in range(num_gpus())]
    if not context:
        if len(gpus) > 1:
            warnings.warn("You have multiple GPUs, gpu(0) will be used by default; pass "
                          "context=[sg.gpu(0), sg.gpu(1), ...] to use them all")
        return [gpus[0]] if gpus else [cpu()]
    if isinstance(context, Context):
        context = [context]
    if not isinstance(context, list) or not all(isinstance(c, Context) for c in context):
        raise DataError(f"Estimator: context must be a Context or a list of them, for "
                        f"example sg.cpu() or [sg.gpu(0), sg.gpu(1)], got {context!r}")
    for ctx in context:
        if ctx.device_type != "cpu" and ctx not in gpus:
            raise ContextError(f"Estimator: {ctx} is not available; use sg.cpu() or one of "
                               f"{gpus}")
    return context


def _check_data(data: Any, what: str) -> None:
    if not isinstance(data, DataLoader):
        raise DataError(f"Estimator: {what} must be a gluon.data.DataLoader, got "
                        f"{type(data).__name__}; wrap a DataIter or arrays in an "
                        f"ArrayDataset and a DataLoader")


@example_after_setup
class Estimator:
    """Trains ``net`` with ``loss`` and ``trainer`` (default: SGD, learning rate 0.001) on
    ``context``, tracking ``train_metrics``/``val_metrics``; ``val_net``/``val_loss``
    default to ``net``/``loss``.

    Examples
    --------
    >>> est.fit(data, epochs=2)
    >>> name, loss = est.train_metrics[0].get()
    >>> name, loss < 1
    ('training l2loss', True)
    """

    logger: Optional[logging.Logger] = None

    def __init__(self, net: Any, loss: Any, train_metrics: Any = None,
                 val_metrics: Any = None, initializer: Any = None, trainer: Any = None,
                 context: Any = None, val_net: Any = None, val_loss: Any = None,
                 batch_processor: Any = None) -> None:
        self.net = net
        self.loss = _check_loss(loss)
        self._train_metrics = check_metrics(train_metrics)
        self._val_metrics = check_metrics(val_metrics)
        self._add_default_training_metrics()
        self._add_validation_metrics()
        self.val_loss = _check_loss(val_loss) if val_loss is not None else self.loss
        self.val_net = val_net if val_net is not None else net
        self.logger = logging.Logger(name="Estimator", level=logging.INFO)
        self.logger.addHandler(logging.StreamHandler(sys.stdout))
        self.context = _check_context(context)
        self._initialize(initializer)
        self.trainer = self._check_trainer(trainer)
        self.batch_processor = self._check_batch_processor(batch_processor)
        self.max_epoch: Optional[int] = None
        self.max_batch: Optional[int] = None
        self.batch_axis = 0

    @staticmethod
    def _check_batch_processor(processor: Any) -> Any:
        if processor is None:
            return BatchProcessor()
        if not callable(getattr(processor, "fit_batch", None)) or \
                not callable(getattr(processor, "evaluate_batch", None)):
            raise DataError("Estimator: a batch_processor must have fit_batch() and "
                            "evaluate_batch() methods")
        return processor

    def _is_initialized(self) -> bool:
        try:
            for p in self.net.collect_params().values():
                p.list_ctx()
        except MissingParamError:
            return False
        return True

    def _initialize(self, initializer: Any) -> None:
        if not self._is_initialized():
            self.net.initialize(init=initializer, ctx=self.context)
        elif initializer:
            warnings.warn("Network already fully initialized, skipping initialization. You "
                          "don't need to pass initializer if you already initialized your "
                          "net; use net.initialize(init=..., force_reinit=True) to "
                          "re-initialize.")

    def _check_trainer(self, trainer: Any) -> Trainer:
        if not trainer:
            warnings.warn("No trainer specified, default SGD optimizer with learning rate "
                          "0.001 is used.")
            return Trainer(self.net.collect_params(), "sgd", {"learning_rate": 0.001})
        if not isinstance(trainer, Trainer):
            raise DataError(f"Estimator: trainer must be a gluon.Trainer, got {trainer!r}")
        return trainer

    def _add_default_training_metrics(self) -> None:
        if not self._train_metrics:
            suggested = suggest_metric_for_loss(self.loss)
            self._train_metrics = [suggested] if suggested else []
            self._train_metrics.append(LossMetric(self.loss.name.rstrip("1234567890")))
        for metric in self._train_metrics:
            metric.name = "training " + metric.name

    def _add_validation_metrics(self) -> None:
        if not self._val_metrics:
            self._val_metrics = [copy.deepcopy(m) for m in self._train_metrics]
        for metric in self._val_metrics:
            metric.name = metric.name.replace("training", "validation") \
                if "training" in metric.name else "validation " + metric.name

    @property
    def train_metrics(self) -> list:
        return self._train_metrics

    @property
    def val_metrics(self) -> list:
        return self._val_metrics

    def evaluate(self, val_data: Any, batch_axis: int = 0, event_handlers: Any = None) -> None:
        """One pass of ``val_net`` over ``val_data``, updating ``val_metrics`` (a
        MetricHandler and a LoggingHandler are added unless given)."""
        _check_data(val_data, "val_data")
        for metric in self.val_metrics:
            metric.reset()
        handlers = self._prepare_default_validation_handlers(event_handlers)
        _, epoch_begin, batch_begin, batch_end, epoch_end, _ = \
            self._categorize_handlers(handlers)
        for h in epoch_begin:
            h.epoch_begin(self)
        for batch in val_data:
            for h in batch_begin:
                h.batch_begin(self, batch=batch)
            _, label, pred, loss = self.batch_processor.evaluate_batch(self, batch,
                                                                       batch_axis)
            for h in batch_end:
                h.batch_end(self, batch=batch, pred=pred, label=label, loss=loss)
        for h in epoch_end:
            h.epoch_end(self)

    def fit(self, train_data: Any, val_data: Any = None, epochs: Optional[int] = None,
            event_handlers: Any = None, batches: Optional[int] = None,
            batch_axis: int = 0) -> None:
        """Train for exactly one of ``epochs`` or ``batches``; with ``val_data``, evaluate
        after each epoch (unless a ValidationHandler is given)."""
        _check_data(train_data, "train_data")
        if (not epochs) == (not batches):
            raise DataError(f"Estimator.fit: give exactly one of epochs and batches, got "
                            f"epochs={epochs!r}, batches={batches!r}")
        self.max_epoch, self.max_batch, self.batch_axis = epochs, batches, batch_axis
        handlers = self._prepare_default_handlers(val_data, event_handlers)
        train_begin, epoch_begin, batch_begin, batch_end, epoch_end, train_end = \
            self._categorize_handlers(handlers)
        for h in train_begin:
            h.train_begin(self)
        while True:
            for h in epoch_begin:
                h.epoch_begin(self)
            for batch in train_data:
                for h in batch_begin:
                    h.batch_begin(self, batch=batch)
                _, label, pred, loss = self.batch_processor.fit_batch(self, batch, batch_axis)
                # (every handler sees the batch, then any may stop the epoch)
                if any([h.batch_end(self, batch=batch, pred=pred, label=label, loss=loss)
                        for h in batch_end]):
                    break
            if any([h.epoch_end(self) for h in epoch_end]):
                break
        for h in train_end:
            h.train_end(self)

    def _with_defaults(self, given: Any, defaults: list, known: list) -> list:
        """``given`` handlers plus the ``defaults`` of kinds not given, by priority."""
        handlers = check_event_handlers(given)
        added = [d for d in defaults if d is not None and
                 (isinstance(d, StoppingHandler) or
                  not any(isinstance(h, type(d)) for h in handlers))]
        mixing = bool(handlers) and bool(added)
        handlers.extend(added)
        if mixing:
            for h in handlers:
                check_handler_metric_ref(h, known)
        handlers.sort(key=lambda h: getattr(h, "priority", 0))
        return handlers

    def _prepare_default_handlers(self, val_data: Any, event_handlers: Any) -> list:
        validation = ValidationHandler(val_data=val_data, eval_fn=self.evaluate) \
            if val_data else None
        defaults = [StoppingHandler(self.max_epoch, self.max_batch), GradientUpdateHandler(),
                    MetricHandler(metrics=self.train_metrics), validation,
                    LoggingHandler(metrics=self.train_metrics)]
        return self._with_defaults(event_handlers, defaults,
                                   self.train_metrics + self.val_metrics)

    def _prepare_default_validation_handlers(self, event_handlers: Any) -> list:
        defaults = [MetricHandler(metrics=self.val_metrics),
                    LoggingHandler(metrics=self.val_metrics)]
        return self._with_defaults(event_handlers, defaults, self.val_metrics)

    @staticmethod
    def _categorize_handlers(event_handlers: list) -> tuple:
        """The handlers of each event: (train_begin, epoch_begin, batch_begin, batch_end,
        epoch_end, train_end)."""
        return tuple([h for h in event_handlers if isinstance(h, kind)] for kind in _EVENTS)
