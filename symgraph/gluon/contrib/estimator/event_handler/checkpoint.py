"""``CheckpointHandler`` (periodic and best-model checkpoints, resuming from the newest) and
``EarlyStoppingHandler`` (stop when a monitored metric stops improving)."""
from __future__ import annotations

import math
import operator
import os
import warnings
from typing import Any, Callable, Optional

from .....core.base import DataError
from .....training.metric import CompositeEvalMetric, EvalMetric
from ..utils import example_after_setup
from .basic import BatchEnd, EpochEnd, TrainBegin, TrainEnd


def _comparison(mode: str, monitor: EvalMetric, who: str) -> Callable[[float, float], bool]:
    """``greater`` for mode 'max', ``less`` for 'min'; 'auto' picks greater for accuracy and
    F1 (the metrics where more is better) and less for everything else."""
    if mode not in ("auto", "min", "max"):
        warnings.warn(f"{who}: mode {mode!r} is unknown, falling back to 'auto'",
                      RuntimeWarning, stacklevel=3)
        mode = "auto"
    if mode == "auto":
        name = monitor.get()[0].lower()
        mode = "max" if ("acc" in name or "f1" in name) else "min"
        warnings.warn(f"{who}: {'greater' if mode == 'max' else 'less'} is better for "
                      f"{monitor.get()[0]!r}; pass mode='min' or mode='max' to choose",
                      stacklevel=3)
    return operator.gt if mode == "max" else operator.lt


