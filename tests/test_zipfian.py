"""Log-uniform samplers (``_sample_unique_zipfian``, ``contrib.rand_zipfian``) and samplers
whose shape the graph decides: frequencies against float64 probabilities written here from the
draw's definition, expected counts against the law's formula, bad attributes as typed errors,
and MXNet 1.9.1 live for the deterministic parts."""
from __future__ import annotations

import math

import numpy as np
import pytest

import symgraph as sg
from symgraph.core.base import AttrError, ShapeError

from .mxnet_live import mxnet_json


def _draw_probabilities(range_max: int) -> np.ndarray:
    """P(value = v) for value = round(exp(u log R)) - 1, u uniform on [0, 1)."""
    v = np.arange(range_max, dtype=np.float64)
    lo, hi = np.maximum(v + 0.5, 1.0), np.minimum(v + 1.5, range_max)
    return (np.log(hi) - np.log(lo)) / math.log(range_max)


def test_unique_zipfian_rows_are_distinct_and_follow_the_law() -> None:
    sg.random.seed(7)
    s, tries = sg.nd._internal._sample_unique_zipfian(range_max=1000, shape=(3, 400))
    s, tries = s.asnumpy(), tries.asnumpy()
    assert s.dtype == np.int64 and tries.dtype == np.int64 and tries.shape == (3,)
    for row, t in zip(s, tries):
        assert np.unique(row).size == 400 and row.min() >= 0 and row.max() < 1000
        assert t >= 400
    single, once = sg.nd._internal._sample_unique_zipfian(range_max=10, shape=(20000, 1))
    assert (once.asnumpy() == 1).all()  # one draw is always new
    freq = np.bincount(single.asnumpy().ravel(), minlength=10) / 20000
    np.testing.assert_allclose(freq, _draw_probabilities(10), atol=0.012)


def test_unique_zipfian_bad_attributes() -> None:
    with pytest.raises(AttrError, match="num_sampled=6 distinct classes.*range_max=5"):
        sg.nd._internal._sample_unique_zipfian(range_max=5, shape=(2, 6)).asnumpy()
    with pytest.raises(ShapeError, match="2-D"):
        sg.nd._internal._sample_unique_zipfian(range_max=5, shape=(6,)).asnumpy()


def _expected_counts(classes: np.ndarray, num_sampled: int, range_max: int) -> np.ndarray:
    c = classes.astype(np.float64)
    return np.log((c + 2) / (c + 1)) / math.log(range_max + 1) * num_sampled


def test_rand_zipfian_nd_and_sym() -> None:
    sg.random.seed(3)
    true = np.array([0, 4, 19], np.int32)
    s, c_true, c_s = sg.nd.contrib.rand_zipfian(sg.nd.array(true, dtype="int32"), 3000, 20)
    s = s.asnumpy()
    assert s.dtype == np.int64 and s.min() >= 0 and s.max() < 20
    np.testing.assert_allclose(c_true.asnumpy(), _expected_counts(true, 3000, 20), rtol=1e-12)
    np.testing.assert_allclose(c_s.asnumpy(), _expected_counts(s, 3000, 20), rtol=1e-12)
    law = np.diff(np.log(np.arange(1, 22))) / math.log(21)  # P(c) of the docs, c < 20
    np.testing.assert_allclose(np.bincount(s, minlength=20) / 3000, law, atol=0.03)
    outs = sg.sym.contrib.rand_zipfian(sg.sym.var("t"), 5, 20)
    got = sg.sym.Group(list(outs)).eval(ctx=sg.cpu(), t=sg.nd.array(true))
    np.testing.assert_allclose(got[1].asnumpy(), _expected_counts(true, 5, 20), rtol=1e-12)
    with pytest.raises(AttrError, match="true_classes must be a Symbol"):
        sg.sym.contrib.rand_zipfian(sg.nd.array(true), 5, 20)


def test_sampler_without_shape_draws_the_inferred_shape() -> None:
    x = sg.sym.var("x")
    y = sg.sym.random.normal(loc=3.0, scale=2.0) + x
    got = y.eval(ctx=sg.cpu(), x=sg.nd.zeros((200, 100)))[0].asnumpy()
    assert got.shape == (200, 100)
    assert abs(got.mean() - 3.0) < 0.05 and abs(got.std() - 2.0) < 0.05
    sg.random.seed(1)
    e = sg.nd.random.exponential_like(sg.nd.zeros((40000,)), lam=4.0).asnumpy()
    assert abs(e.mean() - 0.25) < 0.01  # the rate, as MXNet's op parameter


MX_ZIPF = """
import json, sys
import mxnet as mx
true = mx.nd.array(json.load(sys.stdin), dtype="int32")
_, c_true, _ = mx.nd.contrib.rand_zipfian(true, 5, 20)
s, tries = mx.nd._internal._sample_unique_zipfian(range_max=7, shape=(2, 7))
print(json.dumps({"c_true": c_true.asnumpy().tolist(), "dtypes": [s.dtype.__name__, tries.dtype.__name__],
                  "rows": [sorted(r) for r in s.asnumpy().tolist()]}))
"""


@pytest.mark.mxnet
def test_zipfian_matches_mxnet() -> None:
    true = [0, 4, 19]
    ref = mxnet_json(MX_ZIPF, true)
    _, c_true, _ = sg.nd.contrib.rand_zipfian(sg.nd.array(true, dtype="int32"), 5, 20)
    np.testing.assert_allclose(c_true.asnumpy(), ref["c_true"], rtol=1e-12)
    s, tries = sg.nd._internal._sample_unique_zipfian(range_max=7, shape=(2, 7))
    assert [str(s.dtype), str(tries.dtype)] == ref["dtypes"]
    assert [sorted(r) for r in s.asnumpy().tolist()] == ref["rows"]  # each row: every class
