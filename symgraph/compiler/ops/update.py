"""Optimizer update ops (MXNet's ``sgd_update``, ``adam_update``...): one kernel of formulas each.

An update op is data: :class:`Group` s of per-element formulas taken from the optimizer's own
:class:`~.update_rules.UpdateRule` (so ``sg.optimizer``, the fused multi-tensor GPU step
and these ops compute one formula), the op's attributes put in as constants. Output 0 is the
new weight (MXNet writes it to ``out=``); the new states are hidden outputs that
``OpDef.always_mutates`` copies into the state inputs after every forward, as MXNet's
``FMutateInputs`` does (the states are therefore auxiliary states, as in MXNet's symbols). The
numpy reference evaluates the groups; the GPU family ``update`` (``cuda/lowering_update.py``)
prints each group as one elementwise kernel. None of them is differentiable.

Example::

    >>> import symgraph as sg
    >>> w, g, mom = sg.nd.ones((3,)), sg.nd.ones((3,)), sg.nd.zeros((3,))
    >>> _ = sg.nd.sgd_mom_update(w, g, mom, out=w, lr=0.1, momentum=0.9)
    >>> [round(float(v), 3) for v in (w.asnumpy()[0], mom.asnumpy()[0])]
    [0.9, -0.1]
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any, Callable, Optional, Sequence, Union

import numpy as np

from ...core import expr as E
from ...core.attrs import Attrs, Param
from ...core.base import DTypeError, ShapeError
from ...core.dtypes import compute_dtype
from ...core.registry import NOT_DIFFERENTIABLE, OPAQUE, OpDef, RunCtx, register
from .update_rules import UpdateRule

Operand = tuple[int, Optional[int]]  # (op input, element of it read as a scalar, or None)
Scalar = Union[float, Operand]  # an attribute's value, or an element of an input (preloaded)


@dataclass(frozen=True)
class Group:
    """One elementwise kernel: ``formulas`` over ``operands`` (``E.inp(j)`` is operand j),
    formula k written to output ``targets[k]``, which has the shape and dtype of input
    ``likes[k]``. Operands that read one element are (1,)-shaped and broadcast."""

    formulas: tuple[E.Expr, ...]
    operands: tuple[Operand, ...]
    targets: tuple[int, ...]
    likes: tuple[int, ...]


def rule_group(rule: UpdateRule, arrays: Sequence[int], scalars: dict[str, Scalar],
               outputs: Sequence[Optional[int]], like0: Optional[int] = None) -> Group:
    """``rule`` as a :class:`Group`: its arrays (weight, grad, *states) are the op inputs
    ``arrays``, its scalars the values in ``scalars``; its formula k goes to output
    ``outputs[k]`` (None: not written), typed like input ``like0`` (default: the weight) for k = 0,
    else like the state it updates."""
    operands: list[Operand] = [(i, None) for i in arrays]
    remap: list[E.Expr] = [E.inp(j) for j in range(len(arrays))]
    for name in rule.scalars:
        value = scalars[name]
        if isinstance(value, tuple):
            operands.append(value)
            remap.append(E.inp(len(operands) - 1))
        else:
            remap.append(E.const(value))
    kept = [(k, out) for k, out in enumerate(outputs) if out is not None]
    first = arrays[0] if like0 is None else like0
    likes = tuple(first if k == 0 else arrays[1 + k] for k, _ in kept)
    return Group(tuple(E.substitute(rule.formulas[k], remap) for k, _ in kept),
                 tuple(operands), tuple(out for _, out in kept), likes)


def _operand(xs: list, op: Operand) -> np.ndarray:
    i, element = op
    return xs[i] if element is None else np.asarray(xs[i]).reshape(-1)[element:element + 1]


def run_groups(groups: Sequence[Group], xs: list, n_out: int) -> list:
    """Evaluate ``groups`` on numpy inputs ``xs`` (computing in float32 for narrow floats,
    else in the widest input dtype); each result is stored in its like-input's dtype."""
    outs: list = [None] * n_out
    for grp in groups:
        vals = [np.asarray(_operand(xs, op)) for op in grp.operands]
        dt = np.result_type(*(compute_dtype(v.dtype) for v in vals)) if vals else np.float32
        got = E.evaluate(grp.formulas, [v.astype(dt, copy=False) for v in vals], dt)
        for out, like, v in zip(grp.targets, grp.likes, got):
            ref = np.asarray(xs[like])
            outs[out] = np.broadcast_to(v, ref.shape).astype(ref.dtype)
    return outs


def group_shape(groups: Callable[[Attrs], Sequence[Group]]) -> Callable:
    """Shape rule: within a group every whole-array operand and output has one shape
    (both directions); an element operand's input must hold that element."""
    def rule(attrs: Attrs, ins: list, outs: list) -> tuple[list, list]:
        ins, outs = list(ins), list(outs)
        for grp in groups(attrs):
            arrays = [i for i, e in grp.operands if e is None] + list(grp.likes)
            known = {tuple(s) for s in [ins[i] for i in arrays] + [outs[o] for o in grp.targets]
                     if s is not None}
            if len(known) > 1:
                raise ShapeError(f"inputs {sorted(set(arrays))} and their outputs must share "
                                 f"one shape, got {sorted(known)}")
            for i, e in grp.operands:
                if e is not None and ins[i] is not None and int(np.prod(ins[i])) <= e:
                    raise ShapeError(f"input {i} of shape {ins[i]} has no element {e}")
            if known:
                shape = known.pop()
                for i in arrays:
                    ins[i] = shape
                for o in grp.targets:
                    outs[o] = shape
        return ins, outs
    return rule


