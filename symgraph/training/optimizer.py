"""``sg.optimizer``: SGD, Adam, RMSProp with MXNet 1.x names, defaults and formulas (the
others: ``optimizer_extra``, ``optimizer_norm``, ``optimizer_contrib``).

An optimizer is its :class:`UpdateRule` (per-element formulas, ``compiler/ops/update_rules.py``,
shared with the update ops and the fused GPU step) plus what Python computes once per
parameter and step: the scalars (scheduled learning rate, ``lr_mult``, bias corrections).
"""
from __future__ import annotations

import math
from typing import Any, Callable, Optional, Sequence

import numpy as np

from ..compiler.ops import update_rules as R
from ..compiler.ops.update_rules import RuleInputs, UpdateRule, rescaled_grad  # noqa: F401
from ..core.base import AttrError
from ..runtime.compile import formula_evaluator  # (compiled kernels on the compiled CPU backend)
from ..runtime.updater import Updater, get_updater
from .lr_scheduler import LRScheduler
from .optimizer_inplace import update_in_place as in_place
from .optimizer_layout import MultiPrecisionAPI, host_values

__all__ = ["Optimizer", "SGD", "Adam", "RMSProp", "Updater", "UpdateRule", "create",
           "register", "get_updater", "RuleInputs"]


def symbol_info(sym: Any) -> tuple[dict, tuple[str, ...]]:
    """``(attributes by node name, argument names)`` of ``sym`` (``({}, ())`` for None): as
    MXNet, only arguments take ``lr_mult``/``wd_mult`` from their attributes."""
    if sym is None:
        return {}, ()
    return sym.attr_dict(), tuple(sym.list_arguments())


_REGISTRY: dict[str, type] = {}  # lower-cased class name -> class (MXNet's opt_registry)


class SchedulerConflict(AttrError, UserWarning):
    """``set_learning_rate`` on an optimizer driven by an ``lr_scheduler`` (MXNet raises a
    ``UserWarning`` there, which this also is)."""


