"""MXNet's multi-tensor SGD updates: ``multi_sgd_update``, ``multi_sgd_mom_update``, their
``mp_`` (float32 master weight) forms, and the ``preloaded_`` forms reading each weight's
learning rate and weight decay from two arrays (the last two inputs) instead of attributes.

Inputs are ``num_weights`` runs of ``weight, grad[, mom][, weight32]``; outputs are the new
weights, the new states hidden and written back after every call. Each weight is one
:class:`~symgraph.compiler.ops.update.Group` of SGD's rule, so the GPU runs one elementwise kernel per
weight printed from the formulas ``sg.optimizer.SGD`` steps with (``update_rules.sgd_rule``).

Example::

    >>> import symgraph as sg
    >>> w, g = [sg.nd.ones((2,)), sg.nd.ones((3,))], [sg.nd.ones((2,)), sg.nd.ones((3,))]
    >>> _ = sg.nd.multi_sgd_update(w[0], g[0], w[1], g[1], out=w, lrs=(0.1, 0.2),
    ...                            wds=(0.0, 0.0), num_weights=2)
    >>> [round(float(x.asnumpy()[0]), 3) for x in w]
    [0.9, 0.8]
"""
from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np

from ...core.attrs import Attrs
from ...core.base import AttrError
from .update import P, Group, Scalar, cached_rule, register_update, rule_group, run_classes
from .update_rules import sgd_rule


def _sgd_rule(momentum: bool, clip: float) -> Any:
    return cached_rule(sgd_rule, momentum, 1.0 if clip >= 0 else None)


def _count(a: Attrs, preloaded: bool) -> int:
    """``num_weights``, checked against ``lrs``/``wds`` (attribute forms)."""
    n = a["num_weights"]
    if n < 1:
        raise AttrError(f"num_weights={n}: at least one weight is needed")
    if not preloaded:
        for key in ("lrs", "wds"):
            if len(a[key]) != n:
                raise AttrError(f"{key} has {len(a[key])} values for num_weights={n}")
    return n


def _multi_op(momentum: bool, mp: bool, preloaded: bool) -> None:
    """Register one of the eight multi-tensor SGD ops."""
    per = ("weight", "grad") + (("mom",) if momentum else ()) + (("weight32",) if mp else ())
    k = len(per)

    def names(a: Attrs) -> tuple[str, ...]:
        own = tuple(f"{p}_{i}" for i in range(_count(a, preloaded)) for p in per)
        return own + (("lrs", "wds") if preloaded else ())

    def states(a: Attrs) -> tuple[int, ...]:
        return tuple(i * k + j for i in range(_count(a, preloaded)) for j in range(2, k))

    @lru_cache(maxsize=256)
    def groups(a: Attrs) -> tuple[Group, ...]:
        n = _count(a, preloaded)
        rule = _sgd_rule(momentum, a["clip_gradient"])
        rule = rule.master_weight_rule() if mp else rule
        out: list[Group] = []
        for i in range(n):
            b = i * k
            arrays = (b, b + 1, b + k - 1, *range(b + 2, b + k - 1)) if mp \
                else tuple(range(b, b + k))
            lr: Scalar = (n * k, i) if preloaded else a["lrs"][i]
            wd: Scalar = (n * k + 1, i) if preloaded else a["wds"][i]
            scalars = {"lr": lr, "wd": wd, "rescale_grad": a["rescale_grad"],
                       "clip_gradient": a["clip_gradient"],
                       "momentum": a["momentum"] if momentum else 0.0}
            outputs = [i] + [n + states(a).index(j) for j in arrays[2:]]
            out.append(rule_group(rule, arrays, scalars, outputs))
        return tuple(out)

    def classes(a: Attrs) -> list[tuple[tuple[int, ...], Any]]:
        n = _count(a, preloaded)
        return run_classes(n, k, mp) + ([((n * k, n * k + 1), np.float32)] if preloaded else [])

    params: dict = {} if preloaded else {"lrs": P("floats", required=True),
                                         "wds": P("floats", required=True)}
    if momentum:
        params["momentum"] = P("float", 0.0)
    params.update(rescale_grad=P("float", 1.0), clip_gradient=P("float", -1.0),
                  num_weights=P("int", 1))
    name = (f"{'preloaded_' if preloaded else ''}multi_{'mp_' if mp else ''}sgd_"
            f"{'mom_' if momentum else ''}update")
    register_update(
        name, params, names, groups, lambda a: _count(a, preloaded), states, classes,
        doc=f"SGD{' with momentum' if momentum else ''} on num_weights weights at once "
            f"(inputs {', '.join(per)} per weight"
            + (", then the arrays lrs and wds" if preloaded else "") + "); returns the new "
            "weights" + (", updating the float32 master weights" if mp else "") + ".")


for _pre in (False, True):
    for _mp in (False, True):
        for _mom in (False, True):
            _multi_op(_mom, _mp, _pre)
