"""MXNet's single-tensor optimizer update ops, each the rule of its ``sg.optimizer`` class.

A row names the op's states (MXNet's input order, the master weight ``weight32`` last), the
optimizer rule its attributes configure and the rule's scalars from its attributes. The
multi-precision (``mp_``) ops use the rule's :meth:`~.update_rules.UpdateRule.master_weight_rule`:
float16 weight and gradient, float32 states and master weight (its float32 update is the new
weight). LAMB's two phases: phase 1 is the rule's direction, phase 2 a formula of its own.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Callable, Optional

import numpy as np

from ...core import expr as E
from ...core.attrs import Attrs
from . import update_rules as R
from .update import P, Group, base_params, cached_rule, register_update, rule_group
from .update_rules import UpdateRule

MakeRule = Callable[[Attrs], UpdateRule]
Scalars = Callable[[Attrs], dict]


def _clip_on(a: Attrs, key: str = "clip_gradient") -> Optional[float]:
    """The optimizer's ``clip_gradient`` structure: on (1.0) when MXNet clips (c >= 0)."""
    return 1.0 if a[key] >= 0 else None


def _base(a: Attrs, clip: str = "clip_gradient") -> dict:
    return {"lr": a.get("lr", 0.0), "wd": a["wd"], "rescale_grad": a["rescale_grad"],
            "clip_gradient": a[clip]}


def _with(*names: str) -> Scalars:
    """Scalars: the base four and attributes ``names`` under their own names."""
    return lambda a: {**_base(a), **{n: a[n] for n in names}}


def _update_op(name: str, states: tuple[str, ...], params: dict, make: MakeRule,
               scalars: Scalars, mp: bool = False, written: Optional[tuple[str, ...]] = None,
               like0: int = 0, doc: str = "") -> None:
    """Register op ``name`` on ``(weight, grad) + states``; ``mp``: the last state is the
    master weight (the rule's master-weight form); ``written``: the states the op updates
    (default all); ``like0``: the input whose dtype output 0 has (the weight)."""
    names = ("weight", "grad") + states
    n = len(names)
    arrays = (0, 1, n - 1, *range(2, n - 1)) if mp else tuple(range(n))
    kept = [names.index(s) for s in (written if written is not None else states)]
    outputs = [0] + [1 + kept.index(i) if i in kept else None for i in arrays[2:]]
    classes = [((0, 1), None), (tuple(range(2, n)), np.float32)] if mp \
        else [(tuple(range(n)), None)]

    @lru_cache(maxsize=256)
    def groups(a: Attrs) -> tuple[Group, ...]:
        rule = make(a).master_weight_rule() if mp else make(a)
        return (rule_group(rule, arrays, scalars(a), outputs, like0),)

    register_update(name, params, lambda a: names, groups, lambda a: 1, lambda a: kept,
                    lambda a: classes, doc)


def _sgd(momentum: bool) -> MakeRule:
    return lambda a: cached_rule(R.sgd_rule, momentum, _clip_on(a))


SGD_DOC = ("weight -= lr*(clip(rescale_grad*grad) + wd*weight)", "mom = momentum*mom - "
           "lr*(clip(rescale_grad*grad) + wd*weight); weight += mom")
MOM = {"momentum": P("float", 0.0)}
SGD_PARAMS = {"lr": P("float", required=True), **base_params(False)}
SGD_MOM_PARAMS = {"lr": P("float", required=True), **MOM, **base_params(False)}
LAZY = {"lazy_update": P("bool", True)}
for _mp in (False, True):
    _pre, _w32 = ("mp_", ("weight32",)) if _mp else ("", ())
    _update_op(f"{_pre}sgd_update", _w32, {**SGD_PARAMS, **LAZY}, _sgd(False),
               lambda a: {**_base(a), "momentum": 0.0}, _mp, doc=f"SGD step: {SGD_DOC[0]}; returns the new weight.")
    _update_op(f"{_pre}sgd_mom_update", ("mom",) + _w32, {**SGD_MOM_PARAMS, **LAZY},
               _sgd(True), _with("momentum"), _mp,
               doc=f"SGD with momentum: {SGD_DOC[1]}; mom is updated in place.")
    _update_op(f"{_pre}nag_mom_update", ("mom",) + _w32, SGD_MOM_PARAMS,
               lambda a: cached_rule(R.nag_rule, True, _clip_on(a)),
               _with("momentum"), _mp,
               doc="Nesterov momentum: g = clip(rescale_grad*grad) + wd*weight; "
                   "mom = momentum*mom - lr*g; weight += momentum*mom - lr*g.")

