"""``sg.callback``: batch- and epoch-end callbacks for ``Module.fit`` (MXNet 1.x names)."""
from __future__ import annotations

import logging
import sys
import time
from collections import namedtuple
from typing import Any, Callable, Optional

BatchEndParam = namedtuple("BatchEndParam", ["epoch", "nbatch", "eval_metric", "locals"])


def do_checkpoint(prefix: str, period: int = 1) -> Callable:
    """Epoch-end callback saving ``prefix-symbol.json`` and ``prefix-%04d.params`` every
    ``period`` epochs (the file number is the count of finished epochs)."""
    from .model import save_checkpoint
    period = int(max(1, period))

    def _callback(iter_no: int, sym: Any, arg: dict, aux: dict) -> None:
        if (iter_no + 1) % period == 0:
            save_checkpoint(prefix, iter_no + 1, sym, arg, aux)
    return _callback


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
        msg = f"Epoch[{param.epoch}] Batch [{count - self.frequent}-{count}]\t" \
              f"Speed: {speed:.2f} samples/sec"
        if param.eval_metric is not None:
            pairs = param.eval_metric.get_name_value()
            if self.auto_reset:
                param.eval_metric.reset()
            msg += "".join(f"\t{n}={v:f}" for n, v in pairs)
        logging.info(msg)
        self.tic = time.time()


class ProgressBar:
    """A tqdm bar over the batches of an epoch, shown only when stdout is a terminal and tqdm is
    installed; otherwise it does nothing."""

    def __init__(self, total: Optional[int] = None, stream: Any = None) -> None:
        self.total = total
        self.stream = stream or sys.stdout
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

    def __call__(self, param: BatchEndParam) -> None:
        if not self.enabled():
            return
        from tqdm import tqdm
        if param.epoch != self._epoch or self._bar is None:
            self.close()
            self._epoch = param.epoch
            self._bar = tqdm(total=self.total, desc=f"epoch {param.epoch}", unit="batch",
                             file=self.stream, leave=False)
        self._bar.update(1)
        if param.eval_metric is not None:
            self._bar.set_postfix({n: f"{v:.4f}" for n, v in param.eval_metric.get_name_value()})

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
            logging.info("Epoch[%d] Validation-%s=%f", param.epoch, name, value)
