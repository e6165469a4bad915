"""Statistical checks of random generators (``mx.test_utils``): a chi-square goodness-of-fit
test over buckets, repeated (``verify_generator``), and checks of the sample mean and
variance. scipy is imported only by the chi-square test.

Example::

    >>> import numpy as np, scipy.stats as ss
    >>> from symgraph.interop.test_utils import gen_buckets_probs_with_ppf, verify_generator
    >>> buckets, probs = gen_buckets_probs_with_ppf(lambda p: ss.norm.ppf(p), 5)
    >>> _ = verify_generator(lambda n: np.random.normal(size=n), buckets, probs, 10000)
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

Generator = Callable[[int], Any]


def gen_buckets_probs_with_ppf(ppf: Callable[[float], float],
                               nbuckets: int) -> tuple[list[tuple[float, float]], list[float]]:
    """``nbuckets`` equally likely buckets ``(ppf(i/n), ppf((i+1)/n))`` and their
    probabilities, from a quantile function."""
    if nbuckets <= 0:
        raise ValueError(f"gen_buckets_probs_with_ppf: nbuckets={nbuckets} must be positive")
    return ([(ppf(i / nbuckets), ppf((i + 1) / nbuckets)) for i in range(nbuckets)],
            [1.0 / nbuckets] * nbuckets)


def mean_check(generator: Generator, mu: float, sigma: float, nsamples: int = 1000000) -> bool:
    """Whether the mean of ``nsamples`` draws lies within 3 standard errors of ``mu``."""
    mean = float(np.mean(np.asarray(generator(nsamples))))
    return abs(mean - mu) < 3 * sigma / np.sqrt(nsamples)


def var_check(generator: Generator, sigma: float, nsamples: int = 1000000) -> bool:
    """Whether the sample variance lies within 3 standard errors of ``sigma ** 2``."""
    var = float(np.var(np.asarray(generator(nsamples)), ddof=1))
    return abs(var - sigma ** 2) < 3 * np.sqrt(2 * sigma ** 4 / (nsamples - 1))


def _bucket_counts(samples: np.ndarray, buckets: Sequence[Any]) -> np.ndarray:
    """How many samples fall in each bucket: ``(low, high)`` ranges, or discrete values."""
    if isinstance(buckets[0], (list, tuple)):
        edges = np.asarray(buckets, np.float64)
        if np.any(edges[:, 0] > edges[:, 1]) or np.any(edges[1:, 0] < edges[:-1, 1]):
            raise ValueError(f"chi_square_check: buckets must be ascending and disjoint, "
                             f"got {buckets}")
        return np.array([np.count_nonzero((samples >= lo) & (samples < hi))
                         for lo, hi in edges])
    return np.array([np.count_nonzero(samples == b) for b in buckets])


def chi_square_check(generator: Generator, buckets: Sequence[Any], probs: Sequence[float],
                     nsamples: int = 1000000) -> tuple[float, np.ndarray, np.ndarray]:
    """Chi-square test that ``generator(nsamples)`` follows ``probs`` over ``buckets``;
    returns ``(p value, observed counts, expected counts)``. Expected counts are rescaled to
    the observed total (scipy requires equal sums; buckets need not cover the support)."""
    import scipy.stats as ss
    if len(probs) != len(buckets):
        raise ValueError(f"chi_square_check: {len(probs)} probs for {len(buckets)} buckets")
    samples = np.asarray(generator(nsamples)).reshape(-1)
    observed = _bucket_counts(samples, buckets)
    expected = nsamples * np.asarray(probs, np.float64)
    scaled = expected * observed.sum() / expected.sum()
    _, p = ss.chisquare(f_obs=observed, f_exp=scaled)
    return float(p), observed, expected


def verify_generator(generator: Generator, buckets: Sequence[Any], probs: Sequence[float],
                     nsamples: int = 1000000, nrepeat: int = 5, success_rate: float = 0.2,
                     alpha: float = 0.05) -> list[float]:
    """Run :func:`chi_square_check` ``nrepeat`` times; AssertionError unless at least
    ``success_rate`` of the runs have p > ``alpha``. Returns the p values."""
    runs = [chi_square_check(generator, buckets, probs, nsamples) for _ in range(nrepeat)]
    pvalues = [r[0] for r in runs]
    if sum(p > alpha for p in pvalues) < nrepeat * success_rate:
        raise AssertionError(f"generator fails the chi-square test: p={pvalues}, observed "
                             f"{[r[1].tolist() for r in runs]}, expected "
                             f"{runs[0][2].tolist()}; buckets={buckets}, probs={probs}")
    return pvalues
