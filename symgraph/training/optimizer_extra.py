"""MXNet 1.x optimizers whose step is per-element formulas: AdaGrad, NAG, Signum, FTML, Ftrl,
AdaDelta, Adamax, Nadam, DCASGD, ccSGD and Test.

Each is an :class:`~symgraph.training.optimizer.UpdateRule` like SGD's, so the numpy update, the
multi-precision (master weight) variant and the fused GPU kernel (``cuda/update_kernel.py``)
all come from the formulas below. The formulas follow what MXNet 1.9.1 computes (its C++
update kernels where it calls one, else its Python NDArray code), which differs in places from
its docstrings (NAG's momentum holds ``-lr`` times the docstring's). Importing this module
registers the classes (``sg.optimizer.create('nag')``) and puts them on ``sg.optimizer``.

Example::

    opt = sg.optimizer.create("nag", learning_rate=0.1, momentum=0.9)
"""
from __future__ import annotations

from typing import Any, Optional

from ..compiler.ops import update_rules as R
from . import optimizer as _opt
from ..core.base import AttrError
from .optimizer import SGD, Optimizer, UpdateRule

__all__ = ["AdaGrad", "NAG", "Signum", "FTML", "Ftrl", "AdaDelta", "Adamax", "Nadam", "DCASGD",
           "ccSGD", "Test", "install"]

BASE = R.BASE


def install(*classes: type) -> None:
    """Register ``classes`` under their lower-cased names and make them ``sg.optimizer.X``."""
    for klass in classes:
        _opt.register(klass)
        setattr(_opt, klass.__name__, klass)
        if klass.__name__ not in _opt.__all__:
            _opt.__all__.append(klass.__name__)


class AdaGrad(Optimizer):
    """MXNet's AdaGrad: ``g = clip(rescale*grad); h += g^2;
    weight -= lr*(g/sqrt(h + eps) + wd*weight)``."""

    SCALARS = R.ADAGRAD_SCALARS

    def __init__(self, eps: float = 1e-7, **kwargs: Any) -> None:
        self.float_stable_eps = eps
        super().__init__(**kwargs)

    def _rule(self) -> UpdateRule:
        return R.adagrad_rule(self.clip_gradient)

    def _scalars(self, index: Any, t: int) -> dict[str, float]:
        return {**super()._scalars(index, t), "eps": self.float_stable_eps}

    def _row_inputs(self) -> Optional[tuple]:
        if type(self) is not AdaGrad or self.lr_scheduler is not None:
            return None
        return (*self._base_inputs(), self.float_stable_eps)


class NAG(Optimizer):
    """Nesterov momentum (MXNet's ``nag_mom_update``): ``g = clip(rescale*grad) + wd*weight;
    mom = momentum*mom - lr*g; weight += momentum*mom - lr*g``; SGD when ``momentum`` is 0."""

    SCALARS = BASE + ("momentum",)
    MASTER_LAST = True  # (as SGD's, in MXNet)

    def __init__(self, momentum: float = 0.0, **kwargs: Any) -> None:
        self.momentum = momentum
        super().__init__(**kwargs)

    def _rule(self) -> UpdateRule:
        return R.nag_rule(bool(self.momentum), self.clip_gradient)

    def _scalars(self, index: Any, t: int) -> dict[str, float]:
        return {**super()._scalars(index, t), "momentum": self.momentum}