@example_after_setup
class CheckpointHandler(TrainBegin, BatchEnd, EpochEnd):
    """Saves ``<model_prefix>-epoch<E>batch<B>.params``/``.states`` (network parameters and
    trainer states) into ``model_dir`` every ``epoch_period`` epochs or ``batch_period``
    batches, keeping the newest ``max_checkpoints``; with ``save_best``, also
    ``<model_prefix>-best.*`` whenever ``monitor`` improves; a hybridized network's symbol as
    ``<model_prefix>-symbol.json``. ``resume_from_checkpoint`` loads the newest checkpoint and
    trains only for the epochs or batches that remain.

    Examples
    --------
    >>> import os, tempfile
    >>> folder = tempfile.mkdtemp()
    >>> est.fit(data, epochs=1, event_handlers=[E.CheckpointHandler(folder, epoch_period=1)])
    >>> any(name.endswith('.params') for name in os.listdir(folder))
    True
    """

    def __init__(self, model_dir: str, model_prefix: str = "model",
                 monitor: Optional[EvalMetric] = None, verbose: int = 0,
                 save_best: bool = False, mode: str = "auto",
                 epoch_period: Optional[int] = 1, batch_period: Optional[int] = None,
                 max_checkpoints: int = 5, resume_from_checkpoint: bool = False) -> None:
        os.makedirs(model_dir, exist_ok=True)
        self.model_dir, self.model_prefix = model_dir, model_prefix
        self.monitor, self.verbose, self.save_best = monitor, verbose, save_best
        if save_best and not isinstance(monitor, EvalMetric):
            raise DataError("CheckpointHandler: save_best needs monitor= one of the metric "
                            "objects of estimator.train_metrics or estimator.val_metrics")
        self.epoch_period, self.batch_period = epoch_period, batch_period
        self.current_batch = self.current_epoch = 0
        self.max_checkpoints = max_checkpoints
        self.resume_from_checkpoint = resume_from_checkpoint
        self.saved_checkpoints: list[str] = []
        self.trained_epoch = self.trained_batch = -1
        self.monitor_op = _comparison(mode, monitor, "CheckpointHandler") if save_best \
            else operator.gt
        self.best = math.nan

    def train_begin(self, estimator: Any, *args: Any, **kwargs: Any) -> None:
        self.current_epoch = self.current_batch = 0
        self.best = math.inf if self.monitor_op is operator.lt else -math.inf
        if self.resume_from_checkpoint:
            by_batch = bool(estimator.max_batch)
            if by_batch != bool(self.batch_period) or by_batch == bool(self.epoch_period):
                raise DataError("CheckpointHandler: to resume, save by the same kind of period "
                                "the training counts (epochs: epoch_period and no "
                                "batch_period; batches: the other way round)")
            self._resume(estimator)

    def batch_end(self, estimator: Any, *args: Any, **kwargs: Any) -> bool:
        if self.current_batch == 0:
            self._save_symbol(estimator)
        if self.batch_period and (self.current_batch + 1) % self.batch_period == 0:
            self._save_checkpoint(estimator)
        self.current_batch += 1
        return False

    def epoch_end(self, estimator: Any, *args: Any, **kwargs: Any) -> bool:
        if self.epoch_period and (self.current_epoch + 1) % self.epoch_period == 0:
            self._save_checkpoint(estimator)
        self.current_epoch += 1
        return False

    def _save_checkpoint(self, estimator: Any) -> None:
        epoch, batch = self.current_epoch, self.current_batch
        if self.resume_from_checkpoint:
            epoch += self.trained_epoch + 1
            batch += self.trained_batch + (0 if estimator.max_epoch else 1)
        prefix = "%s-epoch%dbatch%d" % (self.model_prefix, epoch, batch)
        self._save(estimator, prefix)
        if self.verbose > 0:
            estimator.logger.info("[Epoch %d] CheckpointHandler: trained total %d batches, "
                                  "saving model at %s with prefix: %s", self.current_epoch,
                                  self.current_batch + 1, self.model_dir, prefix)
        if not self.save_best:
            return
        name, value = self.monitor.get()
        if math.isnan(value):
            warnings.warn(f"CheckpointHandler: skipping the best model: {name} has no value "
                          f"(monitor one of the estimator's metrics)", RuntimeWarning)
        elif self.monitor_op(value, self.best):
            self._save(estimator, self.model_prefix + "-best")
            if self.verbose > 0:
                estimator.logger.info("[Epoch %d] CheckpointHandler: %s improved from %0.5f "
                                      "to %0.5f", self.current_epoch, name, self.best, value)
            self.best = value

    def _save_symbol(self, estimator: Any) -> None:
        symbol_file = os.path.join(self.model_dir, self.model_prefix + "-symbol.json")
        graph = getattr(estimator.net, "_cached_graph", None)
        if graph and getattr(estimator.net, "_active", False):
            graph[1].save(symbol_file)
        else:
            estimator.logger.info("Model architecture (symbol file) is not saved: hybridize "
                                  "a HybridBlock network to have it saved as %s", symbol_file)

    def _save(self, estimator: Any, prefix: str) -> None:
        base = os.path.join(self.model_dir, prefix)
        estimator.net.save_parameters(base + ".params")
        estimator.trainer.save_states(base + ".states")
        if prefix.endswith("-best"):
            return
        self.saved_checkpoints.append(prefix)
        while len(self.saved_checkpoints) > self.max_checkpoints:
            old = self.saved_checkpoints.pop(0)
            for ext in (".params", ".states"):
                if os.path.exists(os.path.join(self.model_dir, old + ext)):
                    os.remove(os.path.join(self.model_dir, old + ext))

    def _newest(self, prefix: str, start: str, end: str) -> int:
        """The largest number between ``start`` and ``end`` in checkpoint names."""
        newest = -1
        for fname in os.listdir(self.model_dir):
            if fname.startswith(prefix) and fname.endswith(".params"):
                digits = fname[fname.find(start) + len(start):fname.find(end)]
                if not digits.isdigit():
                    raise DataError(f"CheckpointHandler: cannot parse checkpoint {fname!r} in "
                                    f"{self.model_dir}; expected "
                                    f"<prefix>-epoch<N>batch<M>.params")
                newest = max(newest, int(digits))
        return newest

    def _resume(self, estimator: Any) -> None:
        self.trained_epoch = self._newest(self.model_prefix + "-epoch", "epoch", "batch")
        if self.trained_epoch < 0:
            estimator.logger.info("CheckpointHandler: no checkpoint found, training from "
                                  "scratch")
            return
        prefix = "%s-epoch%d" % (self.model_prefix, self.trained_epoch)
        self.trained_batch = self._newest(prefix + "batch", "batch", ".params")
        self.saved_checkpoints += [f[:-len(".params")] for f in sorted(os.listdir(
            self.model_dir)) if f.startswith(self.model_prefix + "-epoch") and
            f.endswith(".params")]
        if estimator.max_epoch:
            if self.trained_epoch >= estimator.max_epoch - 1:
                raise DataError(f"CheckpointHandler: the checkpoint of epoch "
                                f"{self.trained_epoch} already reaches max_epoch "
                                f"{estimator.max_epoch}; pass resume_from_checkpoint=False to "
                                f"train from scratch")
            estimator.max_epoch -= self.trained_epoch + 1
        if estimator.max_batch:
            if self.trained_batch >= estimator.max_batch - 1:
                raise DataError(f"CheckpointHandler: the checkpoint of batch "
                                f"{self.trained_batch} already reaches max_batch "
                                f"{estimator.max_batch}")
            estimator.max_batch -= self.trained_batch + 1
        base = os.path.join(self.model_dir, "%sbatch%d" % (prefix, self.trained_batch))
        for ext in (".params", ".states"):
            if not os.path.exists(base + ext):
                raise DataError(f"CheckpointHandler: cannot resume: {base + ext} is missing")
        estimator.net.load_parameters(base + ".params", ctx=estimator.context)
        estimator.trainer.load_states(base + ".states")
        estimator.logger.warning("CheckpointHandler: resumed from epoch %d batch %d",
                                 self.trained_epoch, self.trained_batch)