_update_op(
    "adam_update", ("mean", "var"),
    {"lr": P("float", required=True), "beta1": P("float", 0.9), "beta2": P("float", 0.999),
     "epsilon": P("float", 1e-8), **base_params(False), **LAZY},
    lambda a: cached_rule(R.adam_rule, _clip_on(a)),
    _with("beta1", "beta2", "epsilon"),
    doc="Adam step without bias correction (lr carries it): g = clip(rescale_grad*grad + "
        "wd*weight); mean, var moving moments; weight -= lr*mean/(sqrt(var) + epsilon).")


def _rmsprop(centered: bool) -> MakeRule:
    def make(a: Attrs) -> UpdateRule:
        cw = a["clip_weights"] if a["clip_weights"] >= 0 else None
        return cached_rule(R.rmsprop_rule, centered, _clip_on(a), cw)
    return make


RMS = {"lr": P("float", required=True), "gamma1": P("float", 0.95)}
RMS_TAIL = {"epsilon": P("float", 1e-8), **base_params(False), "clip_weights": P("float", -1.0)}
_update_op("rmsprop_update", ("n",), {**RMS, **RMS_TAIL}, _rmsprop(False),
           lambda a: {**_with("gamma1", "epsilon")(a), "gamma2": 0.0},
           doc="RMSProp: n = (1-gamma1)*g^2 + gamma1*n; weight -= lr*g/sqrt(n + epsilon), "
               "g = clip(rescale_grad*grad + wd*weight); weights clipped by clip_weights >= 0.")
_update_op("rmspropalex_update", ("n", "g", "delta"),
           {**RMS, "gamma2": P("float", 0.9), **RMS_TAIL}, _rmsprop(True),
           _with("gamma1", "gamma2", "epsilon"),
           doc="Centered RMSProp (Graves 2013): n and g moving moments of the gradient, "
               "delta = gamma2*delta - lr*g/sqrt(n - g^2 + epsilon); weight += delta.")
_update_op("ftrl_update", ("z", "n"),
           {"lr": P("float", required=True), "lamda1": P("float", 0.01), "beta": P("float", 1.0),
            **base_params(False)},
           lambda a: cached_rule(R.ftrl_rule, _clip_on(a)),
           _with("lamda1", "beta"),
           doc="FTRL-proximal: z += g - (sqrt(n + g^2) - sqrt(n))*weight/lr; n += g^2; "
               "weight = (sign(z)*lamda1 - z)/((beta + sqrt(n))/lr + wd) where |z| > lamda1.")


def _ftml_scalars(a: Attrs) -> dict:
    t = a["t"]
    return {**_base(a, "clip_grad"), "beta1": a["beta1"], "beta2": a["beta2"],
            "epsilon": a["epsilon"], "bias1": 1.0 - a["beta1"] ** t, "bias2": 1.0 - a["beta2"] ** t}


_update_op("ftml_update", ("d", "v", "z"),
           {"lr": P("float", required=True), "beta1": P("float", 0.6), "beta2": P("float", 0.999),
            "epsilon": P("float", 1e-8), "t": P("int", required=True),
            **base_params(False, clip="clip_grad")},
           lambda a: cached_rule(R.ftml_rule, _clip_on(a, "clip_grad")),
           _ftml_scalars,
           doc="Follow the Moving Leader at step t: d, v, z states; weight = -z/d_t.")
_update_op("signsgd_update", (), SGD_PARAMS,
           lambda a: cached_rule(R.signum_rule, False, _clip_on(a)),
           lambda a: {**_base(a), "momentum": 0.0, "wd_lh": 0.0},
           doc="signSGD: weight = (1 - lr*wd)*weight - lr*sign(clip(rescale_grad*grad)).")