class Signum(Optimizer):
    """signSGD / Signum (MXNet's ``signsgd_update``, ``signum_update``):
    ``mom = momentum*mom - (1-momentum)*(wd*weight + clip(rescale*grad));
    weight = (1 - lr*wd_lh)*weight + lr*sign(mom)``; with ``momentum`` 0:
    ``weight = (1 - lr*wd)*weight - lr*sign(clip(rescale*grad))``."""

    SCALARS = BASE + ("momentum", "wd_lh")

    def __init__(self, learning_rate: float = 0.01, momentum: float = 0.9, wd_lh: float = 0.0,
                 **kwargs: Any) -> None:
        if not momentum and wd_lh:  # MXNet's signsgd_update rejects it at the first step
            raise AttrError(f"Signum: wd_lh={wd_lh} needs momentum > 0 (signSGD has no "
                            f"decoupled weight decay)")
        self.momentum, self.wd_lh = momentum, wd_lh
        super().__init__(learning_rate=learning_rate, **kwargs)

    def _rule(self) -> UpdateRule:
        return R.signum_rule(bool(self.momentum), self.clip_gradient)

    def _scalars(self, index: Any, t: int) -> dict[str, float]:
        return {**super()._scalars(index, t), "momentum": self.momentum, "wd_lh": self.wd_lh}


class FTML(Optimizer):
    """Follow the Moving Leader (MXNet's ``ftml_update``): ``g = clip(rescale*grad +
    wd*weight); v = beta2*v + (1-beta2)*g^2; d_t = (1-beta1^t)/lr*(sqrt(v/(1-beta2^t)) + eps);
    z = beta1*z + (1-beta1)*g - (d_t - beta1*d)*weight; d = d_t; weight = -z/d_t``."""

    SCALARS = BASE + ("beta1", "beta2", "epsilon", "bias1", "bias2")

    def __init__(self, beta1: float = 0.6, beta2: float = 0.999, epsilon: float = 1e-8,
                 **kwargs: Any) -> None:
        self.beta1, self.beta2, self.epsilon = beta1, beta2, epsilon
        super().__init__(**kwargs)

    def _rule(self) -> UpdateRule:
        return R.ftml_rule(self.clip_gradient)

    def _scalars(self, index: Any, t: int) -> dict[str, float]:
        return {**super()._scalars(index, t), "beta1": self.beta1, "beta2": self.beta2,
                "epsilon": self.epsilon, "bias1": 1.0 - self.beta1 ** t,
                "bias2": 1.0 - self.beta2 ** t}


class Ftrl(Optimizer):
    """FTRL-proximal (MXNet's ``ftrl_update``): ``g = clip(rescale*grad);
    z += g - (sqrt(n + g^2) - sqrt(n))*weight/lr; n += g^2;
    weight = (sign(z)*lamda1 - z) / ((beta + sqrt(n))/lr + wd) * (|z| > lamda1)``."""

    SCALARS = BASE + ("lamda1", "beta")

    def __init__(self, lamda1: float = 0.01, learning_rate: float = 0.1, beta: float = 1,
                 **kwargs: Any) -> None:
        self.lamda1, self.beta = lamda1, beta
        super().__init__(learning_rate=learning_rate, **kwargs)

    def _rule(self) -> UpdateRule:
        return R.ftrl_rule(self.clip_gradient)

    def _scalars(self, index: Any, t: int) -> dict[str, float]:
        return {**super()._scalars(index, t), "lamda1": self.lamda1, "beta": self.beta}


class AdaDelta(Optimizer):
    """AdaDelta as MXNet 1.9.1 computes it: ``g = clip(rescale*grad);
    acc_g = rho*acc_g + (1-rho)*g^2; delta = sqrt(acc_delta + eps)/sqrt(acc_g + eps)*g;
    acc_delta = rho*acc_delta + (1-rho)*delta^2; weight -= delta + wd*weight``."""

    SCALARS = BASE + ("rho", "epsilon")

    def __init__(self, rho: float = 0.90, epsilon: float = 1e-5, **kwargs: Any) -> None:
        self.rho, self.epsilon = rho, epsilon
        super().__init__(**kwargs)

    def _rule(self) -> UpdateRule:
        return R.adadelta_rule(self.clip_gradient)

    def _scalars(self, index: Any, t: int) -> dict[str, float]:
        return {**super()._scalars(index, t), "rho": self.rho, "epsilon": self.epsilon}


