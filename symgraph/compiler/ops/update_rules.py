"""The per-element formulas of MXNet's optimizers, as :class:`UpdateRule` data.

One rule serves three consumers: ``sg.optimizer``'s classes (which add the hyper-parameters
and per-step scalars: scheduled learning rate, bias corrections), the update ops
(``sgd_update``, ``adam_update``...; ``update_ops.py``) and the fused multi-tensor GPU step
(``cuda/update_kernel.py``). They sit here, below the training layer, so the ops can use them.

A rule's inputs are ``weight, grad, *states, *scalars`` (``E.inp`` indices in that order) and
its formulas give the new weight, then the new value of each state. A builder takes only what
changes the formulas' structure (clipping on or off, a momentum state or not); the values of
the hyper-parameters are the rule's scalars.

Example::

    >>> import numpy as np
    >>> rule = sgd_rule(momentum=False, clip=None)
    >>> rule.apply(np.ones(2, np.float32), np.ones(2, np.float32), [],
    ...            {"lr": 0.5, "wd": 0.0, "rescale_grad": 1.0, "clip_gradient": -1.0,
    ...             "momentum": 0.0})[0].tolist()
    [0.5, 0.5]
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence

import numpy as np

from ...core import expr as E
from ...core.dtypes import compute_dtype

Evaluate = Callable[[Sequence[E.Expr], Sequence[np.ndarray], Any], list]
BASE = ("lr", "wd", "rescale_grad", "clip_gradient")
SGD_SCALARS = BASE + ("momentum",)
ADAM_SCALARS = BASE + ("beta1", "beta2", "epsilon")
RMSPROP_SCALARS = BASE + ("gamma1", "gamma2", "epsilon")
ADAGRAD_SCALARS = BASE + ("eps",)
BIASED_SCALARS = BASE + ("beta1", "beta2", "epsilon", "bias1", "bias2")  # FTML, LAMB
NADAM_SCALARS = BASE + ("beta1", "beta2", "epsilon", "mu_t", "mu_next", "sched",
                        "sched_next", "bias2")


@dataclass(frozen=True)
class UpdateRule:
    """Per-element update: inputs are ``weight, grad, *states, *scalars`` (``E.inp`` indices in
    that order); ``formulas`` are the new weight followed by the new value of each state."""

    name: str
    states: tuple[str, ...]
    scalars: tuple[str, ...]
    formulas: tuple[E.Expr, ...]
    # states that start as a copy of the weight (DCASGD's previous weight), not as zeros
    from_weight: frozenset = frozenset()

    def apply(self, weight: np.ndarray, grad: np.ndarray, states: Sequence[np.ndarray],
              scalars: dict[str, float], evaluate: Evaluate = E.evaluate) -> list[np.ndarray]:
        """Evaluate the rule on numpy arrays; returns ``[new weight, *new states]``, computed
        in float32 for narrow (float16/bfloat16) weights (the caller stores them narrow).
        ``evaluate``: how (``E.evaluate``'s signature; the compiled CPU backend's runs the
        formulas as one kernel)."""
        dt = compute_dtype(weight.dtype)
        ins = [weight.astype(dt, copy=False), grad.astype(dt, copy=False),
               *(s.astype(dt, copy=False) for s in states)]
        ins += [np.asarray(scalars[k], dt) for k in self.scalars]
        # an output that is an input (DCASGD's previous weight) is copied: the caller
        # overwrites the weight before it stores the states
        return [o.copy() if any(o is i for i in ins) else o
                for o in evaluate(self.formulas, ins, dt)]

    def master_weight_rule(self) -> "UpdateRule":
        """The multi-precision variant (``multi_precision=True``): state 0 is the float32
        master weight. The update reads it in place of the (narrow) weight, and its new value
        is both output 0 (stored narrow into the weight) and the new master. Derived from the
        same formulas, so a fused kernel printed from them updates master and narrow copy."""
        n_in = 2 + len(self.states) + len(self.scalars)
        # old inputs (weight, grad, *states, *scalars) read from (weight32, grad, ...) shifted
        remap = [E.inp(2), E.inp(1)] + [E.inp(i + 1) for i in range(2, n_in)]
        new = tuple(E.substitute(f, remap) for f in self.formulas)
        return UpdateRule(f"{self.name}_mp", ("weight32",) + self.states, self.scalars,
                          (new[0], new[0]) + new[1:], self.from_weight | {"weight32"})

    def initial_states(self, weight: np.ndarray, dtype: Any) -> tuple[np.ndarray, ...]:
        """Fresh states of ``dtype`` for ``weight``: zeros, or the weight for ``from_weight``."""
        return tuple(weight.astype(dtype) if name in self.from_weight
                     else np.zeros(weight.shape, dtype) for name in self.states)


class RuleInputs:
    """Names -> ``E.inp`` for writing a rule's formulas readably."""

    def __init__(self, states: Sequence[str], scalars: Sequence[str]) -> None:
        names = ["weight", "grad", *states, *scalars]
        self._index = {n: E.inp(i) for i, n in enumerate(names)}

    def __getattr__(self, name: str) -> E.Expr:
        try:
            return self._index[name]
        except KeyError:
            raise AttributeError(name) from None


