"""Dynamic loss scaling for float16 (MXNet's ``amp.LossScaler`` semantics).

The loss is multiplied by ``loss_scale`` before backward, so small float16 gradients do not
flush to zero; the optimizer divides it out (``rescale_grad / loss_scale``). Each step
:meth:`LossScaler.has_overflow` looks at the gradients: an inf or NaN means the scale was too
large: that step is skipped and the scale halved. After ``scale_seq_len`` (2000) good steps in
a row it is doubled, up to ``2**24``. The scale starts at ``2**16``.

One departure: MXNet 1.9.1 applies a new scale one step late (``has_overflow`` first adopts the
scale decided at the previous step, so the step after an overflow still uses the old scale and
usually overflows again); here the scale decided at a step is the next step's.
"""
from __future__ import annotations

from typing import Any, Iterable

import numpy as np

from ...core.log import LOGGER


def _host_arrays(item: Any) -> list[np.ndarray]:
    """Gradients of a Gluon Parameter (every context), or an NDArray/numpy array itself."""
    if hasattr(item, "list_grad"):
        return [g.asnumpy() for g in item.list_grad()] if item.grad_req != "null" else []
    if item is None:
        return []
    return [item.asnumpy() if hasattr(item, "asnumpy") else np.asarray(item)]


class LossScaler:
    """Dynamic loss scaler: ``loss_scale``, ``has_overflow(grads)``."""

    def __init__(self, init_scale: float = 2.0 ** 16, scale_seq_len: int = 2000,
                 max_scale: float = 2.0 ** 24) -> None:
        self._loss_scale = float(init_scale)
        self._max_loss_scale = float(max_scale)
        self._scale_seq_len = int(scale_seq_len)
        self._unskipped = 0

    @property
    def loss_scale(self) -> float:
        """The scale the current step's loss is multiplied by."""
        return self._loss_scale

    def has_overflow(self, grads: Iterable[Any]) -> bool:
        """True if any gradient holds an inf or NaN (the step must be skipped); updates the
        scale for the next step. ``grads``: Gluon Parameters, NDArrays or numpy arrays."""
        overflow = not all(np.isfinite(a.astype(np.float32, copy=False)).all()
                           for item in grads for a in _host_arrays(item))
        if overflow:
            self._loss_scale /= 2.0
            self._unskipped = 0
            LOGGER.info("AMP: decreasing loss scale to %f", self._loss_scale)
            return True
        self._unskipped += 1
        if self._unskipped == self._scale_seq_len:
            self._unskipped = 0
            self._loss_scale = min(self._max_loss_scale, self._loss_scale * 2.0)
            LOGGER.info("AMP: increasing loss scale to %f", self._loss_scale)
        return False
