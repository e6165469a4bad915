"""MXNet's AdamW update ops (``_adamw_update``, ``_mp_adamw_update`` and the multi-tensor
``_multi_adamw_update``, ``_multi_mp_adamw_update``), reached as ``sg.nd.contrib.adamw_update``...

AdamW decouples the weight decay from the moments (Loshchilov and Hutter)::

    g = clip(rescale_grad * grad)
    mean = beta1*mean + (1-beta1)*g;  var = beta2*var + (1-beta2)*g^2
    weight -= eta * (lr * mean / (sqrt(var) + epsilon) + wd * weight)

``rescale_grad`` is an input array of one element, read by the kernel (a loss scaler changes it
without a new kernel); when it is NaN, infinite or 0 the whole step is skipped, weight and
states unchanged, as MXNet's kernel does. Each weight is one elementwise
:class:`~symgraph.compiler.ops.update.Group`, so the GPU runs one kernel per weight printed from
these formulas (family ``update``). The ``mp_`` forms update a float32 master weight (the last
array of each run) and store its new value narrow into the weight.

Example::

    >>> import symgraph as sg
    >>> w, g = sg.nd.ones((2,)), sg.nd.ones((2,))
    >>> m, v = sg.nd.zeros((2,)), sg.nd.zeros((2,))
    >>> _ = sg.nd.contrib.adamw_update(w, g, m, v, 1.0, lr=0.1, eta=1.0, out=w)
    >>> round(float(w.asnumpy()[0]), 4)
    0.6838
"""
from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np

from ...core import expr as E
from ...core.attrs import Attrs
from ...core.base import AttrError
from .update import P, Group, register_update, run_classes

MOMENTS = {"beta1": P("float", 0.9, "decay rate of the first moment"),
           "beta2": P("float", 0.999, "decay rate of the second moment"),
           "epsilon": P("float", 1e-8, "added to the denominator for stability")}
CLIP = {"clip_gradient": P("float", -1.0, "clip the rescaled gradient to [-c, c]; off when "
                                          "negative")}


def adamw_formulas(a: Attrs, lr: float, eta: float, wd: float, mp: bool) -> tuple[E.Expr, ...]:
    """New weight, mean, var (and master weight with ``mp``) over the operands ``weight, grad,
    mean, var, rescale_grad[, weight32]``; each keeps its old value when the step is skipped."""
    w, m, v, r = E.inp(0), E.inp(2), E.inp(3), E.inp(4)
    master = E.inp(5) if mp else w
    g = r * E.inp(1)
    if a["clip_gradient"] >= 0:
        g = E.call("min", E.call("max", g, -a["clip_gradient"]), a["clip_gradient"])
    mean = a["beta1"] * m + (1 - a["beta1"]) * g
    var = a["beta2"] * v + (1 - a["beta2"]) * g * g
    new = master - eta * (lr * mean / (E.call("sqrt", var) + a["epsilon"]) + wd * master)
    # finite and non-zero: |r| < inf is false for NaN and for +-inf
    ok = E.call("lt", E.call("abs", r), float("inf")) * E.call("ne", r, 0.0)
    kept = (E.where(ok, new, w), E.where(ok, mean, m), E.where(ok, var, v))
    return kept + ((E.where(ok, new, master),) if mp else ())


def _count(a: Attrs) -> int:
    """``num_weights``, checked against ``lrs``/``wds``/``etas``."""
    n = a["num_weights"]
    if n < 1:
        raise AttrError(f"num_weights={n}: at least one weight is needed")
    for key in ("lrs", "wds", "etas"):
        if len(a[key]) != n:
            raise AttrError(f"{key} has {len(a[key])} values for num_weights={n}")
    return n


def _register(multi: bool, mp: bool) -> None:
    """Register one of the four AdamW ops. Inputs: runs of ``weight, grad, mean, var[,
    weight32]`` (one run unless ``multi``), then ``rescale_grad``."""
    per = ("weight", "grad", "mean", "var") + (("weight32",) if mp else ())
    k = len(per)

    def count(a: Attrs) -> int:
        return _count(a) if multi else 1

    def names(a: Attrs) -> tuple[str, ...]:
        if not multi:
            return per + ("rescale_grad",)
        return tuple(f"{p}_{i}" for i in range(count(a)) for p in per) + ("rescale_grad",)

    def states(a: Attrs) -> tuple[int, ...]:
        return tuple(i * k + j for i in range(count(a)) for j in range(2, k))

    @lru_cache(maxsize=256)
    def groups(a: Attrs) -> tuple[Group, ...]:
        n, found = count(a), states(a)
        out = []
        for i in range(n):
            b = i * k
            lr, eta, wd = (a["lrs"][i], a["etas"][i], a["wds"][i]) if multi \
                else (a["lr"], a["eta"], a["wd"])
            operands = tuple((b + j, None) for j in range(4)) + ((n * k, 0),) \
                + (((b + 4, None),) if mp else ())
            targets = (i,) + tuple(n + found.index(b + j) for j in range(2, k))
            out.append(Group(adamw_formulas(a, lr, eta, wd, mp), operands, targets,
                             (b,) + tuple(b + j for j in range(2, k))))
        return tuple(out)

    def classes(a: Attrs) -> list[tuple[tuple[int, ...], Any]]:
        return run_classes(count(a), k, mp) + [((count(a) * k,), np.float32)]

    if multi:
        etas = P("floats", required=True, doc="learning rate schedule multiplier of each weight")
        params = {"lrs": P("floats", required=True), **MOMENTS,
                  "wds": P("floats", required=True), "etas": etas,
                  **CLIP, "num_weights": P("int", 1, "number of weights updated")}
    else:
        params = {"lr": P("float", required=True), **MOMENTS, "wd": P("float", 0.0),
                  "eta": P("float", required=True, doc="learning rate schedule multiplier"),
                  **CLIP}
    name = f"_{'multi_' if multi else ''}{'mp_' if mp else ''}adamw_update"
    register_update(
        name, params, names, groups, count, states, classes,
        doc=f"AdamW step{' on num_weights weights' if multi else ''}: mean, var moving "
            "moments of g = clip(rescale_grad*grad); weight -= eta*(lr*mean/(sqrt(var) + "
            "epsilon) + wd*weight); skipped when rescale_grad is NaN, infinite or 0"
            + ("; updates the float32 master weight weight32 too." if mp else "."))


for _multi in (False, True):
    for _mp in (False, True):
        _register(_multi, _mp)