class Optimizer(MultiPrecisionAPI):
    """Base class (MXNet's ``mx.optimizer.Optimizer``): learning rate, weight decay, gradient
    rescaling and clipping, per-parameter ``lr_mult``/``wd_mult``, update counts."""

    # False where a step needs more than per-element formulas (norms, random draws, states
    # of another shape): such an optimizer updates through its numpy ``_apply`` on any device.
    fused = True
    opt_registry = _REGISTRY  # MXNet's class-level table of what ``create`` knows

    @staticmethod
    def register(klass: type) -> type:
        """MXNet's spelling of the module's :func:`register`."""
        return register(klass)

    @staticmethod
    def create_optimizer(name: Any, **kwargs: Any) -> "Optimizer":
        """MXNet's spelling of the module's :func:`create`."""
        return create(name, **kwargs)
    # names that keep weight decay unless a multiplier says otherwise (MXNet's default)
    WD_SUFFIXES: tuple[str, ...] = ("_weight", "_gamma")
    # MXNet's multi-precision state pair: (weight32, state), or (state, weight32) for SGD/NAG
    MASTER_LAST = False

    def __init__(self, rescale_grad: float = 1.0, param_idx2name: Optional[dict] = None,
                 wd: float = 0.0, clip_gradient: Optional[float] = None,
                 learning_rate: Optional[float] = None, lr_scheduler: Optional[LRScheduler] = None,
                 sym: Any = None, begin_num_update: int = 0, multi_precision: bool = False,
                 param_dict: Optional[dict] = None) -> None:
        self.rescale_grad = rescale_grad
        if lr_scheduler is None and learning_rate is None:
            learning_rate = 0.01
        self.lr, self.wd = learning_rate, wd  # (MXNet: None while a scheduler drives it)
        self.clip_gradient, self.lr_scheduler = clip_gradient, lr_scheduler
        if lr_scheduler is not None and learning_rate is not None:
            lr_scheduler.base_lr = learning_rate
        self.begin_num_update = self.num_update = begin_num_update
        self._index_update_count: dict[Any, int] = {}
        self.multi_precision = multi_precision
        self.idx2name, self.param_dict = dict(param_idx2name or {}), param_dict or {}
        self.lr_mult: dict[str, float] = {}
        self.wd_mult: dict[str, float] = {}
        # (attributes, argument names): as MXNet, only arguments take multipliers from attrs
        self.sym_info = symbol_info(sym)
        self.set_lr_mult({})
        self.set_wd_mult({})
        self.rule = self._rule()
        self._row_memo: dict[Any, tuple] = {}  # index -> scalar row (see step_rows)
        self._row_snapshot: Optional[tuple] = None
        self._scalar_dicts: dict[tuple, dict] = {}  # row -> its float64 scalars by name
        self.mp_rule = self.rule.master_weight_rule() if self.rule is not None else None
        if self.rule is None or type(self).update is not Optimizer.update:
            self.fused = False  # a hand-written update() runs on the host only

    # -- the rule and its per-step scalars -------------------------------------------------
    def _rule(self) -> Optional[UpdateRule]:
        """The per-element update. None for the base class: a subclass without a rule writes
        ``create_state`` and ``update`` itself, as MXNet's Python optimizers do."""
        return None

    def _scalars(self, index: Any, t: int) -> dict[str, float]:
        """Hyper-parameters of this step for parameter ``index`` (``t`` = its update count)."""
        return {"lr": self._get_lr(index), "wd": self._get_wd(index),
                "rescale_grad": self.rescale_grad,
                "clip_gradient": self.clip_gradient if self.clip_gradient is not None else -1.0}

    # -- MXNet's API -----------------------------------------------------------------------
    def create_state(self, index: Any, weight: Any) -> tuple[np.ndarray, ...]:
        """Zero-initialised state arrays (host numpy) for ``weight``. With
        ``multi_precision`` and a float16/bfloat16 weight: a float32 copy of the weight (the
        master weight) first, and float32 states (MXNet's ``create_state_multi_precision``)."""
        if self.rule is None:  # (MXNet's base class keeps no state either)
            return None
        w = weight.asnumpy() if hasattr(weight, "asnumpy") else np.asarray(weight)
        if self._master(weight):
            return self.mp_rule.initial_states(w, np.float32)
        return self.rule.initial_states(w, np.dtype(weight.dtype))

    def set_lr_scale(self, args_lrscale: dict) -> None:
        """Deprecated in MXNet (raises ``DeprecationWarning`` there too): use set_lr_mult."""
        raise DeprecationWarning("set_lr_scale is deprecated; use set_lr_mult")

    def step_scalars(self, indices: Sequence[Any]) -> dict[str, np.ndarray]:
        """Count one update for each of ``indices`` and return this step's scalar table:
        ``{scalar name: float64 array with one value per index}``. A fused GPU update takes this
        table (one row per parameter) and the rule's formulas; the numpy path reads row ``i``."""
        rows = self.step_rows(indices)
        return {k: np.array([r[j] for r in rows], np.float64)
                for j, k in enumerate(self.rule.scalars)}

    def step_rows(self, indices: Sequence[Any]) -> list[tuple[float, ...]]:
        """:meth:`step_scalars` as plain floats: one tuple per index, in ``rule.scalars``
        order (the per-step path of the fused GPU update: no numpy calls for scalars).
        Rows are remembered per index while :meth:`_row_inputs` stays the same."""
        snapshot = self._row_inputs()
        names = self.rule.scalars
        if snapshot is None:  # a subclass may count or schedule its own way
            rows = []
            for index in indices:
                self._update_count(index)
                got = self._scalars(index, self._index_update_count[index])
                rows.append(tuple(float(got[k]) for k in names))
            return rows
        memo = self._row_memo
        if snapshot != self._row_snapshot:
            memo.clear()
            self._row_snapshot = snapshot
        counts, begin = self._index_update_count, self.begin_num_update
        rows = []
        for index in indices:
            count = counts[index] = counts.get(index, begin) + 1
            if count > self.num_update:
                self.num_update = count
            row = memo.get(index)
            if row is None:
                got = self._scalars(index, count)
                row = memo[index] = tuple(float(got[k]) for k in names)
            rows.append(row)
        return rows

    def _row_inputs(self) -> Optional[tuple]:
        """Everything :meth:`_scalars` reads besides the index, when its result does not
        depend on the update count (then rows are reused while this is unchanged); None
        (always recompute) for optimizers that do not say, a scheduled learning rate, or
        scalars that change with the step (Adam's bias correction)."""
        return None

    def _base_inputs(self) -> tuple:
        """What the base :meth:`_scalars` reads (for subclasses' :meth:`_row_inputs`)."""
        return (self.lr, self.wd, self.rescale_grad, self.clip_gradient,
                tuple(self.lr_mult.items()), tuple(self.wd_mult.items()),
                tuple(self.idx2name.items()),
                tuple((p.lr_mult, p.wd_mult) for p in self.param_dict.values()))

    def update_multi(self, indices: Sequence[Any], weights: Sequence[Any],
                     grads: Sequence[Any], states: Sequence[Sequence[np.ndarray]]) -> None:
        """One step for several parameters: a subclass's own ``update()`` one at a time (as
        MXNet's updater calls it), else the rule's (:meth:`_rule_step`)."""
        if self.rule is None or type(self).update is not Optimizer.update:
            for index, w, g, st in zip(indices, weights, grads, states):
                self.update(index, w, g, st)
            return
        self._rule_step(indices, weights, grads, states)

    def _rule_step(self, indices: Sequence[Any], weights: Sequence[Any], grads: Sequence[Any],
                   states: Sequence[Sequence[np.ndarray]]) -> None:
        """The rule's step: in place in one call where optimizer_inplace can, else per
        parameter (the scalar table built once)."""
        rows, names, tables = self.step_rows(indices), self.rule.scalars, self._scalar_dicts
        if type(self)._step is Optimizer._step and in_place(self, rows, weights, grads, states):
            return
        if len(tables) > 4096:  # (a schedule makes new rows every step)
            tables.clear()
        for i, (row, w, g, st) in enumerate(zip(rows, weights, grads, states)):
            # float64 scalars, as the table of step_scalars holds them (numpy promotion);
            # the same row (unchanged hyper-parameters) gives the same read-only dict
            table = tables.get(row)
            if table is None:
                table = tables[row] = {k: np.float64(v) for k, v in zip(names, row)}
            self._apply(w, g, st, table, indices[i])

    def update(self, index: Any, weight: Any, grad: Any, state: Sequence[np.ndarray]) -> None:
        """Apply one step to ``weight`` (an NDArray or numpy array) in place; states too."""
        if self.rule is None:
            raise AttrError(f"optimizer {type(self).__name__}: no update rule; a subclass of "
                            "Optimizer defines _rule() or overrides update()")
        self._rule_step([index], [weight], [grad], [state])

    def _apply(self, weight: Any, grad: Any, state: Sequence[np.ndarray],
               scalars: dict[str, float], index: Any = None) -> None:
        w, g = host_values(weight), host_values(grad)
        rule = self.mp_rule if self._master(weight) else self.rule
        if len(state) != len(rule.states):
            raise AttrError(f"optimizer state of parameter {self._name(index)!r}: "
                            f"{len(state)} arrays, {rule.name} keeps {len(rule.states)} "
                            f"({', '.join(rule.states) or 'none'})")
        new = self._step(rule, w, g, state, scalars, index)
        weight[:] = new[0].astype(w.dtype, copy=False)
        for s, v in zip(state, new[1:]):
            s[...] = v

    def _step(self, rule: UpdateRule, weight: np.ndarray, grad: np.ndarray,
              state: Sequence[np.ndarray], scalars: dict, index: Any) -> list[np.ndarray]:
        """``[new weight, *new states]`` of one parameter on the host: the rule's formulas
        (optimizers whose step needs norms or random draws add those here)."""
        return rule.apply(weight, grad, state, scalars, formula_evaluator())

    def set_learning_rate(self, lr: float) -> None:
        if self.lr_scheduler is not None:
            raise SchedulerConflict("set_learning_rate: the learning rate is driven by "
                                    "lr_scheduler; set lr_scheduler.base_lr instead")
        self.lr = lr

    @property
    def learning_rate(self) -> float:
        return self.lr_scheduler(self.num_update) if self.lr_scheduler else self.lr

    def set_lr_mult(self, args_lr_mult: dict) -> None:
        """Per-name learning-rate multipliers: ``__lr_mult__`` attributes, then
        ``args_lr_mult``."""
        attrs, args = self.sym_info
        self.lr_mult = {n: float(attrs[n]["__lr_mult__"]) for n in args
                        if "__lr_mult__" in attrs.get(n, {})}
        self.lr_mult.update(args_lr_mult)

    def set_wd_mult(self, args_wd_mult: dict) -> None:
        """As MXNet: parameters not named ``*_weight``/``*_gamma`` get no weight decay unless a
        ``__wd_mult__`` attribute or ``args_wd_mult`` says otherwise."""
        self.wd_mult = {n: 0.0 for n in self.idx2name.values()
                        if not n.endswith(self.WD_SUFFIXES)}
        attrs, args = self.sym_info
        self.wd_mult.update({n: float(attrs[n]["__wd_mult__"]) for n in args
                             if "__wd_mult__" in attrs.get(n, {})})
        self.wd_mult.update(args_wd_mult)

    def _update_count(self, index: Any) -> None:
        count = self._index_update_count.get(index, self.begin_num_update) + 1
        self._index_update_count[index] = count
        self.num_update = max(count, self.num_update)

    def _name(self, index: Any) -> Any:
        return self.idx2name.get(index, index)

    def _get_lr(self, index: Any) -> float:
        return self.learning_rate * self._mult(self.lr_mult, index, "lr_mult")

    def _get_wd(self, index: Any) -> float:
        return self.wd * self._mult(self.wd_mult, index, "wd_mult")

    def _mult(self, table: dict, index: Any, attr: str) -> float:
        """MXNet's lookup order: the Gluon Parameter of ``param_dict`` (its multiplier now),
        the index itself, then the parameter's name."""
        if index in self.param_dict:
            return getattr(self.param_dict[index], attr)
        return table[index] if index in table else table.get(self._name(index), 1.0)


