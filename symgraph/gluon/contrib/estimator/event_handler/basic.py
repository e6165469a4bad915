"""Event handlers of the Estimator: a handler subclasses the events it reacts to
(``TrainBegin``, ``EpochBegin``, ``BatchBegin``, ``BatchEnd``, ``EpochEnd``, ``TrainEnd``); a
``batch_end``/``epoch_end`` returning True stops the loop. Handlers run in order of their
``priority`` (lower first; gradient update -2000, metrics and validation -1000, logging last).
"""
from __future__ import annotations

import time
from typing import Any, Callable, Optional, Union

from .....core.base import DataError
from .....training.metric import Loss as LossMetric
from ..utils import as_list_of, check_metrics, example_after_setup

__all__ = ["EventHandler", "TrainBegin", "TrainEnd", "EpochBegin", "EpochEnd", "BatchBegin",
           "BatchEnd", "StoppingHandler", "MetricHandler", "ValidationHandler",
           "LoggingHandler", "CheckpointHandler", "EarlyStoppingHandler",
           "GradientUpdateHandler"]


class EventHandler:
    """Base of every event handler."""


def check_event_handlers(handlers: Any) -> list:
    """``handlers`` as a list of EventHandlers (one alone is wrapped)."""
    return as_list_of(handlers, EventHandler, "event_handlers")


class TrainBegin(EventHandler):
    """Handler of the event before training: override ``train_begin``.
    """

    def train_begin(self, estimator: Any, *args: Any, **kwargs: Any) -> None:
        """Called once before training."""


class TrainEnd(EventHandler):
    """Handler of the event after training: override ``train_end``.
    """

    def train_end(self, estimator: Any, *args: Any, **kwargs: Any) -> None:
        """Called once after training."""


class EpochBegin(EventHandler):
    """Handler of the event before each epoch: override ``epoch_begin``.
    """

    def epoch_begin(self, estimator: Any, *args: Any, **kwargs: Any) -> None:
        """Called before each epoch (and before a validation pass)."""


class EpochEnd(EventHandler):
    """Handler of the event after each epoch: override ``epoch_end``.
    """

    def epoch_end(self, estimator: Any, *args: Any, **kwargs: Any) -> bool:
        """Called after each epoch; True stops training."""
        return False


class BatchBegin(EventHandler):
    """Handler of the event before each batch: override ``batch_begin``.
    """

    def batch_begin(self, estimator: Any, *args: Any, **kwargs: Any) -> None:
        """Called before each batch (``batch=``)."""


class BatchEnd(EventHandler):
    """Handler of the event after each batch: override ``batch_end``.
    """

    def batch_end(self, estimator: Any, *args: Any, **kwargs: Any) -> bool:
        """Called after each batch (``batch``, ``pred``, ``label``, ``loss``); True stops
        the epoch."""
        return False


EVENTS_EXAMPLE = """

    Examples
    --------
    >>> class Count(E.TrainBegin, E.TrainEnd, E.EpochBegin, E.EpochEnd, E.BatchBegin,
    ...             E.BatchEnd):  # a handler of each event it subclasses
    ...     def __init__(self):
    ...         self.seen = {}
    ...     def _saw(self, event):
    ...         self.seen[event] = self.seen.get(event, 0) + 1
    ...     def train_begin(self, estimator, *args, **kwargs):
    ...         self._saw('train_begin')
    ...     def train_end(self, estimator, *args, **kwargs):
    ...         self._saw('train_end')
    ...     def epoch_begin(self, estimator, *args, **kwargs):
    ...         self._saw('epoch_begin')
    ...     def epoch_end(self, estimator, *args, **kwargs):
    ...         self._saw('epoch_end')
    ...     def batch_begin(self, estimator, *args, **kwargs):
    ...         self._saw('batch_begin')
    ...     def batch_end(self, estimator, *args, **kwargs):
    ...         self._saw('batch_end')
    >>> count = Count()
    >>> est.fit(data, epochs=2, event_handlers=[count])
    >>> count.seen  # once per fit, once per epoch, once per batch of each epoch
    {'train_begin': 1, 'epoch_begin': 2, 'batch_begin': 4, 'batch_end': 4, 'epoch_end': 2, \
'train_end': 1}
    """
for _event in (TrainBegin, TrainEnd, EpochBegin, EpochEnd, BatchBegin, BatchEnd):
    _event.__doc__ += EVENTS_EXAMPLE  # one example shows the six event classes together
    example_after_setup(_event)


