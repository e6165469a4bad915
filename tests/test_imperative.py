"""Lazy imperative ``sg.nd``: recording, forcing, caching by structure, graph breaks, in-place
writes, NDArray methods against numpy, creation functions and ``sg.random``."""
from __future__ import annotations

import numpy as np
import pytest

import symgraph as sg
from symgraph.frontend import imperative
from symgraph.interop.test_utils import assert_almost_equal


def _a(x, dtype=np.float32):
    return sg.nd.array(np.asarray(x), dtype=dtype)


def test_calls_record_and_values_compute_on_demand(rng) -> None:
    x = rng.normal(size=(3, 4)).astype(np.float32)
    y = sg.nd.relu(_a(x) - 0.5)
    z = sg.nd.exp(y) * 2
    assert y.is_pending and z.is_pending and z.shape == (3, 4) and z.dtype == np.float32
    before = imperative.compile_count()
    assert_almost_equal(z.asnumpy(), np.exp(np.maximum(x - 0.5, 0)) * 2, rtol=1e-6)
    # y was alive, so the same run materialised it: reading it compiles nothing more
    assert not y.is_pending
    assert_almost_equal(y.asnumpy(), np.maximum(x - 0.5, 0))
    assert imperative.compile_count() == before + 1


def test_same_structure_compiles_once(rng) -> None:
    def step(v):
        return ((sg.nd.tanh(_a(v)) * 3 + 1).sum(axis=1) / 7).asnumpy()
    step(rng.normal(size=(5, 6)))
    n = imperative.compile_count()
    for _ in range(5):
        v = rng.normal(size=(5, 6))
        assert_almost_equal(step(v), ((np.tanh(v) * 3 + 1).sum(axis=1) / 7), rtol=1e-5)
    assert imperative.compile_count() == n
    step(rng.normal(size=(4, 6)))  # a new shape is a new program
    assert imperative.compile_count() == n + 1


def test_graph_break_on_python_control_flow(rng) -> None:
    x = _a([1.0, -2.0, 3.0])
    total = x.sum()
    y = x * 2 if total > 0 else x * -1  # bool() forces `total` only
    assert y.is_pending
    np.testing.assert_allclose(y.asnumpy(), [2.0, -4.0, 6.0])
    assert float(x.max()) == 3.0 and int(x.argmax(axis=0).asscalar()) == 2


def test_errors_are_raised_at_the_call() -> None:
    x = sg.nd.ones((2, 3))
    with pytest.raises(sg.ShapeError, match=r"FullyConnected.*weight has shape \(4, 5\)"):
        sg.nd.FullyConnected(x, sg.nd.ones((4, 5)), sg.nd.ones(4), num_hidden=4)
    with pytest.raises(sg.AttrError, match=r"relu.*unknown attribute.*'bogus'"):
        sg.nd.relu(x, bogus=1)
    with pytest.raises(sg.AttrError, match=r"missing \['weight', 'bias'\]"):
        sg.nd.FullyConnected(x, num_hidden=4)
    with pytest.raises(sg.ShapeError, match="broadcast_add"):
        x + sg.nd.ones((4, 3))
    with pytest.raises(sg.AttrError, match="input 0 must be an NDArray"):
        sg.nd.relu(np.ones(3))


def test_in_place_writes_after_pending_reads(rng) -> None:
    x = _a([1.0, 2.0])
    y = x * 10  # pending, reads the old x
    x[:] = 5.0
    np.testing.assert_allclose(y.asnumpy(), [10.0, 20.0])
    np.testing.assert_allclose((x + 1).asnumpy(), [6.0, 6.0])
    a = _a([1.0, 1.0])
    alias = a
    a += 2  # materialised: in place, every reference sees it
    np.testing.assert_allclose(alias.asnumpy(), [3.0, 3.0])
    p = a * 2
    q = p
    p -= 1  # pending: p (and q, the same object) stand for the new value
    assert p is q and p.is_pending
    np.testing.assert_allclose(q.asnumpy(), [5.0, 5.0])
    x[0] = 7.0
    np.testing.assert_allclose(x.asnumpy(), [7.0, 5.0])


@pytest.mark.parametrize("shape,codes,want", [
    ((2, 3, 4), (0, -1), (2, 12)), ((2, 3, 4), (-1,), (24,)), ((2, 3, 4), (4, 0, -1), (4, 3, 2)),
    ((2, 3, 4), (-2,), (2, 3, 4)), ((2, 3, 4), (2, -2), (2, 3, 4)), ((2, 3, 4), (-3, 4), (6, 4)),
    ((2, 3, 4), (-4, 1, 2, -2), (1, 2, 3, 4)), ((2, 3, 4), (0, -4, -1, 1, 0), (2, 3, 1, 4)),
])
def test_reshape_special_codes(shape, codes, want) -> None:
    x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    y = _a(x).reshape(codes)
    assert y.shape == want
    np.testing.assert_array_equal(y.asnumpy(), x.reshape(want))