class SGD(Optimizer):
    """``mom = momentum*mom - lr*(clip(rescale*grad) + wd*weight); weight += mom`` (no state
    when ``momentum`` is 0: ``weight -= lr*(clip(rescale*grad) + wd*weight)``)."""

    SCALARS = R.SGD_SCALARS
    MASTER_LAST = True

    def __init__(self, momentum: float = 0.0, lazy_update: bool = True, **kwargs: Any) -> None:
        self.momentum = momentum
        super().__init__(**kwargs)

    def _rule(self) -> UpdateRule:
        return R.sgd_rule(bool(self.momentum), self.clip_gradient)

    def _scalars(self, index: Any, t: int) -> dict[str, float]:
        return {**super()._scalars(index, t), "momentum": self.momentum}

    def _row_inputs(self) -> Optional[tuple]:
        if type(self) is not SGD or self.lr_scheduler is not None:
            return None
        return (*self._base_inputs(), self.momentum)


class Adam(Optimizer):
    """MXNet's Adam: ``g = clip(rescale*grad + wd*weight)``, moments ``m, v``, and
    ``weight -= lr*sqrt(1-beta2^t)/(1-beta1^t) * m / (sqrt(v) + epsilon)``."""

    SCALARS = R.ADAM_SCALARS

    def __init__(self, learning_rate: float = 0.001, beta1: float = 0.9, beta2: float = 0.999,
                 epsilon: float = 1e-8, lazy_update: bool = True, **kwargs: Any) -> None:
        self.beta1, self.beta2, self.epsilon = beta1, beta2, epsilon
        super().__init__(learning_rate=learning_rate, **kwargs)

    def _rule(self) -> UpdateRule:
        return R.adam_rule(self.clip_gradient)

    def _scalars(self, index: Any, t: int) -> dict[str, float]:
        base = super()._scalars(index, t)
        base["lr"] *= math.sqrt(1.0 - self.beta2 ** t) / (1.0 - self.beta1 ** t)
        return {**base, "beta1": self.beta1, "beta2": self.beta2, "epsilon": self.epsilon}