@example_after_setup
class StoppingHandler(TrainBegin, BatchEnd, EpochEnd):
    """Stops after ``max_epoch`` epochs or ``max_batch`` batches (the estimator's).

    Examples
    --------
    >>> class Count(E.BatchEnd):
    ...     calls = 0
    ...     def batch_end(self, estimator, *args, **kwargs):
    ...         self.calls += 1
    >>> c = Count()
    >>> # fit's epochs/batches set the limits of the StoppingHandler it adds (as MXNet)
    >>> est.fit(data, batches=3, event_handlers=[c])
    >>> c.calls  # stopped after 3 batches
    3
    """

    def __init__(self, max_epoch: Optional[int] = None,
                 max_batch: Optional[int] = None) -> None:
        self.max_epoch, self.max_batch = max_epoch, max_batch
        self.current_batch = self.current_epoch = 0
        self.stop_training = False

    def train_begin(self, estimator: Any, *args: Any, **kwargs: Any) -> None:
        self.max_epoch, self.max_batch = estimator.max_epoch, estimator.max_batch
        self.current_batch = self.current_epoch = 0

    def batch_end(self, estimator: Any, *args: Any, **kwargs: Any) -> bool:
        self.current_batch += 1
        if self.current_batch == self.max_batch:
            self.stop_training = True
        return self.stop_training

    def epoch_end(self, estimator: Any, *args: Any, **kwargs: Any) -> bool:
        self.current_epoch += 1
        if self.current_epoch == self.max_epoch:
            self.stop_training = True
        return self.stop_training


@example_after_setup
class MetricHandler(EpochBegin, BatchEnd):
    """Resets ``metrics`` each epoch and updates them each batch (a loss metric with the
    batch's loss, the others with label and prediction).

    Examples
    --------
    >>> est.fit(data, epochs=1, event_handlers=[E.MetricHandler(est.train_metrics)])
    >>> est.train_metrics[0].get()[0]
    'training l2loss'
    """

    def __init__(self, metrics: Any, priority: float = -1000) -> None:
        self.metrics = check_metrics(metrics)
        self.priority = priority

    def epoch_begin(self, estimator: Any, *args: Any, **kwargs: Any) -> None:
        for metric in self.metrics:
            metric.reset()

    def batch_end(self, estimator: Any, *args: Any, **kwargs: Any) -> bool:
        for metric in self.metrics:
            if isinstance(metric, LossMetric):
                metric.update(0, kwargs["loss"])
            else:
                metric.update(kwargs["label"], kwargs["pred"])
        return False


@example_after_setup
class ValidationHandler(TrainBegin, BatchEnd, EpochEnd):
    """Runs ``eval_fn(val_data=..., batch_axis=..., event_handlers=...)`` every
    ``epoch_period`` epochs and/or every ``batch_period`` batches.

    Examples
    --------
    >>> check = E.ValidationHandler(val_data=data, eval_fn=est.evaluate)
    >>> est.fit(data, epochs=1, event_handlers=[check])
    >>> est.val_metrics[0].get()[0]
    'validation l2loss'
    """

    def __init__(self, val_data: Any, eval_fn: Callable, epoch_period: Optional[int] = 1,
                 batch_period: Optional[int] = None, priority: float = -1000,
                 event_handlers: Any = None) -> None:
        self.val_data, self.eval_fn = val_data, eval_fn
        self.epoch_period, self.batch_period = epoch_period, batch_period
        self.current_batch = self.current_epoch = 0
        self.priority = priority
        self.event_handlers = event_handlers

    def _run(self, estimator: Any) -> None:
        self.eval_fn(val_data=self.val_data, batch_axis=estimator.batch_axis,
                     event_handlers=self.event_handlers)

    def train_begin(self, estimator: Any, *args: Any, **kwargs: Any) -> None:
        self.current_batch = self.current_epoch = 0

    def batch_end(self, estimator: Any, *args: Any, **kwargs: Any) -> bool:
        self.current_batch += 1
        if self.batch_period and self.current_batch % self.batch_period == 0:
            self._run(estimator)
        return False

    def epoch_end(self, estimator: Any, *args: Any, **kwargs: Any) -> bool:
        self.current_epoch += 1
        if self.epoch_period and self.current_epoch % self.epoch_period == 0:
            self._run(estimator)
        return False


def _metric_text(metrics: list) -> str:
    return ", ".join("%s: %.4f" % metric.get() for metric in metrics)