def test_reshape_reverse_and_forms() -> None:
    x = _a(np.zeros((10, 5, 4)))
    assert x.reshape((-1, 0), reverse=True).shape == (50, 4)
    assert x.reshape(50, 4).shape == (50, 4) and x.reshape(shape=(5, -1)).shape == (5, 40)


@pytest.mark.parametrize("key", [1, -1, (0, 1), slice(1, 3), (slice(None), 2),
                                 (slice(0, 3, 2), slice(None, None, -1)), (1, slice(1, None)),
                                 slice(-2, None)])
def test_basic_indexing_matches_numpy(key, rng) -> None:
    x = rng.normal(size=(4, 3, 2)).astype(np.float32)
    want = x[key]
    got = _a(x)[key]
    assert got.shape == want.shape
    np.testing.assert_array_equal(got.asnumpy(), want)


def test_index_errors() -> None:
    x = sg.nd.ones((2, 3))
    with pytest.raises(sg.ShapeError, match="out of bounds for axis 1 of size 3"):
        x[0, 3]
    with pytest.raises(sg.ShapeError, match="3 entries for an array of shape"):
        x[0, 0, 0]
    assert x[1, 1].shape == (1,)  # MXNet 1.x: no 0-d arrays


def test_methods_against_numpy(rng) -> None:
    x = rng.normal(size=(3, 4)).astype(np.float32)
    y = rng.uniform(0.5, 2, size=(3, 4)).astype(np.float32)
    a, b = _a(x), _a(y)
    cases = [
        (a + b, x + y), (a - b, x - y), (a * b, x * y), (a / b, x / y), (b ** 2, y ** 2),
        (2 + a, 2 + x), (2 - a, 2 - x), (2 * a, 2 * x), (2 / b, 2 / y), (2 ** a, 2 ** x),
        (b ** b, y ** y), (-a, -x), (abs(a), np.abs(x)), (a > 0, (x > 0)), (a <= b, x <= y),
        (a == a, np.ones_like(x)), (a != 0.5, x != 0.5), (a < 0, x < 0), (a >= b, x >= y),
        (a.T, x.T), (a.transpose(), x.T), (a.transpose((1, 0)), x.T),
        (a.flatten(), x.reshape(3, 4)), (a.sum(), [x.sum()]),  # MXNet 1.x: (1,)
        (a.sum(axis=1), x.sum(1)), (a.mean(axis=0), x.mean(0)), (a.max(axis=1), x.max(1)),
        (a.min(), [x.min()]), (a.argmax(axis=1), x.argmax(1)),
        (a.astype("float64"), x.astype(np.float64)), (a + x, x + x), (a.exp(), np.exp(x)),
        (a.clip(-0.5, 0.5), np.clip(x, -0.5, 0.5)), (a.expand_dims(1), x[:, None]),
    ]
    for got, want in cases:
        want = np.asarray(want)
        assert got.shape == want.shape, (got.shape, want.shape)
        assert_almost_equal(got.asnumpy(), want.astype(got.dtype), rtol=1e-5, atol=1e-6)
    assert a.astype("float64").dtype == np.float64 and (a > 0).dtype == np.float32
    assert a.size == 12 and a.ndim == 2 and len(a) == 3 and a.context == sg.cpu()


def test_copies_and_contexts() -> None:
    x = _a([1.0, 2.0])
    y = x.copy()
    x[:] = 0
    np.testing.assert_array_equal(y.asnumpy(), [1.0, 2.0])
    z = sg.nd.zeros(2)
    assert (x + 3).copyto(z) is z
    np.testing.assert_array_equal(z.asnumpy(), [3.0, 3.0])
    assert z.as_in_context(sg.cpu()) is z
    with pytest.raises(sg.BindError, match="shape"):
        x.copyto(sg.nd.zeros(3))
    w = sg.nd.zeros(2)
    out = sg.nd.relu(_a([-1.0, 4.0]), out=w)
    assert out is w
    np.testing.assert_array_equal(w.asnumpy(), [0.0, 4.0])


def test_scalar_conversions() -> None:
    assert bool(sg.nd.ones(1)) and not bool(sg.nd.zeros(1)) and not bool(sg.nd.zeros(0))
    with pytest.raises(sg.ShapeError, match="ambiguous"):
        bool(sg.nd.ones(2))
    assert (sg.nd.ones(1) * 3).asscalar() == 3.0
    with pytest.raises(sg.BindError, match="1-element"):
        sg.nd.ones(2).asscalar()
    assert "NDArray 2x2" in repr(sg.nd.ones((2, 2)) * 2)


