"""The probability laws of the samplers (``ops/sampling.py``) and densities
(``ops/random_pdf.py``): MXNet's parameter names and defaults, the numpy draw, and the range
each parameter must lie in (checked on attributes before anything runs, on parameter arrays
when they are read).

MXNet's conventions, kept: ``gamma``'s ``beta`` is a scale when sampling but a rate in
``_random_pdf_gamma``; ``exponential``'s ``lam`` is a rate; ``negative_binomial(k, p)`` counts
failures before the k-th success of probability p; ``generalized_negative_binomial(mu, alpha)``
has mean mu and variance mu + alpha * mu**2 (a Poisson of a gamma-distributed rate).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping

import numpy as np

from ...core.base import AttrError

Check = tuple[Callable[[np.ndarray], np.ndarray], str]


def _gnb(g: np.random.Generator, mu: np.ndarray, alpha: np.ndarray, shape: tuple) -> np.ndarray:
    """Poisson(Gamma(1/alpha, alpha*mu)); alpha = 0 is Poisson(mu) (the gamma's limit)."""
    mu, alpha = np.broadcast_to(mu, shape), np.broadcast_to(alpha, shape)
    safe = np.where(alpha > 0, alpha, 1.0)
    rate = np.where(alpha > 0, g.gamma(1.0 / safe, safe * mu + 0.0, shape), mu)  # -0.0 -> 0.0
    return g.poisson(rate, shape)


@dataclass(frozen=True)
class Law:
    """One law: parameters ``(name, attribute kind, default, description)``, ``draw(rng, *params, shape)``,
    the output dtype when none is given, checks per parameter and a phrase for docs."""

    params: tuple[tuple[str, str, object, str], ...]  # (name, kind, default, description)
    draw: Callable[..., np.ndarray]
    about: str
    checks: Mapping[str, Check]
    dtype: str = "float32"


_POSITIVE: Check = (lambda v: v > 0, "must be > 0")
_NON_NEGATIVE: Check = (lambda v: v >= 0, "must be >= 0")

LAWS: dict[str, Law] = {
    "uniform": Law((("low", "float", 0.0, "lower bound"), ("high", "float", 1.0, "upper bound")),
                   lambda g, lo, hi, s: g.uniform(lo, hi, s), "uniform on [low, high)", {}),
    "normal": Law((("loc", "float", 0.0, "mean"), ("scale", "float", 1.0, "standard deviation")),
                  lambda g, m, sd, s: g.normal(m, np.add(sd, 0.0), s),  # -0.0 -> 0.0
                  "mean loc, standard deviation scale",
                  {"scale": _NON_NEGATIVE}),
    "gamma": Law((("alpha", "float", 1.0, "shape"), ("beta", "float", 1.0, "scale")),
                 lambda g, k, th, s: g.gamma(k, th, s), "shape alpha, scale beta",
                 {"alpha": _POSITIVE, "beta": _POSITIVE}),
    "exponential": Law((("lam", "float", 1.0, "rate"),), lambda g, lam, s: g.exponential(1.0 / lam, s),
                       "rate lam", {"lam": _POSITIVE}),
    "poisson": Law((("lam", "float", 1.0, "mean"),), lambda g, lam, s: g.poisson(lam, s),
                   "mean lam", {"lam": _NON_NEGATIVE}),
    "negative_binomial": Law((("k", "int", 1, "successes"), ("p", "float", 1.0, "success probability")),
                             lambda g, k, p, s: g.negative_binomial(k, p, s),
                             "failures before the k-th success of probability p",
                             {"k": _POSITIVE, "p": (lambda v: (v > 0) & (v <= 1),
                                                    "must lie in (0, 1]")}),
    "generalized_negative_binomial": Law(
        (("mu", "float", 1.0, "mean"), ("alpha", "float", 1.0, "dispersion")), _gnb,
        "mean mu, variance mu + alpha * mu**2", {"mu": _NON_NEGATIVE, "alpha": _NON_NEGATIVE}),
    "randint": Law((("low", "int", None, "lower bound"), ("high", "int", None, "upper bound (excluded)")),
                   lambda g, lo, hi, s: g.integers(lo, hi, s), "integers in [low, high)",
                   {}, dtype="int32"),
}
# The parameter names of the ``_sample_<law>`` ops' array inputs (MXNet's, not the attributes').
SAMPLE_INPUTS: dict[str, tuple[str, ...]] = {
    "uniform": ("low", "high"), "normal": ("mu", "sigma"), "gamma": ("alpha", "beta"),
    "exponential": ("lam",), "poisson": ("lam",), "negative_binomial": ("k", "p"),
    "generalized_negative_binomial": ("mu", "alpha")}


def check_params(law: str, values: Mapping[str, object], names: tuple[str, ...] = ()) -> None:
    """AttrError naming the first parameter out of its range (``names``: the caller's names of
    the parameters, in the law's order, when they differ from the attributes')."""
    spec = LAWS[law]
    names = names or tuple(k for k, *_ in spec.params)
    for (key, *_), shown in zip(spec.params, names):
        value = np.asarray(values[shown])
        check = spec.checks.get(key)
        if check is not None and not np.all(check[0](value)):
            raise AttrError(f"{law}: {shown}={_first(value, ~check[0](value))!r} {check[1]}")
    if law in ("uniform", "randint"):
        lo, hi = (np.asarray(values[n]) for n in names)
        ok = lo < hi if law == "randint" else lo <= hi
        if not np.all(ok):
            lo, hi = np.broadcast_arrays(lo, hi)
            raise AttrError(f"{law}: {names[0]}={_first(lo, ~ok)!r} must be "
                            f"{'less than' if law == 'randint' else 'at most'} "
                            f"{names[1]}={_first(hi, ~ok)!r}")


def _first(value: np.ndarray, bad: np.ndarray) -> object:
    """The first offending value (a Python number), for error messages."""
    return np.broadcast_to(value, np.shape(bad))[bad].ravel()[0].item()