def rescaled_grad(v: RuleInputs, clip: Optional[float], wd_first: bool = False) -> E.Expr:
    """``clip(rescale*grad)``, or ``clip(rescale*grad + wd*weight)`` with ``wd_first``."""
    g = v.rescale_grad * v.grad + v.wd * v.weight if wd_first else v.rescale_grad * v.grad
    if clip is None or clip < 0:
        return g
    return E.call("max", E.call("min", g, v.clip_gradient), E.call("neg", v.clip_gradient))


Clip = Optional[float]  # the optimizer's clip_gradient: clipping is on when it is >= 0


def sgd_rule(momentum: bool, clip: Clip) -> UpdateRule:
    """``mom = momentum*mom - lr*(clip(rescale*grad) + wd*weight); weight += mom`` (no state
    without momentum: ``weight -= lr*(clip(rescale*grad) + wd*weight)``)."""
    states = ("mom",) if momentum else ()
    v = RuleInputs(states, SGD_SCALARS)
    step = v.lr * (rescaled_grad(v, clip) + v.wd * v.weight)
    if not momentum:
        return UpdateRule("sgd", (), SGD_SCALARS, (v.weight - step,))
    mom = v.momentum * v.mom - step
    return UpdateRule("sgd_mom", states, SGD_SCALARS, (v.weight + mom, mom))


def nag_rule(momentum: bool, clip: Clip) -> UpdateRule:
    """Nesterov: ``mom = momentum*mom - lr*g; weight += momentum*mom - lr*g``."""
    states = ("mom",) if momentum else ()
    v = RuleInputs(states, SGD_SCALARS)
    step = v.lr * (rescaled_grad(v, clip, False) + v.wd * v.weight)
    if not momentum:
        return UpdateRule("nag", (), SGD_SCALARS, (v.weight - step,))
    mom = v.momentum * v.mom - step
    return UpdateRule("nag_mom", states, SGD_SCALARS, (v.weight + v.momentum * mom - step, mom))


def adam_rule(clip: Clip) -> UpdateRule:
    """Adam's moments and ``weight -= lr*m/(sqrt(v) + epsilon)`` (lr carries the bias
    correction)."""
    v = RuleInputs(("mean", "var"), ADAM_SCALARS)
    g = rescaled_grad(v, clip, True)
    mean = v.beta1 * v.mean + (1 - v.beta1) * g
    var = v.beta2 * v.var + (1 - v.beta2) * g * g
    weight = v.weight - v.lr * mean / (E.call("sqrt", var) + v.epsilon)
    return UpdateRule("adam", ("mean", "var"), ADAM_SCALARS, (weight, mean, var))


def rmsprop_rule(centered: bool, clip: Clip, clip_weights: Optional[float]) -> UpdateRule:
    """RMSProp, or Graves' centered form with the mean ``m`` and momentum ``delta``; weights
    clipped to ``[-clip_weights, clip_weights]`` when that is positive."""
    states = ("n", "m", "delta") if centered else ("n",)
    v = RuleInputs(states, RMSPROP_SCALARS)
    g = rescaled_grad(v, clip, True)
    n = (1 - v.gamma1) * g * g + v.gamma1 * v.n
    if centered:
        m = (1 - v.gamma1) * g + v.gamma1 * v.m
        delta = v.gamma2 * v.delta - v.lr * g / E.call("sqrt", n - m * m + v.epsilon)
        outs: tuple = (v.weight + delta, n, m, delta)
    else:
        outs = (v.weight - v.lr * g / E.call("sqrt", n + v.epsilon), n)
    if clip_weights is not None and clip_weights > 0:
        c = float(clip_weights)
        outs = (E.call("max", E.call("min", outs[0], c), -c),) + outs[1:]
    return UpdateRule("rmsprop", states, RMSPROP_SCALARS, outs)


