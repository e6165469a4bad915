"""sg.test_utils' MXNet helper set (symgraph/testkit): tolerance rules, comparisons, random
inputs, np_reduce, environment/retry, check_consistency, compare_optimizer and generator
statistics, against numpy references; MXNet 1.9.1's own helpers live where installed."""
from __future__ import annotations

import os

import numpy as np
import pytest

import symgraph as sg
from symgraph.interop import test_utils as tu

from .mxnet_live import mxnet_json


def test_tolerances_follow_the_looser_dtype() -> None:
    assert tu.get_tols(np.float16(1), np.float64(1), None, None) == (1e-2, 1e-1)
    assert tu.get_tols(np.float32(1), np.float32(1), None, 0.5) == (1e-4, 0.5)
    assert tu.get_tols(np.int32(1), np.int64(1), None, None) == (0, 0)
    # float32 default: |a-b| <= 1e-3 + 1e-4 |b|
    tu.assert_almost_equal(np.float32([1000.0]), np.float32([1000.0 + 0.09]))
    with pytest.raises(AssertionError, match=r"worst at \(1,\)"):
        tu.assert_almost_equal(np.float32([1, 5]), np.float32([1, 5.2]), names=("x", "y"))
    with pytest.raises(AssertionError):  # float64: atol 1e-20
        tu.assert_almost_equal(np.float64([0.0]), np.float64([1e-12]))


def test_nan_and_shape_rules() -> None:
    a = np.array([1.0, np.nan])
    tu.assert_allclose(a, a.copy())  # equal_nan=True by default there
    with pytest.raises(AssertionError):
        tu.assert_almost_equal(a, a.copy())
    tu.assert_almost_equal_ignore_nan(a, np.array([np.nan, 7.0]) * 0 + [1.0, 7.0])
    tu.assert_almost_equal(np.ones((2, 3)), np.ones(3))  # broadcast
    with pytest.raises(AssertionError, match="shape"):
        tu.assert_almost_equal(np.ones((2, 3)), np.ones(3), use_broadcast=False)
    tu.assert_almost_equal_with_err(np.arange(10.0), np.r_[np.arange(9.0), 100], etol=0.2)
    with pytest.raises(AssertionError):
        tu.assert_almost_equal_with_err(np.arange(10.0), np.r_[np.arange(8.0), 50, 100],
                                        etol=0.1)


def test_same_almost_equal_and_exceptions() -> None:
    x = sg.nd.array([1, 2])
    assert tu.same(x, np.float32([1, 2])) and not tu.same(x, np.float32([1, 3]))
    assert tu.almost_equal(np.ones(2), np.ones(2) + 1e-9)
    assert not tu.almost_equal(np.ones(2), np.ones(2) + 1e-3)
    tu.assert_exception(lambda: 1 / 0, ZeroDivisionError)
    with pytest.raises(AssertionError):
        tu.assert_exception(lambda: 1, ZeroDivisionError)
    assert not tu.same_array(x, x.copy()) and tu.same_array(x, x)
    assert tu.same(x, np.float32([1, 2]))  # restored


def test_np_reduce_and_collapse_against_numpy() -> None:
    dat = np.random.RandomState(0).rand(2, 3, 4)
    for axis in (None, 1, (0, 2), [-1]):
        for keep in (False, True):
            want = np.sum(dat, axis=tuple(axis) if isinstance(axis, list) else axis,
                          keepdims=keep)
            np.testing.assert_allclose(tu.np_reduce(dat, axis, keep, np.sum), want)
    grad = np.random.RandomState(1).rand(5, 2, 3)
    np.testing.assert_allclose(tu.collapse_sum_like(grad, (2, 1)),
                               grad.sum(axis=(0, 2)).reshape(2, 1))


def test_random_inputs_respect_seed_and_bounds() -> None:
    np.random.seed(3)
    a = tu.random_arrays((2, 3), (4,))
    np.random.seed(3)
    b = tu.random_arrays((2, 3), (4,))
    assert [x.shape for x in a] == [(2, 3), (4,)] and a[0].dtype == np.float32
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    shapes = [tu.rand_shape_nd(4, dim=3) for _ in range(50)]
    assert all(len(s) == 4 and 1 <= min(s) and max(s) <= 3 for s in shapes)
    assert min(min(tu.rand_shape_3d(2, 2, 2, allow_zero_size=True)) for _ in range(60)) == 0
    sample = tu.random_sample(list(range(10)), 4)
    assert len(set(sample)) == 4 and set(sample) <= set(range(10))
    assert tu.rand_ndarray((3, 2), dtype="float16").dtype == np.float16
    with pytest.raises(sg.AttrError, match="csr"):
        tu.rand_ndarray((3, 2), stype="csr")


