"""Registry cases of the AdamW update ops: the new weight(s) against a float64 formula written
here from MXNet's documentation (states are aux inputs; skipping and the state updates are
checked in tests/test_adamw.py)."""
from __future__ import annotations

import numpy as np

import symgraph as sg

from .case import Case, uniform

S = sg.sym._internal
POS = uniform(4, 3, low=0.5, high=1.5)
SCALE = uniform(1, low=0.5, high=2.0)


def adamw_ref(w, g, m, v, r, lr, eta, wd, beta1=0.9, beta2=0.999, epsilon=1e-8, clip=-1.0):
    """float64 AdamW: new (weight, mean, var)."""
    g = np.asarray(r).reshape(-1)[0] * g
    if clip >= 0:
        g = np.clip(g, -clip, clip)
    m = beta1 * m + (1 - beta1) * g
    v = beta2 * v + (1 - beta2) * g * g
    return w - eta * (lr * m / (np.sqrt(v) + epsilon) + wd * w), m, v


def _single(mp: bool) -> Case:
    names = ("weight", "grad", "mean", "var") + (("weight32",) if mp else ()) + ("rescale_grad",)
    attrs = {"lr": 0.01, "eta": 0.5, "wd": 0.1, "clip_gradient": 0.3, "beta1": 0.8}
    op = "_mp_adamw_update" if mp else "_adamw_update"

    def reference(**xs):
        w = xs["weight32"] if mp else xs["weight"]
        return adamw_ref(w, xs["grad"], xs["mean"], xs["var"], xs["rescale_grad"], 0.01, 0.5,
                         0.1, beta1=0.8, clip=0.3)[0]
    aux = {"mean": uniform(4, 3), "var": POS, **({"weight32": uniform(4, 3)} if mp else {})}
    return Case(op, lambda: getattr(S, op)(*[sg.sym.var(n) for n in names], **attrs),
                {"weight": uniform(4, 3), "grad": uniform(4, 3), "rescale_grad": SCALE},
                reference, grad=False, aux=aux)


def _multi(mp: bool) -> Case:
    per = ("weight", "grad", "mean", "var") + (("weight32",) if mp else ())
    shapes = [(3,), (2, 2)]
    names = [f"{p}{i}" for i in range(2) for p in per] + ["rescale_grad"]
    attrs = {"num_weights": 2, "lrs": (0.1, 0.02), "wds": (0.01, 0.0), "etas": (1.0, 0.5),
             "epsilon": 1e-6}
    op = "_multi_mp_adamw_update" if mp else "_multi_adamw_update"

    def reference(**xs):
        return [adamw_ref(xs[f"weight32{i}"] if mp else xs[f"weight{i}"], xs[f"grad{i}"],
                          xs[f"mean{i}"], xs[f"var{i}"], xs["rescale_grad"], attrs["lrs"][i],
                          attrs["etas"][i], attrs["wds"][i], epsilon=1e-6)[0] for i in range(2)]
    inputs = {f"{p}{i}": uniform(*shapes[i]) for i in range(2) for p in ("weight", "grad")}
    inputs["rescale_grad"] = SCALE
    aux = {f"{p}{i}": uniform(*shapes[i], low=0.5, high=1.5) if p == "var"
           else uniform(*shapes[i]) for i in range(2) for p in per[2:]}
    return Case(op, lambda: getattr(S, op)(*[sg.sym.var(n) for n in names], **attrs), inputs,
                reference, grad=False, aux=aux)


CASES = [_single(False), _single(True), _multi(False), _multi(True)]
