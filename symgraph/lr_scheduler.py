"""``sg.lr_scheduler``: learning rate as a function of the update count (MXNet 1.x)."""
from __future__ import annotations

from typing import Sequence

from .base import AttrError
from .log import LOGGER

__all__ = ["LRScheduler", "FactorScheduler", "MultiFactorScheduler"]


class LRScheduler:
    """Base class; the optimizer sets ``base_lr`` to its ``learning_rate``."""

    def __init__(self, base_lr: float = 0.01) -> None:
        self.base_lr = base_lr

    def __call__(self, num_update: int) -> float:
        raise NotImplementedError


class FactorScheduler(LRScheduler):
    """Multiply the rate by ``factor`` every ``step`` updates, not going below
    ``stop_factor_lr``."""

    def __init__(self, step: int, factor: float = 1, stop_factor_lr: float = 1e-8,
                 base_lr: float = 0.01) -> None:
        super().__init__(base_lr)
        if step < 1:
            raise AttrError(f"FactorScheduler: step must be at least 1, got {step}")
        if factor > 1.0:
            raise AttrError(f"FactorScheduler: factor must be at most 1, got {factor}")
        self.step, self.factor, self.stop_factor_lr = step, factor, stop_factor_lr
        self.count = 0

    def __call__(self, num_update: int) -> float:
        while num_update > self.count + self.step:
            self.count += self.step
            self.base_lr *= self.factor
            if self.base_lr < self.stop_factor_lr:
                self.base_lr = self.stop_factor_lr
                LOGGER.info("Update[%d]: now learning rate arrived at %0.5e, will not "
                             "change in the future", num_update, self.base_lr)
        return self.base_lr


class MultiFactorScheduler(LRScheduler):
    """Multiply the rate by ``factor`` after each update count listed in ``step``."""

    def __init__(self, step: Sequence[int], factor: float = 1, base_lr: float = 0.01) -> None:
        super().__init__(base_lr)
        step = list(step)
        if not step or any(s < 1 for s in step) or any(b <= a for a, b in zip(step, step[1:])):
            raise AttrError(f"MultiFactorScheduler: step must be increasing positive integers, "
                            f"got {step}")
        if factor > 1.0:
            raise AttrError(f"MultiFactorScheduler: factor must be at most 1, got {factor}")
        self.step, self.factor = step, factor
        self.cur_step_ind, self.count = 0, 0

    def __call__(self, num_update: int) -> float:
        while self.cur_step_ind < len(self.step) and num_update > self.step[self.cur_step_ind]:
            self.count = self.step[self.cur_step_ind]
            self.cur_step_ind += 1
            self.base_lr *= self.factor
        return self.base_lr
