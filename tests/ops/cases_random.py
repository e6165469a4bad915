"""Registry cases of the samplers and densities (ops/sampling*.py, ops/random_pdf.py).

A sampler's draws are random, so each case makes them certain: degenerate parameters (a
uniform on [2, 2], a Poisson of mean 0, one-hot multinomial rows) or a property every draw
has (a gamma draw is >= 0; a sorted shuffle is the sorted input). Densities are compared with
float64 formulas written here from the textbook definitions (math.lgamma), and their
gradients are checked by central differences."""
from __future__ import annotations

import math

import numpy as np

import symgraph as sg

from .case import Case, uniform

S = sg.sym
x, mu, sig = S.var("x"), S.var("mu"), S.var("sig")
LG = np.vectorize(math.lgamma)


def _const(value: float, shape: tuple) -> callable:
    return lambda **_: np.full(shape, value)


CASES = [
    Case("_random_uniform", lambda: S._random_uniform(low=2.0, high=2.0, shape=(2, 3)), {},
         _const(2.0, (2, 3)), grad=False),
    Case("_random_normal", lambda: S._random_normal(loc=-1.5, scale=0.0, shape=(4,)), {},
         _const(-1.5, (4,)), grad=False),
    Case("_random_gamma", lambda: S._random_gamma(alpha=0.5, beta=2.0, shape=(50,)) >= 0, {},
         _const(1.0, (50,)), grad=False),
    Case("_random_exponential", lambda: S._random_exponential(lam=3.0, shape=(50,)) >= 0, {},
         _const(1.0, (50,)), grad=False),
    Case("_random_poisson", lambda: S._random_poisson(lam=0.0, shape=(3,)), {},
         _const(0.0, (3,)), grad=False),
    Case("_random_negative_binomial",
         lambda: S._random_negative_binomial(k=3, p=1.0, shape=(3,)), {}, _const(0.0, (3,)),
         grad=False),
    Case("_random_generalized_negative_binomial",
         lambda: S._random_generalized_negative_binomial(mu=0.0, alpha=0.5, shape=(3,)), {},
         _const(0.0, (3,)), grad=False),
    Case("_random_randint", lambda: S._random_randint(low=7, high=8, shape=(2, 2)), {},
         _const(7.0, (2, 2)), grad=False),
    Case("_random_uniform_like", lambda: S._random_uniform_like(x, low=1.0, high=1.0),
         {"x": uniform(2, 3)}, lambda x: np.ones_like(x), grad=False),
    Case("_random_normal_like", lambda: S._random_normal_like(x, loc=4.0, scale=0.0),
         {"x": uniform(3)}, lambda x: np.full_like(x, 4.0), grad=False),
    Case("_random_gamma_like", lambda: S._random_gamma_like(x) > 0,
         {"x": uniform(30)}, lambda x: np.ones_like(x), grad=False),
    Case("_random_exponential_like", lambda: S._random_exponential_like(x) >= 0,
         {"x": uniform(30)}, lambda x: np.ones_like(x), grad=False),
    Case("_random_poisson_like", lambda: S._random_poisson_like(x, lam=0.0),
         {"x": uniform(4)}, lambda x: np.zeros_like(x), grad=False),
    Case("_random_negative_binomial_like", lambda: S._random_negative_binomial_like(x, p=1.0),
         {"x": uniform(4)}, lambda x: np.zeros_like(x), grad=False),
    Case("_random_generalized_negative_binomial_like",
         lambda: S._random_generalized_negative_binomial_like(x, mu=0.0),
         {"x": uniform(4)}, lambda x: np.zeros_like(x), grad=False),
    Case("_sample_uniform", lambda: S._sample_uniform(mu, mu, shape=(3,)),
         {"mu": uniform(2)}, lambda mu: np.repeat(mu[:, None], 3, axis=1), grad=False),
    Case("_sample_normal", lambda: S._sample_normal(mu, sig * 0.0, shape=(2,)),
         {"mu": uniform(3), "sig": uniform(3)}, lambda mu, sig: np.repeat(mu[:, None], 2, 1),
         grad=False),
    Case("_sample_gamma", lambda: S._sample_gamma(mu, sig, shape=(5,)) > 0,
         {"mu": uniform(2, low=0.5, high=2), "sig": uniform(2, low=0.5, high=2)},
         lambda mu, sig: np.ones((2, 5)), grad=False),
    Case("_sample_exponential", lambda: S._sample_exponential(mu, shape=(5,)) >= 0,
         {"mu": uniform(2, low=0.5, high=2)}, lambda mu: np.ones((2, 5)), grad=False),
    Case("_sample_poisson", lambda: S._sample_poisson(mu * 0.0, shape=(2,)),
         {"mu": uniform(3)}, lambda mu: np.zeros((3, 2)), grad=False),
    Case("_sample_negative_binomial",
         lambda: S._sample_negative_binomial(mu, sig * 0.0 + 1.0, shape=(2,)),
         {"mu": uniform(3, low=1, high=4), "sig": uniform(3)}, lambda mu, sig: np.zeros((3, 2)),
         grad=False),
    Case("_sample_generalized_negative_binomial",
         lambda: S._sample_generalized_negative_binomial(mu * 0.0, sig, shape=(2,)),
         {"mu": uniform(3), "sig": uniform(3, low=0.1, high=1)},
         lambda mu, sig: np.zeros((3, 2)), grad=False),
    Case("_sample_multinomial", lambda: S._sample_multinomial(x, shape=(4,)),
         {"x": lambda rng: np.eye(3)[[2, 0]]}, lambda x: np.array([[2] * 4, [0] * 4]),
         grad=False),
    Case("_shuffle", lambda: S.sort(S._shuffle(x), axis=0), {"x": uniform(6, 2)},
         lambda x: np.sort(x, axis=0), grad=False),
    # range_max distinct classes out of range_max: each row is every class once
    Case("_sample_unique_zipfian",
         lambda: S.sort(S._sample_unique_zipfian(range_max=5, shape=(2, 5))[0], axis=1), {},
         lambda **_: np.tile(np.arange(5), (2, 1)), grad=False),
]