def adagrad_rule(clip: Clip) -> UpdateRule:
    """``h += g^2; weight -= lr*(g/sqrt(h + eps) + wd*weight)``."""
    v = RuleInputs(("history",), ADAGRAD_SCALARS)
    g = rescaled_grad(v, clip)
    history = v.history + g * g
    weight = v.weight - v.lr * (g / E.call("sqrt", history + v.eps) + v.wd * v.weight)
    return UpdateRule("adagrad", ("history",), ADAGRAD_SCALARS, (weight, history))


def signum_rule(momentum: bool, clip: Clip) -> UpdateRule:
    """Signum: ``mom = momentum*mom - (1-momentum)*(wd*weight + g);
    weight = (1 - lr*wd_lh)*weight + lr*sign(mom)``; signSGD without momentum."""
    states = ("mom",) if momentum else ()
    scalars = SGD_SCALARS + ("wd_lh",)
    v = RuleInputs(states, scalars)
    g = rescaled_grad(v, clip, False)
    if not momentum:
        return UpdateRule("signsgd", (), scalars,
                          ((1 - v.lr * v.wd) * v.weight - v.lr * E.call("sign", g),))
    mom = v.momentum * v.mom - (1 - v.momentum) * (v.wd * v.weight + g)
    weight = (1 - v.lr * v.wd_lh) * v.weight + v.lr * E.call("sign", mom)
    return UpdateRule("signum", states, scalars, (weight, mom))


def ftml_rule(clip: Clip) -> UpdateRule:
    """Follow the Moving Leader: states ``d, v, z``; ``weight = -z/d_t``."""
    v = RuleInputs(("d", "v", "z"), BIASED_SCALARS)
    g = rescaled_grad(v, clip, True)
    var = v.beta2 * v.v + (1 - v.beta2) * g * g
    d_t = v.bias1 / v.lr * (E.call("sqrt", var / v.bias2) + v.epsilon)
    z = v.beta1 * v.z + (1 - v.beta1) * g - (d_t - v.beta1 * v.d) * v.weight
    return UpdateRule("ftml", ("d", "v", "z"), BIASED_SCALARS, (-z / d_t, d_t, var, z))


def ftrl_rule(clip: Clip) -> UpdateRule:
    """FTRL-proximal: ``z += g - (sqrt(n + g^2) - sqrt(n))*weight/lr; n += g^2``."""
    scalars = BASE + ("lamda1", "beta")
    v = RuleInputs(("z", "n"), scalars)
    g = rescaled_grad(v, clip, False)
    n = v.n + g * g
    z = v.z + g - (E.call("sqrt", n) - E.call("sqrt", v.n)) * v.weight / v.lr
    keep = E.call("gt", E.call("abs", z), v.lamda1)
    weight = (E.call("sign", z) * v.lamda1 - z) / ((v.beta + E.call("sqrt", n)) / v.lr
                                                    + v.wd) * keep
    return UpdateRule("ftrl", ("z", "n"), scalars, (weight, z, n))


def adadelta_rule(clip: Clip) -> UpdateRule:
    """AdaDelta as MXNet 1.9.1 computes it (``weight -= delta + wd*weight``)."""
    scalars = BASE + ("rho", "epsilon")
    v = RuleInputs(("acc_g", "acc_delta"), scalars)
    g = rescaled_grad(v, clip, False)
    acc_g = v.rho * v.acc_g + (1 - v.rho) * g * g
    delta = E.call("sqrt", v.acc_delta + v.epsilon) / E.call("sqrt", acc_g + v.epsilon) * g
    acc_delta = v.rho * v.acc_delta + (1 - v.rho) * delta * delta
    return UpdateRule("adadelta", ("acc_g", "acc_delta"), scalars,
                      (v.weight - (delta + v.wd * v.weight), acc_g, acc_delta))


def adamax_rule(clip: Clip) -> UpdateRule:
    """AdaMax: ``u = max(beta2*u, |g|); weight -= lr*m/u`` (lr carries the bias correction)."""
    scalars = BASE + ("beta1", "beta2")
    v = RuleInputs(("mean", "u"), scalars)
    g = rescaled_grad(v, clip, True)
    mean = v.beta1 * v.mean + (1 - v.beta1) * g
    u = E.call("max", v.beta2 * v.u, E.call("abs", g))
    return UpdateRule("adamax", ("mean", "u"), scalars, (v.weight - v.lr * mean / u, mean, u))