def test_environment_restores_and_retry_counts() -> None:
    os.environ["SG_TK_A"] = "keep"
    os.environ.pop("SG_TK_B", None)
    with pytest.raises(KeyError):
        with tu.environment({"SG_TK_A": None, "SG_TK_B": "2"}):
            assert "SG_TK_A" not in os.environ and sg.util.getenv("SG_TK_B") == "2"
            raise KeyError
    assert os.environ["SG_TK_A"] == "keep" and "SG_TK_B" not in os.environ
    calls = []

    @tu.retry(3)
    def flaky() -> None:
        calls.append(1)
        assert len(calls) == 2
    flaky()
    assert len(calls) == 2


def test_default_context_follows_with_blocks() -> None:
    assert tu.default_context() == sg.cpu()
    with sg.cpu(3):
        assert tu.default_context() == sg.cpu(3) and sg.nd.zeros(2).context == sg.cpu(3)
    tu.set_default_context(sg.cpu(1))
    try:
        assert tu.default_context() == sg.cpu(1)
    finally:
        tu.set_default_context(sg.cpu())


def test_check_consistency_catches_a_dtype_gap() -> None:
    x = sg.sym.var("x")
    specs = [{"ctx": sg.cpu(), "x": (3, 4), "type_dict": {"x": t}}
             for t in (np.float64, np.float32)]
    gt = tu.check_consistency(sg.sym.FullyConnected(x, num_hidden=2, name="fc"), specs)
    assert set(gt) == {"fc_output", "x", "fc_weight", "fc_bias"}
    # float16 run compared at float64's tolerance must fail
    specs.append({"ctx": sg.cpu(), "x": (3, 4), "type_dict": {"x": np.float16}})
    with pytest.raises(AssertionError):
        tu.check_consistency(sg.sym.exp(x * 3), specs, rtol=1e-7, atol=1e-7)


def test_simple_forward_and_speed() -> None:
    out = tu.simple_forward(sg.sym.var("a") * sg.sym.var("b"), a=np.float32([2, 3]),
                            b=np.float32([4, 5]))
    np.testing.assert_array_equal(out, [8, 15])
    assert tu.check_speed(sg.sym.relu(sg.sym.var("x")), x=(4, 4), N=2) > 0
    with pytest.raises(ValueError):
        tu.check_speed(sg.sym.var("x"), x=(1,), typ="both")


def test_compare_optimizer_sees_a_different_rule() -> None:
    tu.compare_optimizer(sg.optimizer.SGD(learning_rate=0.1), sg.optimizer.SGD(learning_rate=0.1),
                         (3, 4), np.float32)
    with pytest.raises(AssertionError):
        tu.compare_optimizer(sg.optimizer.SGD(learning_rate=0.1),
                             sg.optimizer.SGD(learning_rate=0.2), (3, 4), np.float32)


def test_generator_statistics() -> None:
    ss = pytest.importorskip("scipy.stats")
    np.random.seed(0)
    buckets, probs = tu.gen_buckets_probs_with_ppf(lambda p: ss.norm.ppf(p), 5)
    tu.verify_generator(lambda n: np.random.normal(size=n), buckets, probs, 20000)
    with pytest.raises(AssertionError, match="chi-square"):
        tu.verify_generator(lambda n: np.random.normal(0.3, size=n), buckets, probs, 20000)
    tu.verify_generator(lambda n: np.random.randint(0, 3, n), [0, 1, 2], [1 / 3] * 3, 9000)
    assert tu.mean_check(lambda n: np.random.normal(2, 1, n), 2, 1, 100000)
    assert not tu.var_check(lambda n: np.random.normal(0, 2, n), 1, 100000)


def test_dummy_iter_repeats_the_first_batch() -> None:
    it = tu.DummyIter(sg.io.NDArrayIter(np.arange(8.0).reshape(4, 2), batch_size=2))
    first, again = next(it), next(it)
    assert first is again and it.provide_data[0].shape == (2, 2)


@pytest.mark.mxnet
def test_tolerance_defaults_match_mxnet() -> None:
    got = mxnet_json(
        "import json, mxnet as mx, numpy as np\n"
        "from mxnet.test_utils import get_tols, np_reduce\n"
        "d = np.arange(24.).reshape(2, 3, 4)\n"
        "print(json.dumps({'tols': [get_tols(np.zeros(1, t), np.zeros(1, t), None, None)\n"
        "  for t in ('float16', 'float32', 'float64')],\n"
        "  'red': np_reduce(d, (0, 2), True, np.max).tolist()}))", {})
    assert [list(tu.get_tols(np.zeros(1, t), np.zeros(1, t), None, None))
            for t in ("float16", "float32", "float64")] == got["tols"]
    dat = np.arange(24.).reshape(2, 3, 4)
    assert tu.np_reduce(dat, (0, 2), True, np.max).tolist() == got["red"]


def test_discard_stderr_silences_file_descriptor_2(capfd: pytest.CaptureFixture) -> None:
    with tu.discard_stderr():
        os.write(2, b"hidden\n")
    os.write(2, b"shown\n")
    err = capfd.readouterr().err
    assert "shown" in err and "hidden" not in err