@example_after_setup
class LoggingHandler(TrainBegin, TrainEnd, EpochBegin, EpochEnd, BatchBegin, BatchEnd):
    """Logs to ``estimator.logger``: training start and end, each epoch, and every
    ``log_interval`` batches when it is an int (``'epoch'``: per epoch only).

    Examples
    --------
    >>> est.logger.setLevel('INFO')
    >>> log = E.LoggingHandler(log_interval='epoch', metrics=est.train_metrics)
    >>> est.fit(data, epochs=1, event_handlers=[log])
    Training begin: using optimizer SGD with current learning rate 0.1000
    Train for 1 epochs.
    ...
    Train finished using total ...s with 1 epochs. training l2loss: ...
    """

    def __init__(self, log_interval: Union[int, str] = "epoch", metrics: Any = None,
                 priority: float = float("inf")) -> None:
        if not isinstance(log_interval, int) and log_interval != "epoch":
            raise DataError(f"LoggingHandler: log_interval must be an int or 'epoch', got "
                            f"{log_interval!r}")
        self.metrics = check_metrics(metrics)
        self.log_interval, self.priority = log_interval, priority
        self.batch_index = self.current_epoch = self.processed_samples = 0
        self.log_interval_time = 0.0
        self.train_start = self.epoch_start = self.batch_start = 0.0

    def train_begin(self, estimator: Any, *args: Any, **kwargs: Any) -> None:
        self.train_start = time.time()
        trainer = estimator.trainer
        estimator.logger.info("Training begin: using optimizer %s with current learning "
                              "rate %.4f ", type(trainer.optimizer).__name__,
                              trainer.learning_rate)
        if estimator.max_epoch:
            estimator.logger.info("Train for %d epochs.", estimator.max_epoch)
        else:
            estimator.logger.info("Train for %d batches.", estimator.max_batch)
        self.current_epoch = self.batch_index = self.processed_samples = 0
        self.log_interval_time = 0.0

    def train_end(self, estimator: Any, *args: Any, **kwargs: Any) -> None:
        msg = "Train finished using total %ds with %d epochs. " % (
            time.time() - self.train_start, self.current_epoch)
        estimator.logger.info((msg + _metric_text(self.metrics)).rstrip(", "))

    def batch_begin(self, estimator: Any, *args: Any, **kwargs: Any) -> None:
        if isinstance(self.log_interval, int):
            self.batch_start = time.time()

    def batch_end(self, estimator: Any, *args: Any, **kwargs: Any) -> bool:
        if isinstance(self.log_interval, int):
            self.processed_samples += kwargs["batch"][0].shape[0]
            self.log_interval_time += time.time() - self.batch_start
            if self.batch_index % self.log_interval == 0:
                msg = "[Epoch %d][Batch %d][Samples %s] time/interval: %.3fs " % (
                    self.current_epoch, self.batch_index, self.processed_samples,
                    self.log_interval_time)
                self.log_interval_time = 0.0
                estimator.logger.info((msg + _metric_text(self.metrics)).rstrip(", "))
        self.batch_index += 1
        return False

    def epoch_begin(self, estimator: Any, *args: Any, **kwargs: Any) -> None:
        self.epoch_start = time.time()
        if any("training" in m.name for m in self.metrics):
            estimator.logger.info("[Epoch %d] Begin, current learning rate: %.4f",
                                  self.current_epoch, estimator.trainer.learning_rate)
        else:
            estimator.logger.info("Validation Begin")

    def epoch_end(self, estimator: Any, *args: Any, **kwargs: Any) -> bool:
        msg = "[Epoch %d] Finished in %.3fs, " % (self.current_epoch,
                                                  time.time() - self.epoch_start)
        estimator.logger.info((msg + _metric_text(self.metrics)).rstrip(", "))
        self.current_epoch += 1
        self.batch_index = 0
        return False


@example_after_setup
class GradientUpdateHandler(BatchEnd):
    """Steps the estimator's trainer after each batch, with the batch size summed over the
    per-context losses.

    Examples
    --------
    >>> before = net.weight.data().asnumpy()
    >>> est.fit(data, epochs=1, event_handlers=[E.GradientUpdateHandler()])
    >>> bool((net.weight.data().asnumpy() != before).all())  # the trainer stepped
    True
    """

    def __init__(self, priority: float = -2000) -> None:
        self.priority = priority

    def batch_end(self, estimator: Any, *args: Any, **kwargs: Any) -> bool:
        loss = kwargs["loss"]
        losses = loss if isinstance(loss, list) else [loss]
        estimator.trainer.step(sum(lo.shape[0] for lo in losses))
        return False