class RMSProp(Optimizer):
    """MXNet's RMSProp (Tieleman & Hinton; ``centered=True``: Graves 2013). Uncentered:
    ``n = (1-gamma1)*g^2 + gamma1*n; weight -= lr*g/sqrt(n + epsilon)`` with
    ``g = clip(rescale*grad + wd*weight)``. Centered adds the mean ``m`` and momentum ``delta``:
    ``delta = gamma2*delta - lr*g/sqrt(n - m^2 + epsilon); weight += delta``."""

    SCALARS = R.RMSPROP_SCALARS

    def __init__(self, learning_rate: float = 0.001, gamma1: float = 0.9, gamma2: float = 0.9,
                 epsilon: float = 1e-8, centered: bool = False,
                 clip_weights: Optional[float] = None, **kwargs: Any) -> None:
        self.gamma1, self.gamma2, self.epsilon = gamma1, gamma2, epsilon
        self.centered, self.clip_weights = centered, clip_weights
        super().__init__(learning_rate=learning_rate, **kwargs)

    def _rule(self) -> UpdateRule:
        return R.rmsprop_rule(self.centered, self.clip_gradient, self.clip_weights)

    def _scalars(self, index: Any, t: int) -> dict[str, float]:
        return {**super()._scalars(index, t), "gamma1": self.gamma1, "gamma2": self.gamma2,
                "epsilon": self.epsilon}

    def _row_inputs(self) -> Optional[tuple]:
        if type(self) is not RMSProp or self.lr_scheduler is not None:
            return None
        return (*self._base_inputs(), self.gamma1, self.gamma2, self.epsilon)


def register(klass: type) -> type:
    """Make ``klass`` creatable by its lower-cased class name (also
    ``Optimizer.register``, as MXNet spells it).

    >>> @sg.optimizer.register
    ... class Halved(sg.optimizer.SGD):
    ...     pass
    >>> type(sg.optimizer.Optimizer.create_optimizer("halved")).__name__
    'Halved'
    """
    _REGISTRY[klass.__name__.lower()] = klass
    return klass


for _klass in (SGD, Adam, RMSProp):
    register(_klass)


def check_name(name: str) -> str:
    """The registry key of ``name``; ``AttrError`` listing the known names otherwise."""
    key = str(name).lower()
    if key not in _REGISTRY:
        raise AttrError(f"unknown optimizer {name!r}; known: {sorted(_REGISTRY)}")
    return key


def create(name: Any, **kwargs: Any) -> Optimizer:
    """An optimizer by name (``'sgd'``, ``'adam'``, ``'rmsprop'``...), or pass one through."""
    if isinstance(name, Optimizer):
        return name
    key = check_name(name)
    try:
        return _REGISTRY[key](**kwargs)
    except TypeError as exc:
        raise AttrError(f"optimizer {name!r}: {exc}") from None
