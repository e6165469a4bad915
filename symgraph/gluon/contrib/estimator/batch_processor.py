"""``BatchProcessor``: how the Estimator trains and evaluates on one batch; subclass it and
override ``fit_batch``/``evaluate_batch`` for a custom step."""
from __future__ import annotations

from typing import Any

from ....frontend import autograd
from ...utils import split_and_load
from .utils import example_after_setup

__all__ = ["BatchProcessor"]


@example_after_setup
class BatchProcessor:
    """The default per-batch step: split data and label over the estimator's contexts, run
    the network and the loss (under ``autograd.record()`` when training), ``backward()``.

    Example::

        >>> class Twice(BatchProcessor):                    # doctest: +SKIP
        ...     def fit_batch(self, est, batch, batch_axis=0):
        ...         super().fit_batch(est, batch, batch_axis)
        ...         return super().fit_batch(est, batch, batch_axis)

    Examples
    --------
    >>> x, y = sg.nd.ones((2, 1)), sg.nd.ones((2, 1))
    >>> data_, label, pred, loss = E.BatchProcessor().evaluate_batch(est, (x, y))
    >>> pred[0].shape, loss[0].shape  # one entry per device
    ((2, 1), (2,))
    """

    def _get_data_and_label(self, batch: Any, ctx: list, batch_axis: int = 0) -> tuple:
        data = split_and_load(batch[0], ctx_list=ctx, batch_axis=batch_axis)
        label = split_and_load(batch[1], ctx_list=ctx, batch_axis=batch_axis)
        return data, label

    def evaluate_batch(self, estimator: Any, val_batch: Any, batch_axis: int = 0) -> tuple:
        """``(data, label, pred, loss)`` lists (one entry per context) of a validation
        batch, through ``estimator.val_net`` and ``estimator.val_loss``."""
        data, label = self._get_data_and_label(val_batch, estimator.context, batch_axis)
        pred = [estimator.val_net(x) for x in data]
        loss = [estimator.val_loss(y_hat, y) for y_hat, y in zip(pred, label)]
        return data, label, pred, loss

    def fit_batch(self, estimator: Any, train_batch: Any, batch_axis: int = 0) -> tuple:
        """``(data, label, pred, loss)`` of a training batch, gradients computed (the
        GradientUpdateHandler then steps the trainer)."""
        data, label = self._get_data_and_label(train_batch, estimator.context, batch_axis)
        with autograd.record():
            pred = [estimator.net(x) for x in data]
            loss = [estimator.loss(y_hat, y) for y_hat, y in zip(pred, label)]
        for lo in loss:
            lo.backward()
        return data, label, pred, loss