def class_type(classes: Callable[[Attrs], Sequence[tuple[tuple[int, ...], Any]]],
               like: Callable[[Attrs], Sequence[int]]) -> Callable:
    """Dtype rule: the inputs of each class share a dtype (a class may default to one, as a
    master weight is float32); output k has input ``like(attrs)[k]``'s dtype."""
    def rule(attrs: Attrs, ins: list, outs: list) -> tuple[list, list]:
        ins = list(ins)
        for members, default in classes(attrs):
            known = {np.dtype(ins[i]) for i in members if ins[i] is not None}
            if len(known) > 1:
                raise DTypeError(f"inputs {list(members)} must share one dtype, got "
                                 f"{sorted(str(t) for t in known)}")
            dt = known.pop() if known else default
            if dt is not None:
                for i in members:
                    ins[i] = np.dtype(dt)
        return ins, [ins[i] if ins[i] is not None else o for i, o in zip(like(attrs), outs)]
    return rule


def run_classes(n: int, k: int, mp: bool) -> list[tuple[tuple[int, ...], Any]]:
    """Dtype classes of ``n`` runs of ``k`` inputs (weight, grad, *states): one class per run,
    or with ``mp`` the weight and gradient apart from the float32 states and master weight."""
    if not mp:
        return [(tuple(range(i * k, i * k + k)), None) for i in range(n)]
    return [c for i in range(n) for c in (((i * k, i * k + 1), None),
                                          (tuple(range(i * k + 2, i * k + k)), np.float32))]


UPDATE_DOC = {
    "lr": "learning rate", "wd": "weight decay coefficient (L2 penalty)",
    "rescale_grad": "the gradient is multiplied by this first",
    "clip_gradient": "clip the rescaled gradient to [-c, c]; off when negative",
    "clip_grad": "clip the rescaled gradient to [-c, c]; off when negative",
    "lazy_update": "MXNet's row-sparse lazy update; dense arrays update every row",
    "momentum": "momentum (decay of the previous step)",
    "beta1": "decay rate of the first moment", "beta2": "decay rate of the second moment",
    "epsilon": "added to the denominator for stability",
    "gamma1": "decay rate of the squared-gradient average",
    "gamma2": "momentum of the centered update", "clip_weights": "clip the new weight to "
    "[-c, c]; off when negative", "lamda1": "L1 regularisation strength",
    "beta": "FTRL's per-coordinate learning-rate offset", "t": "number of the update step",
    "bias_correction": "divide the moments by (1 - beta^t)",
    "wd_lh": "decoupled weight decay (Loshchilov and Hutter)",
    "lower_bound": "lower bound of the weight norm r1 (off when negative)",
    "upper_bound": "upper bound of the weight norm r1 (off when negative)",
    "lrs": "learning rate of each weight", "wds": "weight decay of each weight",
    "num_weights": "number of weights updated",
}


def P(kind: str, default: Any = None, doc: str = "", required: bool = False) -> Param:
    """A parameter with its MXNet default (``required``: no default)."""
    return Param(kind, doc=doc) if required else Param(kind, default, doc=doc)


def base_params(lr: bool = True, lazy: bool = False, clip: str = "clip_gradient") -> dict:
    """``lr`` (required), ``wd``, ``rescale_grad``, ``clip_gradient`` as MXNet declares them."""
    params = {"lr": P("float", required=True)} if lr else {}
    params.update(wd=P("float", 0.0), rescale_grad=P("float", 1.0), **{clip: P("float", -1.0)})
    if lazy:
        params["lazy_update"] = P("bool", True)
    return params


@lru_cache(maxsize=None)
def cached_rule(make: Callable[..., UpdateRule], *structure: Any) -> UpdateRule:
    """``make(*structure)``: the rule of an optimizer configured by values that change its
    formulas (clipping on or off, a momentum state or not), made once."""
    return make(*structure)


def register_update(name: str, params: dict, inputs: Callable[[Attrs], tuple[str, ...]],
                    groups: Callable[[Attrs], Sequence[Group]], n_visible: Callable[[Attrs], int],
                    state_inputs: Callable[[Attrs], Sequence[int]],
                    classes: Callable[[Attrs], Sequence[tuple[tuple[int, ...], Any]]],
                    doc: str) -> OpDef:
    """Register update op ``name``: visible outputs first (the new weights), then one hidden
    output per state input, written back after every forward."""
    def outputs(a: Attrs) -> tuple[str, ...]:
        names = inputs(a)
        return (tuple("output" if n_visible(a) == 1 else f"output{k}"
                      for k in range(n_visible(a)))
                + tuple(f"{names[i]}_new" for i in state_inputs(a)))

    def mutates(a: Attrs) -> tuple[tuple[int, int], ...]:
        return tuple((n_visible(a) + k, i) for k, i in enumerate(state_inputs(a)))

    def like(a: Attrs) -> list[int]:
        firsts = {o: lk for g in groups(a) for o, lk in zip(g.targets, g.likes)}
        return [firsts[o] for o in range(len(outputs(a)))]

    def compute(a: Attrs, xs: list, ctx: RunCtx) -> list:
        return run_groups(groups(a), xs, len(outputs(a)))

    params = {k: replace(p, doc=p.doc or UPDATE_DOC[k]) for k, p in params.items()}
    return register(OpDef(
        name, params, inputs, group_shape(groups), compute, NOT_DIFFERENTIABLE, OPAQUE,
        infer_type=class_type(classes, like),
        aux=lambda a: tuple(inputs(a)[i] for i in state_inputs(a)), outputs=outputs,
        num_visible=n_visible, mutates=mutates, always_mutates=True,
        lowering=("update", {"groups": groups}), doc=doc))
