"""The loops shared by modules: ``fit``, ``score``, ``predict`` (MXNet's ``BaseModule``).

A concrete module provides ``bind``, ``init_params``, ``init_optimizer``, ``forward``,
``backward``, ``update``, ``update_metric``, ``get_outputs`` and ``get_params``. Departure from
MXNet: the padded samples of a last batch (``DataBatch.pad``) are left out of metrics, so
``score`` is the exact accuracy over the data set.
"""
from __future__ import annotations

import contextlib
import time
from typing import Any, Callable, Optional, Sequence

import numpy as np

from . import metric as _metric
from ..core.base import AttrError
from .callback import BatchEndParam, ProgressBar
from ..core.log import LOGGER
from ..runtime.ndarray import NDArray, array

__all__ = ["BaseModule"]


def _num_batches(data: Any) -> Optional[int]:
    """Batches per pass of a data iterator, when it knows (for the progress bar's total)."""
    if data is None:
        return None
    num, size = getattr(data, "num_data", 0), max(1, getattr(data, "batch_size", 1))
    if getattr(data, "last_batch_handle", "pad") == "pad":
        return -(-num // size) or None  # the last, padded batch counts
    return num // size or None


def _close_bars(callbacks: Sequence[Any]) -> None:
    for cb in callbacks:
        if isinstance(cb, ProgressBar):
            cb.close()


def _as_list(obj: Any) -> list:
    if obj is None:
        return []
    return list(obj) if isinstance(obj, (list, tuple)) else [obj]


class BaseModule:
    """Training and evaluation loops over the primitive calls of a module."""

    def __init__(self, logger: Any = LOGGER) -> None:
        self.logger = logger
        self.binded = False
        self.for_training = False
        self.inputs_need_grad = False
        self.params_initialized = False
        self.optimizer_initialized = False
        self.history: list[dict] = []

    def save_params(self, fname: str) -> None:
        """Write ``get_params()`` as an MXNet ``.params`` file (``arg:``/``aux:`` names)."""
        from .checkpoint import save_params
        save_params(fname, *self.get_params())

    def load_params(self, fname: str) -> None:
        """Read a ``.params`` file (symgraph's, MXNet's or an older ``.npz``) into
        ``set_params``; a damaged file raises DataError naming it."""
        from .checkpoint import load_params
        self.set_params(*load_params(fname))

    def forward_backward(self, data_batch: Any) -> None:
        self.forward(data_batch, is_train=True)
        self.backward()

    def forward_backward_update(self, data_batch: Any) -> None:
        """One training step (``fit``'s): forward, backward, update. A module may run them
        as one piece of device work (Module on the GPU: the update inside the backward graph)."""
        self.forward_backward(data_batch)
        self.update()

    def score(self, eval_data: Any, eval_metric: Any, num_batch: Optional[int] = None,
              batch_end_callback: Any = None, score_end_callback: Any = None,
              reset: bool = True, epoch: int = 0) -> list[tuple[str, float]]:
        """Evaluate ``eval_metric`` over ``eval_data``; returns ``[(name, value)]``."""
        eval_metric = _metric.create(eval_metric)
        if reset:
            eval_data.reset()
        eval_metric.reset()
        for nbatch, batch in enumerate(eval_data):
            if num_batch is not None and nbatch == num_batch:
                break
            self.forward(batch, is_train=False)
            self.update_metric(eval_metric, batch.label, pad=batch.pad)
            for cb in _as_list(batch_end_callback):
                cb(BatchEndParam(epoch, nbatch, eval_metric, locals()))
        for cb in _as_list(score_end_callback):
            cb(BatchEndParam(epoch, nbatch if num_batch is None else num_batch, eval_metric,
                             locals()))
        return eval_metric.get_name_value()

    def iter_predict(self, eval_data: Any, num_batch: Optional[int] = None, reset: bool = True):
        """Yield ``(outputs without padding, batch index, batch)``."""
        if reset:
            eval_data.reset()
        for nbatch, batch in enumerate(eval_data):
            if num_batch is not None and nbatch == num_batch:
                break
            self.forward(batch, is_train=False)
            keep = slice(None, -batch.pad if batch.pad else None)
            yield [array(o.asnumpy()[keep]) for o in self.get_outputs()], nbatch, batch

    def predict(self, eval_data: Any, num_batch: Optional[int] = None,
                merge_batches: bool = True, reset: bool = True,
                always_output_list: bool = False) -> Any:
        """Outputs over ``eval_data`` (a data iterator or an array), padding removed."""
        if isinstance(eval_data, (np.ndarray, NDArray)):
            from .io import NDArrayIter
            eval_data = NDArrayIter(eval_data, batch_size=self.data_shapes[0].shape[0])
        outs = [o for o, _, _ in self.iter_predict(eval_data, num_batch, reset)]
        if not outs or not merge_batches:
            return outs
        merged = [array(np.concatenate([o[i].asnumpy() for o in outs])) for i in
                  range(len(outs[0]))]
        return merged if always_output_list or len(merged) > 1 else merged[0]

    def fit(self, train_data: Any, eval_data: Any = None, eval_metric: Any = "acc",
            epoch_end_callback: Any = None, batch_end_callback: Any = None,
            kvstore: Any = "local", optimizer: Any = "sgd",
            optimizer_params: Any = (("learning_rate", 0.01),),
            eval_end_callback: Any = None, eval_batch_end_callback: Any = None,
            initializer: Any = None, arg_params: Any = None, aux_params: Any = None,
            allow_missing: bool = False, force_rebind: bool = False, force_init: bool = False,
            begin_epoch: int = 0, num_epoch: Optional[int] = None, validation_metric: Any = None,
            monitor: Any = None, progress_bar: bool = True,
            curve_file: Optional[str] = None, amp: Optional[str] = None) -> None:
        """Train for ``num_epoch`` epochs (MXNet's arguments). A tqdm bar shows progress when
        stdout is a terminal; ``curve_file`` writes a training-curve PNG (needs matplotlib);
        ``amp``: 'float16' or 'bfloat16' trains in mixed precision (docs/amp.md)."""
        from . import initializer as _init, optimizer as _opt
        if num_epoch is None:
            raise AttrError("fit: please specify num_epoch")
        eval_metric = _metric.create(eval_metric)  # bad names fail before anything is bound
        validation_metric = _metric.create(validation_metric or eval_metric)
        if isinstance(optimizer, str):
            _opt.check_name(optimizer)
        if amp is not None:
            self.use_amp(amp)
        self.bind(train_data.provide_data, train_data.provide_label, for_training=True,
                  force_rebind=force_rebind)
        self.init_params(initializer or _init.Uniform(0.01), arg_params, aux_params,
                         allow_missing, force_init)
        self.init_optimizer(kvstore, optimizer, optimizer_params)
        if monitor is not None:
            self.install_monitor(monitor)
        batch_cbs = _as_list(batch_end_callback)
        eval_cbs = _as_list(eval_batch_end_callback)
        bar = ProgressBar(_num_batches(train_data))
        if progress_bar:  # one bar for training, one for validation; logs print above them
            batch_cbs.append(bar)
            eval_cbs.append(ProgressBar(_num_batches(eval_data), desc="validate"))
        with bar.redirect() if progress_bar else contextlib.nullcontext():
            for epoch in range(begin_epoch, num_epoch):
                self._fit_one(train_data, eval_data, eval_metric, validation_metric, epoch,
                              batch_cbs, eval_cbs, epoch_end_callback, eval_end_callback,
                              monitor)
        if curve_file:
            from .plot import plot_history
            plot_history(self.history, curve_file, self.logger)

    def use_amp(self, target_dtype: Any) -> None:
        """Mixed-precision training (``fit(amp=...)``); Module implements it."""
        raise AttrError(f"{type(self).__name__}: amp={target_dtype!r} is not supported "
                        f"(Module supports it)")

    def install_monitor(self, mon: Any) -> None:
        """Report node outputs to ``mon`` (an ``sg.monitor.Monitor``) on every forward."""
        raise NotImplementedError(f"{type(self).__name__} has no executor to monitor")

    def _fit_one(self, train_data: Any, eval_data: Any, eval_metric: Any,
                 validation_metric: Any, epoch: int, batch_cbs: list, eval_cbs: list,
                 epoch_end_callback: Any, eval_end_callback: Any, monitor: Any = None) -> None:
        """One epoch of ``fit``: train, log, epoch-end callbacks, validate once."""
        tic = time.time()
        self._fit_epoch(train_data, eval_metric, epoch, batch_cbs, monitor)
        _close_bars(batch_cbs)
        record = {"epoch": epoch, "time": time.time() - tic}
        self._log_metric(epoch, "Train", eval_metric.get_name_value(), record)
        self.logger.info("Epoch[%d] Time cost=%.3f", epoch, record["time"])
        arg, aux = self.get_params()
        for cb in _as_list(epoch_end_callback):
            cb(epoch, self.symbol, arg, aux)
        if eval_data is not None:
            res = self.score(eval_data, validation_metric, epoch=epoch,
                             score_end_callback=eval_end_callback, batch_end_callback=eval_cbs)
            _close_bars(eval_cbs)
            self._log_metric(epoch, "Validation", res, record)
        self.history.append(record)
        train_data.reset()

    def _log_metric(self, epoch: int, kind: str, pairs: Sequence, record: dict) -> None:
        """Log ``Epoch[e] Train-accuracy=...`` lines and keep the values for the curve."""
        for name, val in pairs:
            self.logger.info("Epoch[%d] %s-%s=%f", epoch, kind, name, val)
            record[f"{'train' if kind == 'Train' else 'val'}-{name}"] = val

    def _fit_epoch(self, train_data: Any, eval_metric: Any, epoch: int,
                   callbacks: Sequence[Callable], monitor: Any = None) -> None:
        eval_metric.reset()
        pending = None  # (finish, nbatch): a batch whose metric update is still in flight
        for nbatch, batch in enumerate(train_data):
            if monitor is not None:
                monitor.tic()
            self.forward_backward_update(batch)
            if monitor is not None:
                monitor.toc_print()
            finish = self._queue_metric(eval_metric, batch.label, getattr(batch, "pad", 0))
            if pending is not None:  # the previous batch ends while this step runs
                self._end_batch(epoch, *pending, eval_metric, callbacks)
            pending = (finish, nbatch)
            if finish is None:
                self._end_batch(epoch, None, nbatch, eval_metric, callbacks)
                pending = None
        if pending is not None:
            self._end_batch(epoch, *pending, eval_metric, callbacks)

    def _queue_metric(self, eval_metric: Any, labels: Sequence, pad: int) -> Any:
        """Start feeding this batch's outputs to ``eval_metric``. Returns ``None`` when done, or
        a function that finishes it: a module whose outputs live on a device then overlaps the
        copy with the next step. Callbacks of a batch always see its metric update."""
        self.update_metric(eval_metric, labels, pad=pad)
        return None

    @staticmethod
    def _end_batch(epoch: int, finish: Any, nbatch: int, eval_metric: Any,
                   callbacks: Sequence[Callable]) -> None:
        if finish is not None:
            finish()
        param = BatchEndParam(epoch, nbatch, eval_metric, None)
        for cb in callbacks:
            cb(param)