def test_creation_functions() -> None:
    np.testing.assert_array_equal(sg.nd.full((2, 2), 7).asnumpy(), np.full((2, 2), 7))
    np.testing.assert_array_equal(sg.nd.arange(3).asnumpy(), [0, 1, 2])
    np.testing.assert_array_equal(sg.nd.arange(1, 7, 2, repeat=2).asnumpy(),
                                  [1, 1, 3, 3, 5, 5])
    assert sg.nd.empty((2, 3)).shape == (2, 3) and sg.nd.zeros(3, dtype="int32").dtype == np.int32
    a, b = sg.nd.ones((2, 3)), sg.nd.zeros((2, 3))
    np.testing.assert_array_equal(sg.nd.concat(a, b).asnumpy(),
                                  np.concatenate([np.ones((2, 3)), np.zeros((2, 3))], 1))
    np.testing.assert_array_equal(sg.nd.concat(a, b, dim=0).shape, (4, 3))
    for axis in (0, 1, 2, -1):
        want = np.stack([np.ones((2, 3)), np.zeros((2, 3))], axis)
        np.testing.assert_array_equal(sg.nd.stack(a, b, axis=axis).asnumpy(), want)
    xs = sg.nd.split(sg.nd.arange(6).reshape((2, 3)), num_outputs=3, axis=1)
    assert len(xs) == 3 and xs[2].asnumpy().ravel().tolist() == [2.0, 5.0]


def test_waitall_and_executor_binding_force_pending(rng) -> None:
    x = _a(rng.normal(size=(2, 3)))
    y = x * 2
    sg.nd.waitall()
    assert not y.is_pending
    p = sg.nd.sigmoid(x)
    exe = (sg.sym.var("a") * 3).bind(sg.cpu(), {"a": p})  # binding reads the value
    assert_almost_equal(exe.forward()[0].asnumpy(), 3 / (1 + np.exp(-x.asnumpy())), rtol=1e-5)


def test_random_samplers_share_one_seeded_generator() -> None:
    sg.random.seed(11)
    a = sg.nd.random.uniform(-1, 2, shape=(1000,))
    sg.random.seed(11)
    b = sg.random.uniform(-1, 2, (1000,))
    np.testing.assert_array_equal(a.asnumpy(), b.asnumpy())
    v = a.asnumpy()
    assert v.dtype == np.float32 and v.min() >= -1 and v.max() < 2 and abs(v.mean() - 0.5) < 0.1
    n = sg.nd.random.normal(3, 2, shape=(4000,)).asnumpy()
    assert abs(n.mean() - 3) < 0.15 and abs(n.std() - 2) < 0.15
    r = sg.random.randint(2, 5, shape=(100,))
    assert r.dtype == np.int32 and set(r.asnumpy().tolist()) == {2, 3, 4}
    s = sg.nd.random.shuffle(sg.nd.arange(10)).asnumpy()
    assert sorted(s.tolist()) == list(range(10))
    assert sg.random.uniform().shape == (1,)
    # per-row parameters: all arrays (MXNet refuses an array beside a number)
    per_elem = sg.nd.random.normal(sg.nd.array([0, 100]), sg.nd.array([1, 1]),
                                   shape=(50,)).asnumpy()
    assert per_elem.shape == (2, 50) and abs(per_elem[1].mean() - 100) < 1
    with pytest.raises(sg.AttrError, match="all be arrays or all be numbers"):
        sg.nd.random.normal(sg.nd.array([0, 100]), 1, shape=(50,))
    out = sg.nd.zeros((3, 3))
    assert sg.random.uniform(5, 6, out=out) is out and out.asnumpy().min() >= 5
    with pytest.raises(sg.AttrError, match="high"):
        sg.random.randint(5, 5)


def test_num_gpus_is_an_int() -> None:
    assert isinstance(sg.context.num_gpus(), int)


def test_nothing_is_computed_twice() -> None:
    calls = []

    class Count(sg.operator.NDArrayOp):
        def forward(self, in_data, out_data):
            calls.append(1)
            out_data[0][:] = in_data[0].asnumpy() + 1

        def backward(self, out_grad, in_data, out_data, in_grad):
            in_grad[0][:] = out_grad[0].asnumpy()
    sym = Count()(data=sg.sym.var("d"), name="cnt")
    node = sym.outputs_[0].node
    y = sg.nd.Custom(sg.nd.ones(2), **{k: v for k, v in node.attrs.items()})
    z1, z2 = y * 2, y * 3
    np.testing.assert_array_equal(z1.asnumpy(), [4.0, 4.0])
    np.testing.assert_array_equal(z2.asnumpy(), [6.0, 6.0])  # y was materialised with z1
    assert len(calls) == 1