def nadam_rule(clip: Clip) -> UpdateRule:
    """Nesterov Adam over the momentum schedule's scalars (``mu_t``, ``sched``...)."""
    v = RuleInputs(("mean", "var"), NADAM_SCALARS)
    g = rescaled_grad(v, clip, True)
    mean = v.beta1 * v.mean + (1 - v.beta1) * g
    var = v.beta2 * v.var + (1 - v.beta2) * g * g
    m_bar = (1 - v.mu_t) * (g / (1 - v.sched)) + v.mu_next * (mean / (1 - v.sched_next))
    weight = v.weight - v.lr * m_bar / (E.call("sqrt", var / v.bias2) + v.epsilon)
    return UpdateRule("nadam", ("mean", "var"), NADAM_SCALARS, (weight, mean, var))


def dcasgd_rule(momentum: bool, clip: Clip) -> UpdateRule:
    """Delay-compensated SGD; ``previous`` starts as the weight."""
    scalars = SGD_SCALARS + ("lamda",)
    states = ("mom", "previous") if momentum else ("previous",)
    v = RuleInputs(states, scalars)
    g = rescaled_grad(v, clip, False)
    step = v.lr * (g + v.wd * v.weight + v.lamda * g * g * (v.weight - v.previous))
    mom = v.momentum * v.mom - step if momentum else -step
    outs = (v.weight + mom, mom, v.weight) if momentum else (v.weight + mom, v.weight)
    return UpdateRule("dcasgd", states, scalars, outs, frozenset({"previous"}))


def mxnet_test_rule() -> UpdateRule:
    """MXNet's test optimizer: ``weight += rescale_grad*grad``; its state is the new weight."""
    v = RuleInputs(("state",), BASE)
    weight = v.weight + v.grad * v.rescale_grad
    return UpdateRule("test", ("state",), BASE, (weight, weight))



def _lamb_parts(clip: Clip) -> tuple[E.Expr, E.Expr, E.Expr]:
    """LAMB's direction ``u = m_hat/(sqrt(v_hat) + eps) + wd*weight`` and its moments."""
    v = RuleInputs(("mean", "var"), BIASED_SCALARS)
    g = rescaled_grad(v, clip, False)
    mean = v.beta1 * v.mean + (1 - v.beta1) * g
    var = v.beta2 * v.var + (1 - v.beta2) * g * g
    u = mean / v.bias1 / (E.call("sqrt", var / v.bias2) + v.epsilon) + v.wd * v.weight
    return u, mean, var


def lamb_rule(clip: Clip) -> UpdateRule:
    """LAMB's step ``weight -= lr*u`` (the trust ratio is put into ``lr`` on the host)."""
    u, mean, var = _lamb_parts(clip)
    v = RuleInputs(("mean", "var"), BIASED_SCALARS)
    return UpdateRule("lamb", ("mean", "var"), BIASED_SCALARS, (v.weight - v.lr * u, mean, var))


def lamb_direction_rule(clip: Clip) -> UpdateRule:
    """LAMB's direction ``u`` alone as output 0 (for its norm; update op phase 1)."""
    return UpdateRule("lamb_direction", ("mean", "var"), BIASED_SCALARS, _lamb_parts(clip))


def sgld_rule(clip: Clip) -> UpdateRule:
    """SGLD's deterministic part ``weight -= lr/2*(g + wd*weight)`` (the noise is added on
    the host)."""
    v = RuleInputs((), BASE)
    g = rescaled_grad(v, clip, False)
    return UpdateRule("sgld", (), BASE, (v.weight - v.lr / 2 * (g + v.wd * v.weight),))


def group_adagrad_rule(clip: Clip) -> UpdateRule:
    """GroupAdaGrad's step ``weight -= lr*g/sqrt(history + eps)``; ``history`` is the
    already-updated (rows, 1) history, which broadcasts over each row."""
    v = RuleInputs(("history",), ADAGRAD_SCALARS)
    g = rescaled_grad(v, clip)
    return UpdateRule("group_adagrad", ("history",), ADAGRAD_SCALARS,
                      (v.weight - v.lr * g / E.call("sqrt", v.history + v.eps), v.history))