_update_op("signum_update", ("mom",), {**SGD_MOM_PARAMS, "wd_lh": P("float", 0.0)},
           lambda a: cached_rule(R.signum_rule, True, _clip_on(a)),
           _with("momentum", "wd_lh"),
           doc="Signum: mom = momentum*mom - (1-momentum)*(wd*weight + clip(rescale_grad*grad));"
               " weight = (1 - lr*wd_lh)*weight + lr*sign(mom).")


def _lamb_direction(a: Attrs) -> UpdateRule:
    return cached_rule(R.lamb_direction_rule, _clip_on(a))


def _lamb_scalars(a: Attrs) -> dict:
    t, bias = a["t"], a["bias_correction"]
    return {**_base(a), "beta1": a["beta1"], "beta2": a["beta2"], "epsilon": a["epsilon"],
            "bias1": 1.0 - a["beta1"] ** t if bias else 1.0,
            "bias2": 1.0 - a["beta2"] ** t if bias else 1.0}


LAMB1 = {"beta1": P("float", 0.9), "beta2": P("float", 0.999), "epsilon": P("float", 1e-6),
         "t": P("int", required=True), "bias_correction": P("bool", True),
         "wd": P("float", required=True), "rescale_grad": P("float", 1.0),
         "clip_gradient": P("float", -1.0)}
for _mp in (False, True):
    _pre, _w32 = ("mp_", ("weight32",)) if _mp else ("", ())
    _update_op(f"{_pre}lamb_update_phase1", ("mean", "var") + _w32, LAMB1, _lamb_direction,
               _lamb_scalars, _mp, written=("mean", "var"), like0=4 if _mp else 0,
               doc="LAMB phase 1: updates mean and var, returns the direction g = "
                   "m_hat/(sqrt(v_hat) + epsilon) + wd*weight (bias-corrected if asked).")


def _phase2(lower: float, upper: float, mp: bool) -> tuple[E.Expr, ...]:
    """``weight - lr*ratio*g`` over (weight, g, r1, r2[, weight32], lr): ratio = r1/r2 with r1
    clipped to the bounds that are >= 0, or 1 when either norm is 0 (MXNet's kernel)."""
    r1, r2 = E.inp(2), E.inp(3)
    if lower >= 0:
        r1 = E.call("max", r1, lower)
    if upper >= 0:
        r1 = E.call("min", r1, upper)
    both = E.call("ne", r1, 0.0) * E.call("ne", r2, 0.0)
    ratio = E.where(both, r1 / E.where(both, r2, 1.0), 1.0)
    new = E.inp(4 if mp else 0) - E.inp(5 if mp else 4) * ratio * E.inp(1)
    return (new, new) if mp else (new,)


def _phase2_op(mp: bool) -> None:
    names = ("weight", "g", "r1", "r2") + (("weight32",) if mp else ())

    @lru_cache(maxsize=256)
    def groups(a: Attrs) -> tuple[Group, ...]:
        operands = tuple((i, None) for i in range(len(names)))
        operands = operands[:2] + ((2, 0), (3, 0)) + operands[4:]
        formulas = _phase2(a["lower_bound"], a["upper_bound"], mp)
        return (Group(tuple(E.substitute(f, [E.inp(j) for j in range(len(names))]
                                         + [E.const(a["lr"])]) for f in formulas),
                      operands, (0, 1) if mp else (0,), (0, 4) if mp else (0,)),)

    classes = [((0,), None), ((1, 2, 3, 4), np.float32)] if mp else [((0, 1, 2, 3), None)]
    register_update(f"{'mp_' if mp else ''}lamb_update_phase2",
                    {"lr": P("float", required=True), "lower_bound": P("float", -1.0),
                     "upper_bound": P("float", -1.0)}, lambda a: names, groups, lambda a: 1,
                    lambda a: (4,) if mp else (), lambda a: classes,
                    doc="LAMB phase 2: weight -= lr*r1/r2*g, r1 (||weight||) clipped to the "
                        "bounds >= 0; lr*g when a norm is 0." + (
                            " The float32 master weight is updated too." if mp else ""))


_phase2_op(False)
_phase2_op(True)

