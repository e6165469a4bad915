"""MXNet 1.x optimizers whose step needs more than per-element formulas: LAMB and LARS (layer
norms), LBSGD (accumulated gradients, norms), SGLD (Gaussian noise).

Their per-element part is still an :class:`~symgraph.training.optimizer.UpdateRule`; the norms or the
noise are computed on the host in :meth:`Optimizer._step` before the rule runs, so these
optimizers are not fused into one GPU kernel (``fused = False``: Module and Trainer give them
the host updater on every device). Importing this module registers them.

Example::

    opt = sg.optimizer.create("lamb", learning_rate=0.01, wd=0.01)
"""
from __future__ import annotations

import math
from typing import Any, Optional, Sequence

import numpy as np

from ..compiler.ops import update_rules as R
from ..core.base import AttrError
from ..core.rng import generator
from ..runtime.compile import formula_evaluator
from .optimizer import Optimizer, UpdateRule
from .optimizer_extra import install

__all__ = ["LAMB", "LARS", "LBSGD", "SGLD"]


def _norm(x: np.ndarray) -> float:
    """L2 norm, accumulated in float64."""
    return float(np.sqrt(np.sum(np.square(x, dtype=np.float64))))


class LAMB(Optimizer):
    """LAMB (MXNet's ``lamb_update_phase1/2``): ``g = clip(rescale*grad)``, Adam moments,
    ``u = m_hat/(sqrt(v_hat) + eps) + wd*weight`` (bias-corrected when ``bias_correction``),
    ``r1 = ||weight||`` clipped to ``[lower_bound, upper_bound]``, ``r2 = ||u||``,
    ``weight -= lr*r1/r2*u`` (``lr*u`` when a norm is 0)."""

    fused = False
    SCALARS = R.BIASED_SCALARS

    def __init__(self, learning_rate: float = 0.001, beta1: float = 0.9, beta2: float = 0.999,
                 epsilon: float = 1e-6, lower_bound: Optional[float] = None,
                 upper_bound: Optional[float] = None, bias_correction: bool = True,
                 **kwargs: Any) -> None:
        self.beta1, self.beta2, self.epsilon = beta1, beta2, epsilon
        self.lower_bound, self.upper_bound = lower_bound, upper_bound
        self.bias_correction = bias_correction
        super().__init__(learning_rate=learning_rate, **kwargs)
        # the direction u alone (output 0), for its norm
        self._direction = R.lamb_direction_rule(self.clip_gradient)
        self._mp_direction = self._direction.master_weight_rule()

    def _rule(self) -> UpdateRule:
        return R.lamb_rule(self.clip_gradient)

    def _scalars(self, index: Any, t: int) -> dict[str, float]:
        bias = self.bias_correction
        return {**super()._scalars(index, t), "beta1": self.beta1, "beta2": self.beta2,
                "epsilon": self.epsilon, "bias1": 1.0 - self.beta1 ** t if bias else 1.0,
                "bias2": 1.0 - self.beta2 ** t if bias else 1.0}

    def _step(self, rule: UpdateRule, weight: np.ndarray, grad: np.ndarray,
              state: Sequence[np.ndarray], scalars: dict, index: Any) -> list[np.ndarray]:
        master = rule is self.mp_rule
        direction = (self._mp_direction if master else self._direction).apply(
            weight, grad, state, scalars, formula_evaluator())[0]
        r1 = _norm(state[0] if master else weight)
        if self.lower_bound:  # (MXNet passes a bound only when it is truthy)
            r1 = max(r1, self.lower_bound)
        if self.upper_bound:
            r1 = min(r1, self.upper_bound)
        r2 = _norm(direction.astype(np.float32))
        ratio = r1 / r2 if r1 != 0.0 and r2 != 0.0 else 1.0
        return rule.apply(weight, grad, state, {**scalars, "lr": scalars["lr"] * ratio},
                          formula_evaluator())


class LARS(Optimizer):
    """Layer-wise adaptive rate scaling on SGD (MXNet's ``multi_lars``): for parameters not
    named ``*gamma``/``*beta``/``*bias``, ``lr *= eta*||w|| / (||rescale*g|| + wd*||w|| + eps)``
    when both norms are positive; with ``momentum_correction`` the momentum is scaled by the
    ratio of this step's learning rate to the last one's. Only ``*_weight`` parameters get
    weight decay by default."""

    fused = False
    WD_SUFFIXES = ("_weight",)

    def __init__(self, momentum: float = 0.0, lazy_update: bool = True, eta: float = 0.001,
                 eps: float = 0, momentum_correction: bool = True, **kwargs: Any) -> None:
        self.momentum, self.eta, self.eps = momentum, eta, eps
        self.momentum_correction, self.lazy_update = momentum_correction, lazy_update
        self.last_lr: Optional[float] = None
        self.cur_lr: Optional[float] = None
        self._lr_step = -1  # num_update at which cur_lr was taken
        super().__init__(**kwargs)

    def _rule(self) -> UpdateRule:
        return R.sgd_rule(bool(self.momentum), self.clip_gradient)

    def _scalars(self, index: Any, t: int) -> dict[str, float]:
        if self._lr_step != self.num_update:  # a new step: remember the last learning rate
            self._lr_step = self.num_update
            lr = self.lr_scheduler(self.num_update) if self.lr_scheduler else self.lr
            self.last_lr = lr if self.cur_lr is None else self.cur_lr
            self.cur_lr = lr
        momentum = self.momentum
        if self.momentum_correction and self.last_lr:
            momentum *= self.cur_lr / self.last_lr
        return {**super()._scalars(index, t), "momentum": momentum}

    def _step(self, rule: UpdateRule, weight: np.ndarray, grad: np.ndarray,
              state: Sequence[np.ndarray], scalars: dict, index: Any) -> list[np.ndarray]:
        name = str(self.idx2name.get(index, index))
        if not name.endswith(("gamma", "beta", "bias")):
            w_norm = _norm(weight.astype(np.float32))
            g_norm = _norm(grad.astype(np.float32)) * self.rescale_grad
            if w_norm > 0.0 and g_norm > 0.0:
                scalars = {**scalars, "lr": scalars["lr"] * self.eta * w_norm / (
                    g_norm + scalars["wd"] * w_norm + self.eps)}
        return rule.apply(weight, grad, state, scalars, formula_evaluator())


