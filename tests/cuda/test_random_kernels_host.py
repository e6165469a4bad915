"""The samplers' and densities' GPU kernels run on the CPU (``host_run``: one thread visits
every element in order, computing what the GPU computes): each law's draws against its mean,
variance and small-value probabilities (``random_laws``), per-row parameters, multinomial
frequencies and log-probabilities, shuffle's permutations, and the densities against their
float64 numpy reference. Equal keys repeat the draws and other keys change them, whatever the
launch geometry (one thread here, thousands on the device)."""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import symgraph as sg
from symgraph.core.registry import RunCtx, get_op

from .host_run import host_compiler, lowered, run_on_host
from .narrow import NARROW, assert_close
from .random_laws import LAW_CASES, LawCase, check_law

pytestmark = pytest.mark.skipif(host_compiler() is None, reason="g++ not on PATH")
S = sg.sym
N = 20_000
KEY = 0x0123456789ABCDEF


def _step(sym: Any, inputs: dict, dtypes: dict | None = None) -> tuple[Any, Any, list]:
    """(step, schedule, its input arrays) of ``sym``'s one sampler or density step."""
    exe = sym.simple_bind(sg.cpu(), type_dict=dtypes or {},
                          **{k: v.shape for k, v in inputs.items()})
    sch = exe._train.schedule
    (step,) = [st for st in sch.steps if get_op(st.node.op).train_dependent
               or st.node.op.startswith("_random_pdf")]
    names = sym.list_arguments()
    return step, sch, [inputs[names[s]] for s in step.inputs]  # slots: arguments in order


def _host(sym: Any, inputs: dict, tmp: Path, key: int = KEY,
          dtypes: dict | None = None) -> list[np.ndarray]:
    """The outputs of ``sym``'s one step, run by its lowered kernels on the host."""
    step, sch, xs = _step(sym, inputs, dtypes)
    return run_on_host(step, sch.shapes, sch.dtypes, xs, tmp, keys=[key])


@pytest.mark.parametrize("case", LAW_CASES, ids=lambda c: c.id)
def test_law_moments_on_host(case: LawCase, tmp_path: Path) -> None:
    (x,) = _host(case.build(N, "float32"), {}, tmp_path)
    check_law(x, case, case.id)


def test_equal_keys_repeat_the_draws(tmp_path: Path) -> None:
    sym = S._random_gamma(alpha=0.7, shape=(500,))
    a, b, c = (_host(sym, {}, tmp_path, key)[0] for key in (7, 7, 8))
    np.testing.assert_array_equal(a, b)
    assert np.mean(a == c) < 0.01


def _philox(ctr: list[int], key: list[int]) -> list[int]:
    """Philox-4x32-10 in Python (Salmon et al. 2011; Random123's constants)."""
    m = 0xFFFFFFFF
    for _ in range(10):
        p0, p1 = 0xD2511F53 * ctr[0], 0xCD9E8D57 * ctr[2]
        ctr = [(p1 >> 32) ^ ctr[1] ^ key[0], p1 & m, (p0 >> 32) ^ ctr[3] ^ key[1], p0 & m]
        key = [(key[0] + 0x9E3779B9) & m, (key[1] + 0xBB67AE85) & m]
    return ctr


def test_uniform_draws_are_philox_words(tmp_path: Path) -> None:
    """Element i's uniform is the top 24 bits of the first word of Philox(counter (i, 0,
    SALT, 0), key), scaled to [0, 1): checked against a Python Philox."""
    from symgraph.runtime.cuda.random_laws import SALT
    key = 0x1234567890ABCDEF
    (u,) = _host(S._random_uniform(shape=(5,)), {}, tmp_path, key=key)
    want = [(_philox([i, 0, SALT, 0], [key & 0xFFFFFFFF, key >> 32])[0] >> 8) / 2 ** 24
            for i in range(5)]
    np.testing.assert_array_equal(u, np.array(want, np.float32))


