"""``sg.lr_scheduler``: learning rate as a function of the update count (MXNet 1.x).

Every scheduler takes MXNet's warm-up arguments: for ``num_update < warmup_steps`` the rate
rises linearly from ``warmup_begin_lr`` to the ``base_lr`` given at construction
(``warmup_mode='linear'``) or stays at ``warmup_begin_lr`` (``'constant'``).

Example::

    sched = sg.lr_scheduler.CosineScheduler(max_update=1000, base_lr=0.1, warmup_steps=100)
    opt = sg.optimizer.create("sgd", lr_scheduler=sched)
"""
from __future__ import annotations

from math import cos, pi
from typing import Sequence

from ..core.base import AttrError
from ..core.log import LOGGER

__all__ = ["LRScheduler", "FactorScheduler", "MultiFactorScheduler", "PolyScheduler",
           "CosineScheduler"]


class LRScheduler:
    """Base class; the optimizer sets ``base_lr`` to its ``learning_rate``."""

    def __init__(self, base_lr: float = 0.01, warmup_steps: int = 0,
                 warmup_begin_lr: float = 0, warmup_mode: str = "linear") -> None:
        name = type(self).__name__
        if not isinstance(warmup_steps, int) or warmup_steps < 0:
            raise AttrError(f"{name}: warmup_steps must be an int >= 0, got {warmup_steps!r}")
        if warmup_begin_lr > base_lr:
            raise AttrError(f"{name}: warmup_begin_lr={warmup_begin_lr} is above "
                            f"base_lr={base_lr}")
        if warmup_mode not in ("linear", "constant"):
            raise AttrError(f"{name}: warmup_mode must be 'linear' or 'constant', got "
                            f"{warmup_mode!r}")
        self.base_lr = base_lr
        self.warmup_steps, self.warmup_mode = warmup_steps, warmup_mode
        # as MXNet: warm-up ends at the construction's base_lr, even if an optimizer resets it
        self.warmup_final_lr, self.warmup_begin_lr = base_lr, warmup_begin_lr

    def get_warmup_lr(self, num_update: int) -> float:
        """The rate at ``num_update < warmup_steps``."""
        if self.warmup_mode == "constant":
            return self.warmup_begin_lr
        rise = (self.warmup_final_lr - self.warmup_begin_lr) * num_update / self.warmup_steps
        return self.warmup_begin_lr + rise

    def __call__(self, num_update: int) -> float:
        raise NotImplementedError


def _check_factor(name: str, factor: float) -> None:
    if factor > 1.0:
        raise AttrError(f"{name}: factor must be at most 1, got {factor}")


class FactorScheduler(LRScheduler):
    """Multiply the rate by ``factor`` every ``step`` updates, not going below
    ``stop_factor_lr``."""

    def __init__(self, step: int, factor: float = 1, stop_factor_lr: float = 1e-8,
                 base_lr: float = 0.01, warmup_steps: int = 0, warmup_begin_lr: float = 0,
                 warmup_mode: str = "linear") -> None:
        super().__init__(base_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        if step < 1:
            raise AttrError(f"FactorScheduler: step must be at least 1, got {step}")
        _check_factor("FactorScheduler", factor)
        self.step, self.factor, self.stop_factor_lr = step, factor, stop_factor_lr
        self.count = 0

    def __call__(self, num_update: int) -> float:
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)
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

    def __init__(self, step: Sequence[int], factor: float = 1, base_lr: float = 0.01,
                 warmup_steps: int = 0, warmup_begin_lr: float = 0,
                 warmup_mode: str = "linear") -> None:
        super().__init__(base_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        step = list(step)
        if not step or any(s < 1 for s in step) or any(b <= a for a, b in zip(step, step[1:])):
            raise AttrError(f"MultiFactorScheduler: step must be increasing positive integers, "
                            f"got {step}")
        _check_factor("MultiFactorScheduler", factor)
        self.step, self.factor = step, factor
        self.cur_step_ind, self.count = 0, 0

    def __call__(self, num_update: int) -> float:
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)
        while self.cur_step_ind < len(self.step) and num_update > self.step[self.cur_step_ind]:
            self.count = self.step[self.cur_step_ind]
            self.cur_step_ind += 1
            self.base_lr *= self.factor
        return self.base_lr


class _Annealing(LRScheduler):
    """From ``base_lr`` (after warm-up) to ``final_lr`` at ``max_update`` along ``_shape``."""

    def __init__(self, max_update: int, base_lr: float, final_lr: float, warmup_steps: int,
                 warmup_begin_lr: float, warmup_mode: str) -> None:
        super().__init__(base_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        if not isinstance(max_update, int) or max_update < 1:
            raise AttrError(f"{type(self).__name__}: max_update must be a positive int, got "
                            f"{max_update!r}")
        self.base_lr_orig, self.max_update, self.final_lr = base_lr, max_update, final_lr
        self.max_steps = max_update - warmup_steps

    def _shape(self, progress: float) -> float:
        """1 at the start, 0 at ``max_update``; ``progress`` runs from 0 to 1."""
        raise NotImplementedError

    def __call__(self, num_update: int) -> float:
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)
        if num_update <= self.max_update:
            progress = (num_update - self.warmup_steps) / self.max_steps
            self.base_lr = self.final_lr + (self.base_lr_orig - self.final_lr) * \
                self._shape(progress)
        return self.base_lr


class PolyScheduler(_Annealing):
    """``final_lr + (base_lr - final_lr) * (1 - progress)**pwr``."""

    def __init__(self, max_update: int, base_lr: float = 0.01, pwr: float = 2,
                 final_lr: float = 0, warmup_steps: int = 0, warmup_begin_lr: float = 0,
                 warmup_mode: str = "linear") -> None:
        self.power = pwr
        super().__init__(max_update, base_lr, final_lr, warmup_steps, warmup_begin_lr,
                         warmup_mode)

    def _shape(self, progress: float) -> float:
        return pow(1 - progress, self.power)


class CosineScheduler(_Annealing):
    """``final_lr + (base_lr - final_lr) * (1 + cos(pi*progress)) / 2``."""

    def __init__(self, max_update: int, base_lr: float = 0.01, final_lr: float = 0,
                 warmup_steps: int = 0, warmup_begin_lr: float = 0,
                 warmup_mode: str = "linear") -> None:
        super().__init__(max_update, base_lr, final_lr, warmup_steps, warmup_begin_lr,
                         warmup_mode)

    def _shape(self, progress: float) -> float:
        return (1 + cos(pi * progress)) / 2
