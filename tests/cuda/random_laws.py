"""The samplers' laws as the GPU tests check them (host runs of the kernels in
``test_random_kernels_host.py``, device runs in ``test_random_gpu.py``): a symbol drawing ``n``
values, the law's mean and variance, and its probabilities of small values for discrete laws,
all written here from the textbook definitions in float64.

Bounds (:func:`check_law`) are six standard errors wide, the error of the variance estimated
from the sample's fourth moment: with fixed keys a draw cannot flake, yet a wrong
parameterisation (a scale read as a rate, a shifted count) misses them by far.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Optional

import numpy as np

import symgraph as sg

S = sg.sym


def poisson_pmf(lam: float, k: int) -> float:
    return math.exp(k * math.log(lam) - lam - math.lgamma(k + 1)) if lam > 0 else float(k == 0)


def nb_pmf(r: float, p: float, k: int) -> float:
    """P(k failures before the r-th success of probability p)."""
    return math.exp(math.lgamma(k + r) - math.lgamma(k + 1) - math.lgamma(r)
                    + r * math.log(p) + k * math.log1p(-p))


@dataclass(frozen=True)
class LawCase:
    """``build(n, dtype)``: a symbol of ``n`` draws in output dtype ``dtype``."""

    id: str
    build: Callable[[int, str], Any]
    mean: float
    var: float
    pmf: Optional[Callable[[int], float]] = None  # discrete laws: P(X = k)
    values: tuple[int, ...] = tuple(range(8))  # the k whose frequencies are checked
    integer: bool = False


def _attr(law: str, **params: Any) -> Callable[[int, str], Any]:
    return lambda n, dtype: getattr(S, f"_random_{law}")(shape=(n,), dtype=dtype, **params)


LAW_CASES = [
    LawCase("uniform", _attr("uniform", low=-1.0, high=3.0), 1.0, 16 / 12),
    LawCase("normal", _attr("normal", loc=2.0, scale=0.5), 2.0, 0.25),
    LawCase("gamma", _attr("gamma", alpha=3.0, beta=2.0), 6.0, 12.0),  # beta: scale
    LawCase("gamma-small-alpha", _attr("gamma", alpha=0.3, beta=1.5), 0.45, 0.675),
    LawCase("exponential", _attr("exponential", lam=4.0), 0.25, 1 / 16),  # lam: rate
    LawCase("poisson", _attr("poisson", lam=3.5), 3.5, 3.5, lambda k: poisson_pmf(3.5, k),
            integer=True),
    LawCase("poisson-ptrs", _attr("poisson", lam=40.0), 40.0, 40.0,
            lambda k: poisson_pmf(40.0, k), tuple(range(34, 47)), True),  # around the mode
    LawCase("poisson-large", _attr("poisson", lam=2.5e4), 2.5e4, 2.5e4, integer=True),
    LawCase("negative_binomial", _attr("negative_binomial", k=4, p=0.4), 6.0, 15.0,
            lambda k: nb_pmf(4, 0.4, k), integer=True),
    LawCase("generalized_negative_binomial",
            _attr("generalized_negative_binomial", mu=2.0, alpha=0.5), 2.0, 4.0,
            lambda k: nb_pmf(2.0, 0.5, k), integer=True),  # k = 1/alpha, p = 1/(1 + alpha mu)
    LawCase("gnb-poisson-limit", _attr("generalized_negative_binomial", mu=2.0, alpha=0.0),
            2.0, 2.0, lambda k: poisson_pmf(2.0, k), integer=True),
    LawCase("randint", lambda n, dtype: S._random_randint(low=-3, high=5, shape=(n,),
                                                          dtype="int32"),
            0.5, (64 - 1) / 12, lambda k: 1 / 8 if -3 <= k < 5 else 0.0, tuple(range(-4, 6)),
            True),
]


def check_law(x: np.ndarray, case: LawCase, what: str) -> None:
    """Mean, variance (and the frequencies of small values of a discrete law) of the draws
    ``x`` within six standard errors of the law's."""
    x = np.asarray(x, np.float64).ravel()
    n = x.size
    assert np.all(np.isfinite(x)), f"{what}: non-finite draws {x[~np.isfinite(x)][:5]}"
    if case.integer:
        assert np.array_equal(x, np.round(x)), f"{what}: non-integer draws"
    assert abs(x.mean() - case.mean) < 6 * math.sqrt(case.var / n), \
        f"{what}: mean {x.mean():.6g}, law's {case.mean:.6g}"
    m4 = float(((x - x.mean()) ** 4).mean())
    se_var = math.sqrt(max(m4 - x.var() ** 2, 0.0) / n)
    assert abs(x.var() - case.var) < 6 * se_var + 1e-12, \
        f"{what}: variance {x.var():.6g}, law's {case.var:.6g} (standard error {se_var:.3g})"
    if case.pmf is None:
        return
    for k in case.values:
        p, freq = case.pmf(k), float((x == k).mean())
        assert abs(freq - p) < 6 * math.sqrt(p * (1 - p) / n) + 1e-12, \
            f"{what}: P(X = {k}) {freq:.5f}, law's {p:.5f}"
