"""``sg.optimizer.contrib``: MXNet 1.x's contrib optimizers (GroupAdaGrad).

Example::

    opt = sg.optimizer.contrib.GroupAdaGrad(learning_rate=0.1)
"""
from __future__ import annotations

import sys
from typing import Any, Sequence

import numpy as np

from ..compiler.ops import update_rules as R
from ..runtime.compile import formula_evaluator
from . import optimizer as _opt
from ..core.base import AttrError, ShapeError
from .optimizer import Optimizer, UpdateRule

__all__ = ["GroupAdaGrad"]


class GroupAdaGrad(Optimizer):
    """AdaGrad with one rate per row of a 2-D weight: ``g = clip(rescale*grad);
    history += mean(g^2, axis=1, keepdims=True); weight -= lr*g/sqrt(history + eps)``.
    Weight decay is not supported (an ``AttrError``, as MXNet's assertion)."""

    fused = False  # the history has one value per row: a reduction, not a formula per element
    SCALARS = R.ADAGRAD_SCALARS

    def __init__(self, eps: float = 1e-5, **kwargs: Any) -> None:
        self.float_stable_eps = eps
        super().__init__(**kwargs)

    def _rule(self) -> UpdateRule:
        return R.group_adagrad_rule(self.clip_gradient)

    def _scalars(self, index: Any, t: int) -> dict[str, float]:
        return {**super()._scalars(index, t), "eps": self.float_stable_eps}

    def create_state(self, index: Any, weight: Any) -> tuple[np.ndarray, ...]:
        if len(weight.shape) != 2:
            raise ShapeError(f"GroupAdaGrad: parameter {self._name(index)!r} has shape "
                             f"{tuple(weight.shape)}; only 2-d weights have rows")
        history = np.zeros((weight.shape[0], 1), np.float32)
        if self._master(weight):
            return super().create_state(index, weight)[:1] + (history,)
        return (history,)

    def _step(self, rule: UpdateRule, weight: np.ndarray, grad: np.ndarray,
              state: Sequence[np.ndarray], scalars: dict, index: Any) -> list[np.ndarray]:
        if scalars["wd"] != 0:
            raise AttrError(f"GroupAdaGrad: weight decay is not supported (parameter "
                            f"{self._name(index)!r} has wd={scalars['wd']})")
        g = grad.astype(np.float32) * np.float32(scalars["rescale_grad"])
        if self.clip_gradient is not None and self.clip_gradient >= 0:
            g = np.clip(g, -scalars["clip_gradient"], scalars["clip_gradient"])
        history = state[-1] + np.mean(g * g, axis=1, keepdims=True)
        return rule.apply(weight, grad, [*state[:-1], history], scalars, formula_evaluator())


_opt.register(GroupAdaGrad)  # create('groupadagrad'); the class itself is only in contrib
_opt.contrib = sys.modules[__name__]  # type: ignore[attr-defined]