@example_after_setup
class EarlyStoppingHandler(TrainBegin, EpochEnd, TrainEnd):
    """Stops training when ``monitor`` has not improved by ``min_delta`` for ``patience``
    epochs (or never beat ``baseline``).

    Examples
    --------
    >>> class Count(E.EpochEnd):
    ...     calls = 0
    ...     def epoch_end(self, estimator, *args, **kwargs):
    ...         self.calls += 1
    >>> c = Count()
    >>> est.fit(data, epochs=10, event_handlers=[c, E.EarlyStoppingHandler(
    ...     est.train_metrics[0], min_delta=10.0, mode='min')])
    >>> c.calls  # no epoch improves the loss by min_delta: stopped after 2 of 10
    2
    """

    def __init__(self, monitor: EvalMetric, min_delta: float = 0, patience: int = 0,
                 mode: str = "auto", baseline: Optional[float] = None) -> None:
        if not isinstance(monitor, EvalMetric) or isinstance(monitor, CompositeEvalMetric):
            raise DataError("EarlyStoppingHandler: monitor must be one simple metric of "
                            "estimator.train_metrics or estimator.val_metrics, got "
                            f"{monitor!r}")
        self.monitor, self.baseline, self.patience = monitor, baseline, patience
        self.monitor_op = _comparison(mode, monitor, "EarlyStoppingHandler")
        self.min_delta = min_delta if self.monitor_op is operator.gt else -min_delta
        self.wait = self.stopped_epoch = self.current_epoch = 0
        self.stop_training = False
        self.best = math.nan

    def train_begin(self, estimator: Any, *args: Any, **kwargs: Any) -> None:
        self.wait = self.stopped_epoch = self.current_epoch = 0
        self.stop_training = False
        if self.baseline is not None:
            self.best = self.baseline
        else:
            self.best = math.inf if self.monitor_op is operator.lt else -math.inf

    def epoch_end(self, estimator: Any, *args: Any, **kwargs: Any) -> bool:
        name, value = self.monitor.get()
        if math.isnan(value):
            warnings.warn(f"EarlyStoppingHandler: {name} has no value (monitor one of the "
                          f"estimator's metrics)", RuntimeWarning)
        elif self.monitor_op(value - self.min_delta, self.best):
            self.best, self.wait = value, 0
        else:
            self.wait += 1
            if self.wait >= self.patience:
                self.stopped_epoch, self.stop_training = self.current_epoch, True
        self.current_epoch += 1
        return self.stop_training

    def train_end(self, estimator: Any, *args: Any, **kwargs: Any) -> None:
        if self.stopped_epoch > 0:
            estimator.logger.info("[Epoch %d] EarlyStoppingHandler: early stopping due to %s "
                                  "not improving", self.stopped_epoch, self.monitor.get()[0])