class Adamax(Optimizer):
    """AdaMax: ``g = clip(rescale*grad + wd*weight); m = beta1*m + (1-beta1)*g;
    u = max(beta2*u, |g|); weight -= lr/(1-beta1^t) * m/u``."""

    SCALARS = BASE + ("beta1", "beta2")

    def __init__(self, learning_rate: float = 0.002, beta1: float = 0.9, beta2: float = 0.999,
                 **kwargs: Any) -> None:
        self.beta1, self.beta2 = beta1, beta2
        super().__init__(learning_rate=learning_rate, **kwargs)

    def _rule(self) -> UpdateRule:
        return R.adamax_rule(self.clip_gradient)

    def _scalars(self, index: Any, t: int) -> dict[str, float]:
        base = super()._scalars(index, t)
        base["lr"] /= 1.0 - self.beta1 ** t
        return {**base, "beta1": self.beta1, "beta2": self.beta2}


class Nadam(Optimizer):
    """Nesterov Adam with MXNet's momentum schedule ``mu_t = beta1*(1 - 0.5*0.96^(t*decay))``;
    ``m_schedule`` is one product over every update call of the optimizer, as in MXNet."""

    SCALARS = BASE + ("beta1", "beta2", "epsilon", "mu_t", "mu_next", "sched", "sched_next",
                      "bias2")

    def __init__(self, learning_rate: float = 0.001, beta1: float = 0.9, beta2: float = 0.999,
                 epsilon: float = 1e-8, schedule_decay: float = 0.004, **kwargs: Any) -> None:
        self.beta1, self.beta2, self.epsilon = beta1, beta2, epsilon
        self.schedule_decay, self.m_schedule = schedule_decay, 1.0
        super().__init__(learning_rate=learning_rate, **kwargs)

    def _rule(self) -> UpdateRule:
        return R.nadam_rule(self.clip_gradient)

    def _scalars(self, index: Any, t: int) -> dict[str, float]:
        mu_t = self.beta1 * (1.0 - 0.5 * 0.96 ** (t * self.schedule_decay))
        mu_next = self.beta1 * (1.0 - 0.5 * 0.96 ** ((t + 1) * self.schedule_decay))
        self.m_schedule *= mu_t  # advances once per parameter update, as MXNet's
        return {**super()._scalars(index, t), "beta1": self.beta1, "beta2": self.beta2,
                "epsilon": self.epsilon, "mu_t": mu_t, "mu_next": mu_next,
                "sched": self.m_schedule, "sched_next": self.m_schedule * mu_next,
                "bias2": 1.0 - self.beta2 ** t}


class DCASGD(Optimizer):
    """Delay-compensated async SGD: ``g = clip(rescale*grad);
    mom = momentum*mom - lr*(g + wd*weight + lamda*g^2*(weight - previous));
    previous = weight; weight += mom`` (``previous`` starts as the weight)."""

    SCALARS = BASE + ("momentum", "lamda")

    def __init__(self, momentum: float = 0.0, lamda: float = 0.04, **kwargs: Any) -> None:
        self.momentum, self.lamda = momentum, lamda
        super().__init__(**kwargs)

    def _rule(self) -> UpdateRule:
        return R.dcasgd_rule(bool(self.momentum), self.clip_gradient)

    def _scalars(self, index: Any, t: int) -> dict[str, float]:
        return {**super()._scalars(index, t), "momentum": self.momentum, "lamda": self.lamda}


class ccSGD(SGD):  # noqa: N801 (MXNet's name)
    """Deprecated in MXNet: the same as :class:`~symgraph.training.optimizer.SGD`."""


class Test(Optimizer):
    """MXNet's test optimizer: ``weight += rescale_grad*grad``; its state is the new weight."""

    def _rule(self) -> UpdateRule:
        return R.mxnet_test_rule()


install(AdaGrad, NAG, Signum, FTML, Ftrl, AdaDelta, Adamax, Nadam, DCASGD, ccSGD, Test)