_POS = {"low": 0.5, "high": 2.0}
# law: (parameter input generators, float64 log-density of (x, *params) from the textbook)
PDF_REFS = {
    "uniform": ({"x": uniform(2, 3, low=0.2, high=0.8), "lo": uniform(2, low=-1, high=0),
                 "hi": uniform(2, low=1, high=2)},
                lambda x, lo, hi: -np.log(hi - lo)[:, None] + 0 * x),
    "normal": ({"x": uniform(2, 3), "m": uniform(2), "s": uniform(2, **_POS)},
               lambda x, m, s: (-0.5 * ((x - m[:, None]) / s[:, None]) ** 2
                                - np.log(s[:, None] * math.sqrt(2 * math.pi)))),
    "gamma": ({"x": uniform(2, 3, **_POS), "a": uniform(2, **_POS), "b": uniform(2, **_POS)},
              lambda x, a, b: (a[:, None] * np.log(b[:, None]) + (a[:, None] - 1) * np.log(x)
                               - b[:, None] * x - LG(a)[:, None])),
    "exponential": ({"x": uniform(2, 3, **_POS), "lam": uniform(2, **_POS)},
                    lambda x, lam: np.log(lam[:, None]) - lam[:, None] * x),
    "poisson": ({"x": lambda rng: rng.integers(0, 5, (2, 3)).astype(float),
                 "lam": uniform(2, **_POS)},
                lambda x, lam: x * np.log(lam[:, None]) - lam[:, None] - LG(x + 1)),
    "negative_binomial": (
        {"x": lambda rng: rng.integers(0, 5, (2, 3)).astype(float), "k": uniform(2, low=1, high=3),
         "p": uniform(2, low=0.2, high=0.8)},
        lambda x, k, p: (LG(x + k[:, None]) - LG(x + 1) - LG(k)[:, None]
                         + k[:, None] * np.log(p[:, None]) + x * np.log(1 - p[:, None]))),
    "generalized_negative_binomial": (
        {"x": lambda rng: rng.integers(0, 5, (2, 3)).astype(float), "m": uniform(2, **_POS),
         "a": uniform(2, low=0.2, high=1.0)},
        lambda x, m, a: PDF_REFS["negative_binomial"][1](x, 1 / a, 1 / (1 + a * m))),
}


def _pdf_case(law: str, is_log: bool) -> Case:
    gens, ref = PDF_REFS[law]
    names = list(gens)
    discrete = law in ("poisson", "negative_binomial", "generalized_negative_binomial")
    op = f"_random_pdf_{law}"
    return Case(op, lambda: getattr(S, op)(*[S.var(n) for n in names], is_log=is_log),
                gens, lambda **v: ref(*[v[n] for n in names]) if is_log
                else np.exp(ref(*[v[n] for n in names])),
                grad_nodes=names[1:] if discrete else None, id=f"{op}-log{int(is_log)}")


def _dirichlet_ref(x: np.ndarray, a: np.ndarray, is_log: bool) -> np.ndarray:
    a = a[:, None, :]
    logp = ((a - 1) * np.log(x)).sum(-1) + LG(a.sum(-1)) - LG(a).sum(-1)
    return logp if is_log else np.exp(logp)


def _simplex(rng: np.random.Generator) -> np.ndarray:
    v = rng.uniform(0.5, 2.0, (2, 3, 4))
    return v / v.sum(-1, keepdims=True)


CASES += [_pdf_case(law, is_log) for law in PDF_REFS for is_log in (False, True)]
CASES += [Case("_random_pdf_dirichlet",
               lambda is_log=is_log: S._random_pdf_dirichlet(x, S.var("a"), is_log=is_log),
               {"x": _simplex, "a": uniform(2, 4, low=0.5, high=3)},
               lambda x, a, is_log=is_log: _dirichlet_ref(x, a, is_log),
               grad_nodes=["a"], id=f"_random_pdf_dirichlet-log{int(is_log)}")
          for is_log in (False, True)]