def test_sample_per_row_parameters(tmp_path: Path) -> None:
    """_sample_gamma / _sample_poisson: row r of the output follows the law of parameter
    element r (alpha 0.5 and 5, scale 2; lam 1 and 30)."""
    alpha, beta = np.array([0.5, 5.0], np.float32), np.array([2.0, 2.0], np.float32)
    (g,) = _host(S._sample_gamma(S.var("a"), S.var("b"), shape=(N // 2,)),
                 {"a": alpha, "b": beta}, tmp_path)
    lam = np.array([1.0, 30.0], np.float32)
    (p,) = _host(S._sample_poisson(S.var("lam"), shape=(N // 2,)), {"lam": lam}, tmp_path)
    for r in range(2):
        mean, var = alpha[r] * beta[r], alpha[r] * beta[r] ** 2
        assert abs(g[r].mean() - mean) < 6 * math.sqrt(var / g[r].size), (r, g[r].mean())
        assert abs(p[r].mean() - lam[r]) < 6 * math.sqrt(lam[r] / p[r].size), (r, p[r].mean())


def test_sample_negative_binomial_truncates_k(tmp_path: Path) -> None:
    """k is a count: 2.9 reads as 2 (the numpy reference's astype(int64)), mean k(1-p)/p."""
    k, q = np.array([2.9], np.float32), np.array([0.5], np.float32)
    (x,) = _host(S._sample_negative_binomial(S.var("k"), S.var("p"), shape=(N,)),
                 {"k": k, "p": q}, tmp_path)
    assert abs(x.mean() - 2.0) < 6 * math.sqrt(4.0 / N), x.mean()


def test_multinomial_frequencies_and_log_prob(tmp_path: Path) -> None:
    """Unnormalised rows with zero categories: draws follow p / sum p, never a zero category;
    get_prob gives log p of the drawn category (the given value, as MXNet)."""
    p = np.array([[0.4, 1.0, 0.6, 0.0], [0.0, 0.0, 2.0, 0.0]], np.float32)
    idx, logp = _host(S._sample_multinomial(S.var("p"), shape=(N // 2,), get_prob=True),
                      {"p": p}, tmp_path)
    assert idx.dtype == np.int32 and idx.shape == (2, N // 2)
    for r in range(2):
        want = p[r] / p[r].sum()
        freq = np.bincount(idx[r], minlength=4) / idx[r].size
        assert np.all(np.abs(freq - want) <= 6 * np.sqrt(want * (1 - want) / idx[r].size)), \
            (r, freq, want)
        np.testing.assert_allclose(logp[r], np.log(p[r][idx[r]]), rtol=1e-6)


def test_shuffle_permutes_rows(tmp_path: Path) -> None:
    """Rows move whole and every key gives a permutation; on 3000 rows it is no identity and
    moves an element n/3 places on average, as a uniform permutation does (|i - j| of two
    uniform places: standard deviation n/sqrt(18))."""
    x = np.arange(10, dtype=np.float32).reshape(5, 2)
    outs = [_host(S._shuffle(S.var("x")), {"x": x}, tmp_path, key=k)[0] for k in (1, 2)]
    for y in outs:
        assert sorted(map(tuple, y.tolist())) == sorted(map(tuple, x.tolist()))
    assert not np.array_equal(outs[0], outs[1])
    n = 3000
    big = np.arange(n, dtype=np.int32)
    (y,) = _host(S._shuffle(S.var("x")), {"x": big}, tmp_path, dtypes={"x": np.int32})
    assert sorted(y.tolist()) == big.tolist() and not np.array_equal(y, big)
    assert abs(np.abs(y - big).mean() - n / 3) < 6 * n / math.sqrt(18 * n)


# law: (inputs in the op's order, each (shape, low, high); integer samples for discrete laws)
PDF_INPUTS = {
    "uniform": [((2, 3), -0.5, 1.5), ((2,), -1.0, 0.0), ((2,), 0.5, 1.0)],
    "normal": [((2, 3), -2.0, 2.0), ((2,), -1.0, 1.0), ((2,), 0.5, 2.0)],
    "gamma": [((2, 3), 0.2, 3.0), ((2,), 0.5, 3.0), ((2,), 0.5, 2.0)],
    "exponential": [((2, 3), 0.0, 3.0), ((2,), 0.5, 2.0)],
    "poisson": [((2, 3), 0, 9), ((2,), 0.5, 5.0)],
    "negative_binomial": [((2, 3), 0, 9), ((2,), 1.0, 4.0), ((2,), 0.2, 0.8)],
    "generalized_negative_binomial": [((2, 3), 0, 9), ((2,), 0.5, 3.0), ((2,), 0.2, 1.0)],
    "dirichlet": [((2, 3, 4), 0.1, 1.0), ((2, 4), 0.5, 3.0)],
}
PDF_CASES = [(law, is_log, dtype) for law in PDF_INPUTS for is_log in (False, True)
             for dtype in ("float32", "float16")]


def _pdf_inputs(law: str, rng: np.random.Generator) -> list[np.ndarray]:
    out = []
    for k, (shape, lo, hi) in enumerate(PDF_INPUTS[law]):
        discrete = k == 0 and isinstance(lo, int)
        out.append(rng.integers(lo, hi, shape).astype(np.float32) if discrete
                   else rng.uniform(lo, hi, shape).astype(np.float32))
    if law == "dirichlet":
        out[0] /= out[0].sum(-1, keepdims=True)
    return out


@pytest.mark.parametrize("law,is_log,dtype", PDF_CASES, ids=[f"{c[0]}-log{int(c[1])}-{c[2]}"
                                                               for c in PDF_CASES])
def test_density_kernel_matches_reference(law: str, is_log: bool, dtype: str,
                                          tmp_path: Path) -> None:
    """One kernel per density (uniform: samples outside [low, high] give 0 / -inf), against
    the float64 reference on the same dtype-rounded values."""
    xs = [x.astype(NARROW.get(dtype, dtype)) for x in _pdf_inputs(law, np.random.default_rng(3))]
    names = [f"in{k}" for k in range(len(xs))]
    sym = getattr(S, f"_random_pdf_{law}")(*[S.var(n) for n in names], is_log=is_log)
    inputs, dtypes = dict(zip(names, xs)), {n: xs[0].dtype for n in names}
    step, sch, _ = _step(sym, inputs, dtypes)
    assert len(lowered(step, sch.shapes, sch.dtypes)[0]) == 1  # one kernel
    (got,) = _host(sym, inputs, tmp_path, dtypes=dtypes)
    (want,) = get_op(step.node.op).compute(step.node.attrs, [x.astype(np.float64) for x in xs],
                                           RunCtx())
    if law == "uniform":
        assert np.any(want == (-np.inf if is_log else 0.0)), "no sample outside the support"
    if dtype == "float32":
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=1e-6)
    else:
        assert_close(got, want, dtype, f"{law} density")


def test_parameters_out_of_range_give_nan(tmp_path: Path) -> None:
    """A kernel cannot raise: parameter arrays out of their law's range (the CPU's AttrError)
    give NaN draws and end (no rejection loop spins on a NaN), in-range rows are drawn."""
    bad = np.array([-1.0, np.nan, 2.0], np.float32)
    for sym in (S._sample_gamma(S.var("a"), S.var("b"), shape=(3,)),
                S._sample_poisson(S.var("a"), shape=(3,)),
                S._sample_negative_binomial(S.var("a"), S.var("b"), shape=(3,))):
        inputs = {"a": bad, "b": np.full(3, 0.5, np.float32)}
        (x,) = _host(sym, {k: v for k, v in inputs.items() if k in sym.list_arguments()},
                     tmp_path)
        assert np.all(np.isnan(x[:2])) and np.all(np.isfinite(x[2])), x


@pytest.mark.parametrize("low,high,dtype", [(-2 ** 31, 2 ** 31 - 1, "int32"),
                                            (-2 ** 40, 2 ** 41, "int64"), (0, 3, "float16")])
def test_randint_wide_ranges(low: int, high: int, dtype: str, tmp_path: Path) -> None:
    """Integers in [low, high) over the whole int32 range and beyond it (64-bit arithmetic,
    exact literals), and into a float output; the mean within six standard errors."""
    (x,) = _host(S._random_randint(low=low, high=high, shape=(N,), dtype=dtype), {}, tmp_path)
    assert x.dtype == np.dtype(dtype)
    v = x.astype(np.float64)
    assert v.min() >= low and v.max() < high and np.array_equal(v, np.round(v))
    mean, sd = (low + high - 1) / 2, (high - low) / math.sqrt(12)
    assert abs(v.mean() - mean) < 6 * sd / math.sqrt(N), (v.mean(), mean)
