"""The samplers and densities on the GPU (run on a GPU): every law in float32, float16 and
bfloat16 against its mean, variance and small-value probabilities (``random_laws``, fixed
seeds, six-standard-error bounds), per-row parameters, multinomial, shuffle, seeding and
fresh draws under CUDA graph replay, and the densities against the CPU. No step of these
programs runs on the host. The GPU's draws are not numpy's (another generator, same laws)."""
from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

import symgraph as sg
from symgraph.runtime.cuda.actions import Host, flat_actions

from .narrow import NARROW, assert_close
from .random_laws import LAW_CASES, LawCase, check_law

pytestmark = pytest.mark.gpu
S = sg.sym
N = 400_000
DTYPES = ["float32", *sorted(NARROW)]
# Narrow types hold integers exactly up to 2048 (float16) and 256 (bfloat16): larger counts
# are rounded, which adds variance the law does not have.
TOO_WIDE = {"float16": {"poisson-large"}, "bfloat16": {"poisson-large"}}
CASES = [(c, d) for d in DTYPES for c in LAW_CASES if c.id not in TOO_WIDE.get(d, ())]


def _forward(sym: Any, **inputs: np.ndarray) -> list[np.ndarray]:
    exe = sym.simple_bind(sg.gpu(0), type_dict={k: v.dtype for k, v in inputs.items()},
                          **{k: v.shape for k, v in inputs.items()})
    hosts = [a for acts in exe._train.program.actions for a in flat_actions(acts)
             if isinstance(a, Host)]
    assert not hosts, f"host steps: {[a.step.node.op for a in hosts]}"
    return [o.asnumpy() for o in exe.forward(is_train=True, **inputs)]


@pytest.mark.parametrize("case,dtype", CASES, ids=[f"{c.id}-{d}" for c, d in CASES])
def test_law_on_gpu(case: LawCase, dtype: str) -> None:
    sg.random.seed(17)
    (x,) = _forward(case.build(N, dtype))
    if case.id != "randint":
        assert x.dtype == np.dtype(NARROW.get(dtype, dtype)), x.dtype
    check_law(x.astype(np.float64), case, f"{case.id} in {dtype}")


@pytest.mark.parametrize("dtype", DTYPES)
def test_sample_per_row_parameters_on_gpu(dtype: str) -> None:
    """_sample_gamma with per-row alpha and scale, read in the parameters' dtype."""
    t = NARROW.get(dtype, np.dtype(dtype))
    alpha, beta = np.array([0.5, 4.0], t), np.array([2.0, 0.5], t)
    sg.random.seed(3)
    (g,) = _forward(S._sample_gamma(S.var("a"), S.var("b"), shape=(N // 2,), dtype=dtype),
                    a=alpha, b=beta)
    for r in range(2):
        mean, var = float(alpha[r] * beta[r]), float(alpha[r] * beta[r] ** 2)
        x = g[r].astype(np.float64)
        assert abs(x.mean() - mean) < 6 * math.sqrt(var / x.size), (r, x.mean(), mean)


def test_multinomial_on_gpu() -> None:
    p = np.array([[0.4, 1.0, 0.6, 0.0], [0.0, 0.0, 2.0, 0.0]], np.float32)
    sg.random.seed(5)
    idx, logp = _forward(S._sample_multinomial(S.var("p"), shape=(N // 2,), get_prob=True), p=p)
    for r in range(2):
        want = p[r] / p[r].sum()
        freq = np.bincount(idx[r], minlength=4) / idx[r].size
        assert np.all(np.abs(freq - want) <= 6 * np.sqrt(want * (1 - want) / idx[r].size))
        np.testing.assert_allclose(logp[r], np.log(p[r][idx[r]]), rtol=1e-6)


@pytest.mark.parametrize("graphs", ["1", "0"])
def test_reseed_repeats_and_replay_draws_anew(graphs: str,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Eager, captured and replayed runs draw new values; reseeding repeats them all."""
    monkeypatch.setenv("SYMGRAPH_CUDA_GRAPHS", graphs)
    sym = S.Group([S._random_gamma(alpha=0.5, shape=(64,)), S._shuffle(S.var("x"))])
    exe = sym.simple_bind(sg.gpu(0), x=(50,))
    x = np.arange(50, dtype=np.float32)

    def runs() -> list:
        return [[o.asnumpy() for o in exe.forward(is_train=True, x=x)] for _ in range(4)]
    sg.random.seed(9)
    first = runs()
    for i in range(4):
        assert sorted(first[i][1].tolist()) == x.tolist()
        for j in range(i):
            assert not np.array_equal(first[i][0], first[j][0]), (i, j)
            assert not np.array_equal(first[i][1], first[j][1]), (i, j)
    sg.random.seed(9)
    for a, b in zip(first, runs()):
        np.testing.assert_array_equal(a[0], b[0])
        np.testing.assert_array_equal(a[1], b[1])


def test_shuffle_on_gpu() -> None:
    """Rows move whole; a uniform permutation moves an element n/3 places on average."""
    n = 20_000
    x = np.stack([np.arange(n), -np.arange(n)], 1).astype(np.float32)
    sg.random.seed(2)
    (y,) = _forward(S._shuffle(S.var("x")), x=x)
    np.testing.assert_array_equal(y[:, 1], -y[:, 0])
    assert sorted(y[:, 0].tolist()) == list(range(n))
    assert abs(np.abs(y[:, 0] - np.arange(n)).mean() - n / 3) < 6 * n / math.sqrt(18 * n)


PDFS = [("normal", 3), ("gamma", 3), ("poisson", 2), ("negative_binomial", 3),
        ("generalized_negative_binomial", 3), ("uniform", 3), ("exponential", 2)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("law,arity", PDFS, ids=[p[0] for p in PDFS])
def test_density_on_gpu(law: str, arity: int, dtype: str) -> None:
    """The density kernel against the numpy reference (float64) on the same rounded values."""
    rng = np.random.default_rng(1)
    t = NARROW.get(dtype, np.dtype(dtype))
    x = rng.integers(0, 8, (4, 50)).astype(t) if arity == 2 or "binomial" in law \
        else rng.uniform(0.1, 0.9, (4, 50)).astype(t)
    params = [rng.uniform(0.2, 0.8, 4).astype(t) for _ in range(arity - 1)]
    if law == "uniform":
        params[1] = (params[1] + 0.5).astype(t)
    names = [f"p{k}" for k in range(len(params))]
    sym = getattr(S, f"_random_pdf_{law}")(S.var("x"), *[S.var(n) for n in names])
    (got,) = _forward(sym, x=x, **dict(zip(names, params)))
    want = sg.nd.array(x, sg.cpu(), np.float64)
    ref = getattr(sg.nd, f"_random_pdf_{law}")(
        want, *[sg.nd.array(p, sg.cpu(), np.float64) for p in params]).asnumpy()
    if dtype == "float32":
        np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-6)
    else:
        assert_close(got, ref, dtype, f"{law} density")
