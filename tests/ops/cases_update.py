"""Registry cases of the optimizer update ops: the new weight(s) against the float64 formulas of
``update_ref`` (states are aux inputs; their updates are checked in test_update_ops.py)."""
from __future__ import annotations

import numpy as np

import symgraph as sg

from . import update_ref as R
from .case import Case, uniform

S = sg.sym
POS = uniform(4, 3, low=0.5, high=1.5)

# op: (reference, states (name, generator), attributes)
SINGLE = {
    "sgd_update": (R.sgd, (), {"lr": 0.1, "wd": 0.01, "clip_gradient": 0.5}),
    "sgd_mom_update": (R.sgd_mom, ("mom",), {"lr": 0.1, "momentum": 0.9, "wd": 0.01}),
    "nag_mom_update": (R.nag_mom, ("mom",), {"lr": 0.1, "momentum": 0.9, "rescale_grad": 0.5}),
    "adam_update": (R.adam, ("mean", "var"), {"lr": 0.01, "wd": 0.1, "clip_gradient": 0.3}),
    "rmsprop_update": (R.rmsprop, ("n",), {"lr": 0.01, "clip_weights": 0.5}),
    "rmspropalex_update": (R.rmspropalex, ("n", "g", "delta"), {"lr": 0.01, "wd": 0.1}),
    "ftrl_update": (R.ftrl, ("z", "n"), {"lr": 0.1, "lamda1": 0.2, "wd": 0.1}),
    "ftml_update": (R.ftml, ("d", "v", "z"), {"lr": 0.1, "t": 3, "clip_grad": 0.4}),
    "signsgd_update": (R.signsgd, (), {"lr": 0.1, "wd": 0.1}),
    "signum_update": (R.signum, ("mom",), {"lr": 0.1, "momentum": 0.9, "wd_lh": 0.01}),
    "lamb_update_phase1": (R.lamb1, ("mean", "var"), {"t": 2, "wd": 0.1}),
    "lamb_update_phase2": (R.lamb2, ("r1", "r2"), {"lr": 0.1, "lower_bound": 0.5}),
}
MP = {"mp_sgd_update": ("sgd_update", ("weight32",)),
      "mp_sgd_mom_update": ("sgd_mom_update", ("mom", "weight32")),
      "mp_nag_mom_update": ("nag_mom_update", ("mom", "weight32"))}
ARGS = {"r1", "r2"}  # inputs that are read, not written (arguments, not aux states)


def _state(name: str):
    if name in ("r1", "r2"):
        return uniform(1, low=0.5, high=2.0)
    if name == "g":
        return uniform(4, 3, low=-0.3, high=0.3)
    return POS if name in ("n", "var", "v", "d") else uniform(4, 3)


def _single(op: str, ref, states: tuple, attrs: dict) -> Case:
    second = "g" if op == "lamb_update_phase2" else "grad"
    names = ("weight", second) + states

    def build():
        return getattr(S, op)(*[S.var(n) for n in names], **attrs)

    def reference(**xs):
        return ref(*[xs[n] for n in names], **attrs)[0]
    gens = {n: _state(n) for n in states}
    inputs = {"weight": uniform(4, 3), second: uniform(4, 3),
              **{n: g for n, g in gens.items() if n in ARGS}}
    return Case(op, build, inputs, reference, grad=False,
                aux={n: g for n, g in gens.items() if n not in ARGS})


def _mp(op: str, base: str, states: tuple) -> Case:
    ref, _, attrs = SINGLE[base]
    names = ("weight", "grad") + states

    def build():
        return getattr(S, op)(*[S.var(n) for n in names], **attrs)

    def reference(**xs):
        return R.master(ref)(*[xs[n] for n in names], **attrs)[0]
    return Case(op, build, {"weight": uniform(4, 3), "grad": uniform(4, 3)}, reference,
                grad=False, aux={n: _state(n) for n in states})


