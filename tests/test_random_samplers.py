"""``sg.nd.random.randn`` / ``poisson`` and the ``sg.nd.uniform`` / ``sg.nd.normal`` names:
shapes, dtypes, MXNet's argument names, the sample laws (moments within 5 standard errors)
and refused arguments."""
from __future__ import annotations

import numpy as np
import pytest

import symgraph as sg
from symgraph.core.base import AttrError

N = 20000


def test_randn_shape_and_law() -> None:
    sg.random.seed(3)
    x = sg.nd.random.randn(100, 200, loc=2.0, scale=0.5).asnumpy()
    assert x.shape == (100, 200) and x.dtype == np.float32
    assert abs(x.mean() - 2.0) < 5 * 0.5 / np.sqrt(x.size)
    assert abs(x.std() - 0.5) < 0.01


def test_poisson_law_and_array_parameter() -> None:
    sg.random.seed(4)
    x = sg.nd.random.poisson(3.0, shape=(N,)).asnumpy()
    assert x.dtype == np.float32 and np.all(x == np.round(x)) and x.min() >= 0
    assert abs(x.mean() - 3.0) < 5 * np.sqrt(3.0 / N)
    lam = sg.nd.array([0.5, 8.0])
    y = sg.random.poisson(lam, shape=(N,)).asnumpy()  # one sample set per element
    assert y.shape == (2, N)
    assert np.all(np.abs(y.mean(axis=1) - [0.5, 8.0]) < 5 * np.sqrt(np.array([0.5, 8.0]) / N))


def test_poisson_refuses_a_negative_rate() -> None:
    with pytest.raises(AttrError, match=r"poisson.*lam=-1.0 must be >= 0"):
        sg.nd.random.poisson(-1.0, shape=(2,)).asnumpy()


def test_nd_uniform_and_normal_are_the_samplers() -> None:
    sg.random.seed(5)
    u = sg.nd.uniform(low=-1, high=3, shape=(N,)).asnumpy()
    assert u.min() >= -1 and u.max() < 3 and abs(u.mean() - 1.0) < 5 * 4 / np.sqrt(12 * N)
    n = sg.nd.normal(loc=1.0, scale=2.0, shape=(N,)).asnumpy()
    assert abs(n.mean() - 1.0) < 5 * 2.0 / np.sqrt(N)