class LBSGD(Optimizer):
    """Large-batch SGD: gradients are summed over ``batch_scale`` calls, then one SGD step
    with the mean, its learning rate scaled by the warm-up multiplier
    (``warmup_strategy`` 'linear', 'power2', 'sqrt', or 'lars': a clipped norm ratio)."""

    fused = False

    def __init__(self, momentum: float = 0.0, multi_precision: bool = False,
                 warmup_strategy: str = "linear", warmup_epochs: int = 5, batch_scale: int = 1,
                 updates_per_epoch: int = 32, begin_epoch: int = 0, num_epochs: int = 60,
                 **kwargs: Any) -> None:
        self.momentum, self.warmup_strategy = momentum, warmup_strategy
        self.warmup_epochs, self.batch_scale = warmup_epochs, batch_scale
        self.updates_per_epoch, self.num_epochs = updates_per_epoch, num_epochs
        self.init_updates = begin_epoch * updates_per_epoch
        self.cumgrads: dict[Any, dict] = {}
        super().__init__(multi_precision=multi_precision, **kwargs)

    def _rule(self) -> UpdateRule:
        return R.sgd_rule(bool(self.momentum), self.clip_gradient)

    def _scalars(self, index: Any, t: int) -> dict[str, float]:
        return {**super()._scalars(index, t), "momentum": self.momentum}

    def _get_lbmult(self, nup: int) -> float:
        """The warm-up multiplier after ``nup`` accumulated gradients."""
        nwup, top = self.warmup_epochs * self.updates_per_epoch, float(self.batch_scale)
        if nup >= nwup:
            return top
        if nwup <= 1:
            return 1.0
        grow = {"linear": nup / nwup, "power2": (nup * nup) / (nwup * nwup),
                "sqrt": math.sqrt(float(nup) / nwup)}.get(self.warmup_strategy, 0.0)
        return 1.0 + (top - 1) * grow

    def _step(self, rule: UpdateRule, weight: np.ndarray, grad: np.ndarray,
              state: Sequence[np.ndarray], scalars: dict, index: Any) -> list[np.ndarray]:
        got = self.cumgrads.get(index)
        if got and got["num_cums"] > 0:
            cum, count = got["cum_grad"] + grad, got["num_cums"] + 1
        else:
            # a copy: ``grad`` may be the gradient's own buffer, which the next backward writes
            cum, count = grad.copy(), self.init_updates + 1
        if count % self.batch_scale:  # still accumulating: the weight stays
            self.cumgrads[index] = {"cum_grad": cum, "num_cums": count}
            return [weight, *state]
        self.cumgrads[index] = {"cum_grad": 0, "num_cums": count}
        mean = cum / self.batch_scale
        if self.warmup_strategy == "lars":
            w2 = float(np.sum(np.square(weight, dtype=np.float64)))
            g2 = float(np.sum(np.square(mean, dtype=np.float64)))
            mult = min(max(math.sqrt(w2 / (g2 + scalars["wd"] * w2 + 1e-18)), 0.01), 100.0)
        else:
            mult = self._get_lbmult(count)
        return rule.apply(weight, mean, state, {**scalars, "lr": scalars["lr"] * mult},
                          formula_evaluator())


class SGLD(Optimizer):
    """Stochastic gradient Langevin dynamics: ``weight += -lr/2*(clip(rescale*grad) +
    wd*weight) + N(0, sqrt(lr))``, the noise drawn from ``sg.random``'s generator."""

    fused = False

    def _rule(self) -> UpdateRule:
        return R.sgld_rule(self.clip_gradient)

    def _step(self, rule: UpdateRule, weight: np.ndarray, grad: np.ndarray,
              state: Sequence[np.ndarray], scalars: dict, index: Any) -> list[np.ndarray]:
        new = rule.apply(weight, grad, state, scalars, formula_evaluator())
        if scalars["lr"] < 0:
            raise AttrError(f"SGLD: parameter {self._name(index)!r} has learning rate "
                            f"{scalars['lr']}; the noise's scale sqrt(lr) needs lr >= 0")
        noise = generator().normal(0.0, math.sqrt(scalars["lr"]), weight.shape)
        new[0] = (new[0] + noise).astype(new[0].dtype)
        return [new[0], new[0]] + new[2:] if rule is self.mp_rule else new


install(LAMB, LARS, LBSGD, SGLD)
