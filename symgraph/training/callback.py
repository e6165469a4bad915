"""``sg.callback``: batch- and epoch-end callbacks for ``Module.fit`` (MXNet 1.x names)."""
from __future__ import annotations

import contextlib
import logging
import math
import sys
import time
from collections import namedtuple
from typing import Any, Callable, ContextManager, Optional, Sequence

from ..core.log import LOGGER

__all__ = ["BatchEndParam", "do_checkpoint", "Speedometer", "ProgressBar",
           "LogValidationMetricsCallback", "LogMetricsCallback"]

BatchEndParam = namedtuple("BatchEndParam", ["epoch", "nbatch", "eval_metric", "locals"])


def do_checkpoint(prefix: str, period: int = 1) -> Callable:
    """Epoch-end callback saving ``prefix-symbol.json`` and ``prefix-%04d.params`` every
    ``period`` epochs (the file number is the count of finished epochs)."""
    from .checkpoint import save_checkpoint
    period = int(max(1, period))

    def _callback(iter_no: int, sym: Any, arg: dict, aux: dict) -> None:
        if (iter_no + 1) % period == 0:
            save_checkpoint(prefix, iter_no + 1, sym, arg, aux)
    return _callback


def speed_line(epoch: int, first: int, last: int, speed: float,
               pairs: Sequence[tuple[str, float]]) -> str:
    """One Speedometer line, MXNet's words in columns that line up from one line to the next
    (MXNet separates them by tabs, which wander as the batch numbers grow):

    >>> speed_line(0, 100, 200, 5012.5, [("accuracy", 0.5)])
    'Epoch[0] Batch [100-200]          Speed: 5012.50 samples/sec     accuracy=0.500000'
    """
    head = f"Epoch[{epoch}] Batch [{first}-{last}]"
    rate = f"Speed: {speed:.2f} samples/sec"
    # widths of epoch 99, batch 999999 and 999999.99 samples/sec; wider values still get a gap
    return "  ".join([f"{head:<32}", f"{rate:<29}"] + [f"{n}={v:f}" for n, v in pairs])


class Speedometer:
    """Log samples/second and the training metric every ``frequent`` batches."""

    def __init__(self, batch_size: int, frequent: int = 50, auto_reset: bool = True) -> None:
        self.batch_size, self.frequent, self.auto_reset = batch_size, frequent, auto_reset
        self.init = False
        self.tic = 0.0
        self.last_count = 0

    def __call__(self, param: BatchEndParam) -> None:
        count = param.nbatch
        if self.last_count > count:
            self.init = False
        self.last_count = count
        if not self.init:
            self.init, self.tic = True, time.time()
            return
        if count % self.frequent != 0:
            return
        speed = self.frequent * self.batch_size / max(time.time() - self.tic, 1e-9)
        pairs = []
        if param.eval_metric is not None:
            pairs = param.eval_metric.get_name_value()
            if self.auto_reset:
                param.eval_metric.reset()
        LOGGER.info(speed_line(param.epoch, count - self.frequent, count, speed, pairs))
        self.tic = time.time()


def _prints_to_terminal(logger: logging.Logger) -> bool:
    """A handler of ``logger`` writes to stdout or stderr (what tqdm's redirect replaces)."""
    return any(isinstance(h, logging.StreamHandler) and h.stream in (sys.stdout, sys.stderr)
               for h in logger.handlers)


class ProgressBar:
    """A tqdm bar over the batches of an epoch (or of a validation pass), shown only when the
    stream is a terminal and tqdm is installed; otherwise it does nothing.

    Metric values that are NaN (right after another callback, e.g. ``Speedometer``, reset the
    metric) leave the bar's last values in place instead of showing ``accuracy=nan``.
    """

    def __init__(self, total: Optional[int] = None, stream: Any = None,
                 desc: str = "epoch") -> None:
        self.total = total
        self.stream = stream or sys.stdout
        self.desc = desc
        self._bar: Any = None
        self._epoch = -1

    def enabled(self) -> bool:
        isatty = getattr(self.stream, "isatty", None)
        if not (isatty and isatty()):
            return False
        try:
            import tqdm  # noqa: F401
        except ImportError:
            return False
        return True

    def redirect(self) -> ContextManager:
        """While active, log records of the root and ``symgraph`` loggers are written above the
        bar (``tqdm.contrib.logging.logging_redirect_tqdm``) instead of through it.

        Only loggers that print to the terminal themselves are redirected: tqdm gives every
        logger it is handed a handler, so handing it the ``symgraph`` logger while that only
        propagates to a configured root (``logging.basicConfig``) printed each line twice."""
        if not self.enabled():
            return contextlib.nullcontext()
        from tqdm.contrib.logging import logging_redirect_tqdm
        loggers = [lg for lg in (logging.root, LOGGER) if _prints_to_terminal(lg)]
        return logging_redirect_tqdm(loggers=loggers) if loggers else contextlib.nullcontext()

    def __call__(self, param: BatchEndParam) -> None:
        if not self.enabled():
            return
        from tqdm import tqdm
        if param.epoch != self._epoch or self._bar is None:
            self.close()
            self._epoch = param.epoch
            self._bar = tqdm(total=self.total, desc=f"{self.desc} {param.epoch}", unit="batch",
                             file=self.stream, leave=False)
        self._bar.update(1)
        if param.eval_metric is not None:
            pairs = [(n, v) for n, v in param.eval_metric.get_name_value()
                     if not (isinstance(v, float) and math.isnan(v))]
            if pairs:
                self._bar.set_postfix({n: f"{v:.4f}" for n, v in pairs})

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None


class LogValidationMetricsCallback:
    """Epoch-end eval callback logging each validation metric."""

    def __call__(self, param: BatchEndParam) -> None:
        if param.eval_metric is None:
            return
        for name, value in param.eval_metric.get_name_value():
            LOGGER.info("Epoch[%d] Validation-%s=%f", param.epoch, name, value)


class LogMetricsCallback:
    """Write each metric of ``param.eval_metric`` to TensorBoard event files in ``logging_dir``
    (MXNet contrib's ``LogMetricsCallback``; written with ``tensorboardX``, the
    ``tensorboard`` extra). Use it as a batch-end or eval-end callback of ``fit``;
    ``prefix`` names the curves ``PREFIX-accuracy`` so train and validation can share a plot.

    Departure: the step of each point is the number of calls so far (MXNet uses the epoch, which
    stacks all the batch-end points of an epoch on one x value); as an eval-end callback from
    epoch 0 that is the epoch.
    """

    def __init__(self, logging_dir: str, prefix: Optional[str] = None) -> None:
        try:
            from tensorboardX import SummaryWriter
        except ImportError as exc:
            raise ImportError(f"LogMetricsCallback({logging_dir!r}) needs tensorboardX: "
                              f"pip install 'symgraph[tensorboard]'") from exc
        self.prefix = prefix
        self.summary_writer = SummaryWriter(logging_dir)
        self.step = 0

    def __call__(self, param: BatchEndParam) -> None:
        if param.eval_metric is None:
            return
        for name, value in param.eval_metric.get_name_value():
            tag = f"{self.prefix}-{name}" if self.prefix is not None else name
            self.summary_writer.add_scalar(tag, value, global_step=self.step)
        self.summary_writer.flush()
        self.step += 1

    def close(self) -> None:
        """Flush and close the event file."""
        self.summary_writer.close()

    def __repr__(self) -> str:
        return f"LogMetricsCallback({self.summary_writer.logdir!r}, prefix={self.prefix!r})"
