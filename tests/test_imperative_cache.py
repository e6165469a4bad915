"""Compiled imperative programs are kept per structure under a byte budget
(``SYMGRAPH_PROGRAM_CACHE_MB``), least recently used dropped first, and ``autograd.Function``
calls in a loop share one program; the engine forgets everything with one ``invalidate()``."""
from __future__ import annotations

import numpy as np
import pytest

import symgraph as sg
from symgraph.frontend import autograd
from symgraph.gluon import nn
from symgraph.gluon.cached_op import MAX_SIGNATURES
from symgraph.frontend.imperative import ENGINE
from symgraph.frontend.imperative.cache import MB, ProgramCache, Sized


def _dense() -> tuple:
    net = nn.Dense(64, in_units=32)
    net.initialize()
    net.hybridize()
    return net, [p.data().asnumpy().astype(np.float64) for p in net.collect_params().values()]


def test_a_block_fed_200_batch_sizes_keeps_a_bounded_set(monkeypatch) -> None:
    monkeypatch.setenv("SYMGRAPH_PROGRAM_CACHE_MB", "0.25")
    budget = 0.25 * MB
    net, (w, b) = _dense()
    rng = np.random.default_rng(0)
    evicted = ENGINE.programs.evicted
    for n in range(1, 201):
        x = rng.normal(size=(n, 32)).astype(np.float32)
        np.testing.assert_allclose(net(sg.nd.array(x)).asnumpy(), x @ w.T + b, rtol=1e-5,
                                   atol=1e-5)
        assert ENGINE.programs.bytes <= budget
    assert len(ENGINE.programs) < 100 and ENGINE.programs.evicted - evicted > 100
    assert len(net._cached) <= MAX_SIGNATURES  # (the block's traces are bounded too)
    before = sg.imperative.compile_count()
    net(sg.nd.ones((200, 32))).asnumpy()  # the most recent: kept
    assert sg.imperative.compile_count() == before
    x = rng.normal(size=(1, 32)).astype(np.float32)  # dropped long ago: compiled again
    np.testing.assert_allclose(net(sg.nd.array(x)).asnumpy(), x @ w.T + b, rtol=1e-5,
                               atol=1e-5)
    assert sg.imperative.compile_count() == before + 1


class _Cube(autograd.Function):
    def forward(self, x):
        self.save_for_backward(x)
        return x * x * x

    def backward(self, dy):
        (x,) = self.saved_tensors
        return 3 * x * x * dy


@pytest.mark.parametrize("device", ["cpu", pytest.param("gpu", marks=pytest.mark.gpu)])
def test_function_in_a_loop_compiles_once(device: str) -> None:
    ctx = sg.gpu() if device == "gpu" else sg.cpu()
    # the GPU's kernels run float32 (no float64 lowering of fused groups)
    dtype, rtol = (np.float32, 1e-5) if device == "gpu" else (np.float64, 1e-12)
    rng = np.random.default_rng(1)
    counts = []
    # one leaf whose values change, as a parameter does (on the GPU a backward program holds
    # its gradient buffers' addresses: a new leaf per step would be a new program anyway)
    x = sg.nd.zeros((3, 4), ctx, dtype=dtype)
    x.attach_grad()
    for _ in range(6):
        v = rng.normal(size=(3, 4)).astype(dtype)
        x[:] = v
        with autograd.record():
            y = (_Cube()(x) * 2).sum()
        y.backward()
        np.testing.assert_allclose(y.asscalar(), 2 * (v.astype(np.float64) ** 3).sum(),
                                   rtol=rtol)
        np.testing.assert_allclose(x.grad.asnumpy(), 6 * v * v, rtol=rtol)
        counts.append(sg.imperative.compile_count())
    assert counts[1:] == [counts[1]] * 5  # (the first call compiles, the next ones reuse)


def test_function_calls_in_one_graph_keep_their_own_values() -> None:
    a, b = np.array([1.0, 2.0]), np.array([3.0, -1.0])
    x, z = sg.nd.array(a, dtype=np.float64), sg.nd.array(b, dtype=np.float64)
    x.attach_grad()
    z.attach_grad()
    with autograd.record():
        y = (_Cube()(x) + _Cube()(z) * 10).sum()
    y.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), 3 * a * a)
    np.testing.assert_allclose(z.grad.asnumpy(), 30 * b * b)


def test_least_recently_used_goes_first(monkeypatch) -> None:
    monkeypatch.setenv("SYMGRAPH_PROGRAM_CACHE_MB", str(30 / MB))  # 30 bytes
    cache = ProgramCache()
    for k in "abc":
        cache.put(k, Sized(10))
    assert cache.get("a") is not None  # a is now the most recent
    cache.put("d", Sized(10))
    assert list(cache.keys()) == ["c", "a", "d"] and cache.bytes == 30
    cache.put("e", Sized(100))  # over the budget alone: kept, everything else dropped
    assert list(cache.keys()) == ["e"] and cache.bytes == 100


def test_a_bad_budget_names_the_variable(monkeypatch) -> None:
    monkeypatch.setenv("SYMGRAPH_PROGRAM_CACHE_MB", "lots")
    with pytest.raises(sg.AttrError, match="SYMGRAPH_PROGRAM_CACHE_MB='lots'"):
        ProgramCache().put("k", Sized(1))


def test_invalidate_forgets_programs_and_calls() -> None:
    x = sg.nd.array([1.0, 2.0])
    (x * 3.5 + 1).asnumpy()
    ENGINE.invalidate()
    assert len(ENGINE.programs) == 0 and ENGINE.fast_calls == {} and ENGINE.interned == {}
    before = sg.imperative.compile_count()
    np.testing.assert_allclose((x * 3.5 + 1).asnumpy(), [4.5, 8.0])
    assert sg.imperative.compile_count() == before + 1