def _multi(op: str, mom: bool, mp: bool, preloaded: bool) -> Case:
    per = ("weight", "grad") + (("mom",) if mom else ()) + (("weight32",) if mp else ())
    shapes = [(3,), (2, 2)]
    names = [f"{p}{i}" for i in range(2) for p in per] + (["lrs", "wds"] if preloaded else [])
    lrs, wds = (0.1, 0.2), (0.01, 0.0)
    attrs = {"num_weights": 2, "rescale_grad": 0.5, **({"momentum": 0.9} if mom else {}),
             **({} if preloaded else {"lrs": lrs, "wds": wds})}

    def build():
        return getattr(S, op)(*[S.var(n) for n in names], **attrs)

    def reference(**xs):
        out = []
        for i in range(2):
            w = xs[f"weight32{i}"] if mp else xs[f"weight{i}"]
            lr = xs["lrs"][i] if preloaded else lrs[i]
            wd = xs["wds"][i] if preloaded else wds[i]
            args = (w, xs[f"grad{i}"]) + ((xs[f"mom{i}"],) if mom else ())
            ref = R.sgd_mom if mom else R.sgd
            out.append(ref(*args, lr=lr, wd=wd, rescale_grad=0.5, momentum=0.9)[0])
        return out
    inputs = {f"{p}{i}": uniform(*shapes[i]) for i in range(2) for p in ("weight", "grad")}
    if preloaded:
        inputs.update(lrs=uniform(2, low=0.05, high=0.2), wds=uniform(2, low=0.0, high=0.1))
    aux = {f"{p}{i}": uniform(*shapes[i]) for i in range(2) for p in per[2:]}
    return Case(op, build, inputs, reference, grad=False, aux=aux)


def _lars_ref(lrs, w2, g2, wds):
    w, g = np.sqrt(w2), np.sqrt(g2) * 2.0
    return np.where((w > 0) & (g2 > 0), lrs * 0.5 * w / (g + wds * w + 1e-3), lrs)


CASES = [_single(op, *row) for op, row in SINGLE.items()]
CASES += [_mp(op, base, states) for op, (base, states) in MP.items()]
CASES += [_multi(f"{'preloaded_' if p else ''}multi_{'mp_' if mp else ''}sgd_"
                 f"{'mom_' if mom else ''}update", mom, mp, p)
          for p in (False, True) for mp in (False, True) for mom in (False, True)]
CASES += [
    Case("mp_lamb_update_phase1",
         lambda: S.mp_lamb_update_phase1(*[S.var(n) for n in ("weight", "grad", "mean", "var",
                                                              "weight32")], t=2, wd=0.1),
         {"weight": uniform(4, 3), "grad": uniform(4, 3), "weight32": uniform(4, 3)},
         lambda weight, grad, mean, var, weight32: R.lamb1(weight32, grad, mean, var, t=2,
                                                            wd=0.1)[0],
         grad=False, aux={"mean": uniform(4, 3), "var": POS}),
    Case("mp_lamb_update_phase2",
         lambda: S.mp_lamb_update_phase2(*[S.var(n) for n in ("weight", "g", "r1", "r2",
                                                              "weight32")], lr=0.1),
         {"weight": uniform(4, 3), "g": uniform(4, 3), "r1": uniform(1, low=0.5, high=2.0),
          "r2": uniform(1, low=0.5, high=2.0)},
         lambda weight, g, r1, r2, weight32: R.lamb2(weight32, g, r1, r2, lr=0.1)[0],
         grad=False, aux={"weight32": uniform(4, 3)}),
    Case("multi_sum_sq", lambda: S.multi_sum_sq(S.var("a"), S.var("b"), num_arrays=2),
         {"a": uniform(3, 4), "b": uniform(5)},
         lambda a, b: np.array([np.sum(a * a), np.sum(b * b)]), grad=False),
    Case("all_finite", lambda: S.all_finite(S.var("a")), {"a": uniform(3, 4)},
         lambda a: np.array([1.0]), grad=False),
    Case("multi_all_finite", lambda: S.multi_all_finite(S.var("a"), S.var("b"), num_arrays=2),
         {"a": uniform(3, 4), "b": uniform(2)}, lambda a, b: np.array([1.0]), grad=False),
    Case("multi_lars", lambda: S.multi_lars(*[S.var(n) for n in ("lrs", "w2", "g2", "wds")],
                                            eta=0.5, eps=1e-3, rescale_grad=2.0),
         {"lrs": uniform(4, low=0.1, high=1.0), "w2": uniform(4, low=0.0, high=2.0),
          "g2": uniform(4, low=0.0, high=2.0), "wds": uniform(4, low=0.0, high=0.1)},
         _lars_ref, grad=False),
    Case("reset_arrays", lambda: S.reset_arrays(S.var("a"), S.var("b"), num_arrays=2), {},
         lambda a, b: [np.zeros_like(a), np.zeros_like(b)], grad=False,
         aux={"a": uniform(3), "b": uniform(2, 2)}),
]