def test_pickle_carries_the_value_not_the_graph() -> None:
    import pickle
    x = _a([1.0, 2.0])
    x.attach_grad()
    y = pickle.loads(pickle.dumps(sg.nd.relu(x - 1.5) * 2))
    assert not y.is_pending and y._entry is None and y.dtype == np.float32
    np.testing.assert_array_equal(y.asnumpy(), [0.0, 1.0])


def test_pending_reads_of_executor_outputs_see_the_old_value() -> None:
    exe = (sg.sym.var("a") * 2).bind(sg.cpu(), {"a": sg.nd.ones(2)})
    out = exe.forward()[0]
    y = out + 1  # pending, reads out = 2
    exe.forward(a=sg.nd.full(2, 5.0))  # the executor rewrites out in place
    np.testing.assert_array_equal(y.asnumpy(), [3.0, 3.0])
    np.testing.assert_array_equal(out.asnumpy(), [10.0, 10.0])


def test_ops_without_inputs_need_a_context_or_an_input() -> None:
    with pytest.raises(sg.AttrError, match=r"takes inputs \['data'\], got 0"):
        sg.nd.relu()
    with pytest.raises(sg.AttrError, match=r"takes inputs \['data'\], got 0"):
        sg.nd.relu(ctx=sg.cpu())


def test_caches_are_bounded(monkeypatch) -> None:
    from symgraph.frontend.imperative import ENGINE, calls
    monkeypatch.setattr(ENGINE.programs, "max_count", 2)
    monkeypatch.setattr(calls, "MAX_INTERNED", 3)
    x = _a([1.0, 2.0])
    for k in range(6):  # six structures, with attribute sets no other test uses
        c = k + 1000.25
        np.testing.assert_allclose((x * c - c).asnumpy(), [0.0, c])
        assert len(ENGINE.programs) <= 2 and len(ENGINE.interned) <= 3


def test_advanced_indexing_and_element_writes() -> None:
    a = _a([[0, 1], [2, 3]])
    np.testing.assert_array_equal(a[[1, 1, 0], [0, 1, 0]].asnumpy(), [2, 3, 0])
    np.testing.assert_array_equal(a[_a([1, 1, 0]), _a([0, 1, 0])].asnumpy(), [2, 3, 0])
    np.testing.assert_array_equal(a[_a([1, 0])].asnumpy(), [[2, 3], [0, 1]])
    b = sg.nd.zeros(2)
    b[0] = np.array([4.5], np.float32)  # one element from a 1-element array, as MXNet
    b[1] = 7
    np.testing.assert_array_equal(b.asnumpy(), [4.5, 7.0])
    with pytest.raises(sg.BindError, match="cannot assign an array of shape"):
        b[0] = np.ones(3)


def test_mxnet_helpers_out_inplace_views_and_legacy_names() -> None:
    out = sg.nd.zeros((2, 2))
    assert sg.nd.ones((2, 2), out=out) is out and out.asnumpy().sum() == 4
    sg.nd.zeros((2, 2), out=out)
    assert out.asnumpy().sum() == 0
    np.testing.assert_array_equal(sg.nd.eye(3, 4, 1).asnumpy(), np.eye(3, 4, 1))
    np.testing.assert_allclose(sg.nd.linspace(0, 1, 5).asnumpy(), np.linspace(0, 1, 5))
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    np.testing.assert_array_equal(sg.nd.moveaxis(_a(x), 0, 2).asnumpy(), np.moveaxis(x, 0, 2))
    np.testing.assert_array_equal(sg.nd.concatenate([_a(x), _a(x)], axis=1).asnumpy(),
                                  np.concatenate([x, x], 1))
    a = _a(x)
    view = a.flatten(inplace=True)  # MXNet: a view sharing the memory
    view[:] = 1
    assert a.asnumpy().sum() == 24
    assert sg.nd.broadcast_to(_a([[1, 2]]), shape=np.array([3, 2])).shape == (3, 2)
    assert sg.nd.random_uniform(0, 1, shape=(3,)).shape == (3,)
    b = sg.nd.zeros((2, 3))
    b[0] = np.ones((1, 1, 3))  # leading 1-axes dropped, as MXNet
    assert b.asnumpy().sum() == 3


def test_internal_namespace_has_every_op() -> None:
    from symgraph.core.registry import all_ops
    assert all(callable(getattr(sg.nd._internal, n)) for n in all_ops())
    np.testing.assert_array_equal(
        sg.nd._internal._rminus_scalar(sg.nd.ones(2), scalar=5).asnumpy(), [4.0, 4.0])
