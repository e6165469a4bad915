"""MXNet 1.x parity: calling conventions, fluent methods, partial shapes, executor
behaviours, the monitor and the test helpers. Values are checked against numpy; names and
shapes against what MXNet 1.9.1 gives for the same calls."""
from __future__ import annotations

import logging

import numpy as np
import pytest

import symgraph as sg
from symgraph.compiler.ops.sorting import order, top_order
from symgraph.interop.test_utils import (assert_almost_equal, check_numeric_gradient,
                                 check_symbolic_backward)

S = sg.sym


def _run(sym, **arrays):
    return [o.asnumpy() for o in sym.eval(sg.cpu(), **{k: sg.nd.array(v) for k, v in
                                                       arrays.items()})]


def test_fluent_methods_equal_the_functions() -> None:
    x = np.random.default_rng(0).uniform(0.2, 0.9, (3, 4)).astype(np.float32)
    v = S.var("x")
    for method, kwargs in [("sum", {"axis": 1}), ("reshape", {"shape": (4, 3)}),
                           ("transpose", {}), ("arcsin", {}), ("flatten", {}),
                           ("topk", {"k": 2}), ("astype", {"dtype": "float64"})]:
        fn = "Cast" if method == "astype" else method
        got = _run(getattr(v, method)(**kwargs), x=x)[0]
        want = _run(getattr(S, fn)(v, **kwargs), x=x)[0]
        np.testing.assert_array_equal(got, want)
    np.testing.assert_allclose(_run(v.arcsin(), x=x)[0], np.arcsin(x), rtol=1e-6)


def test_positional_attributes_none_inputs_and_dunder_keywords() -> None:
    x = S.var("x")
    assert S.Dropout(x, 0.3).list_attr()["p"] == "0.3"
    assert S.reshape(x, (2, 3)).list_attr()["shape"] == "(2, 3)"
    conv = S.Convolution(x, S.var("w"), None, kernel=(1, 1), num_filter=2, no_bias=True)
    assert conv.list_arguments() == ["x", "w"]
    act = S.Activation(x, act_type="relu", __layout__="NC")
    assert act.attr("__layout__") == "NC"
    with pytest.raises(sg.AttrError, match="positionally and by name"):
        S.Dropout(x, 0.3, p=0.5)


def test_operand_dispatching_functions() -> None:
    a = np.array([1.0, 4.0, 9.0], np.float32)
    x = S.var("x")
    np.testing.assert_allclose(_run(S.pow(x, 2), x=a)[0], a ** 2)
    np.testing.assert_allclose(_run(S.pow(2, x), x=a)[0], 2 ** a)
    np.testing.assert_allclose(_run(S.maximum(3, x), x=a)[0], np.maximum(a, 3))
    np.testing.assert_allclose(_run(S.hypot(x, x), x=a)[0], np.hypot(a, a), rtol=1e-6)
    assert S.minimum(2, 5) == 2
    np.testing.assert_allclose(_run(x % 3.0, x=a)[0], [1, 1, 0])
    np.testing.assert_allclose(_run(S.zeros((2,)) + S.ones((2,)) * S.full((2,), 3.0))[0],
                               [3, 3])


@pytest.mark.parametrize("build, given, want", [
    (lambda: S.var("a", shape=(0, 10)) + S.var("b", shape=(12, 0)), {},
     {"a": (12, 10), "b": (12, 10)}),
    (lambda: S.FullyConnected(S.var("a", shape=(0, 10)), num_hidden=21)
     + S.var("c", shape=(5, 0)), {}, {"a": (5, 10), "c": (5, 21)}),
    (lambda: S.SliceChannel(S.var("a", shape=(0, 15, 0)), num_outputs=3)[1]
     + S.var("c", shape=(3, 5, 2)), {}, {"a": (3, 15, 2)}),
    (lambda: S.Convolution(S.var("a"), num_filter=21, kernel=(3, 3), pad=(1, 1))
     + S.var("c"), {"a": (0, 10, 0, 0), "c": (5, 21, 32, 32)}, {"a": (5, 10, 32, 32)}),
    (lambda: S.var("d", shape=(2, 0)) + S.Concat(S.var("a", shape=(0, 10)),
                                                 S.var("b", shape=(0, 5)), dim=1), {},
     {"a": (2, 10), "b": (2, 5), "d": (2, 15)}),
])
def test_partial_shapes(build, given, want) -> None:
    sym = build()
    args = dict(zip(sym.list_arguments(), sym.infer_shape(**given)[0]))
    for k, v in want.items():
        assert args[k] == v


def test_partial_shapes_stay_partial_and_bound_zero_sizes_stay_exact() -> None:
    fc = S.FullyConnected(S.var("x"), num_hidden=3, name="fc")
    assert fc.infer_shape_partial(x=(0, 4))[1] == [(0, 3)]
    with pytest.raises(sg.ShapeError, match="cannot decide"):
        fc.infer_shape(x=(0, 4))
    exe = (S.var("x") * 2).bind(sg.cpu(), {"x": sg.nd.zeros((0, 3))})
    assert exe.forward()[0].shape == (0, 3)


def test_executor_reshape_shares_memory() -> None:
    y = S.FullyConnected(S.var("x"), num_hidden=4)
    exe = y.simple_bind(sg.cpu(), x=(5, 4), grad_req="null")
    for a in exe.arg_arrays:
        a[:] = 1
    small = exe.reshape(x=(3, 4))
    small.forward()
    np.testing.assert_array_equal(small.outputs[0].asnumpy(), 5)
    np.testing.assert_array_equal(exe.outputs[0].asnumpy()[:3], 5)  # same bytes
    with pytest.raises(sg.BindError, match="allow_up_sizing"):
        exe.reshape(x=(6, 4))
    big = exe.reshape(allow_up_sizing=True, x=(6, 4))
    big.arg_arrays[0][:] = 0
    np.testing.assert_array_equal(exe.arg_arrays[0].asnumpy(), 1)
    assert big.arg_arrays[1] is exe.arg_arrays[1]


def test_simple_bind_ignores_names_that_are_not_inputs() -> None:
    exe = (S.var("x") * 2).simple_bind(sg.cpu(), x=(2,), axis=1, mode="clip")
    assert list(exe.arg_dict) == ["x"]


def test_no_gradient_op_refuses_a_gradient_through_it() -> None:
    y = S.batch_take(S.var("x"), S.var("i"))
    with pytest.raises(sg.GraphError, match="batch_take.*no gradient"):
        y.simple_bind(sg.cpu(), x=(3, 4), i=(3,))
    exe = S.stop_gradient(y).simple_bind(sg.cpu(), x=(3, 4), i=(3,))
    exe.forward()
    exe.backward()


def test_top_order_equals_the_stable_sort_with_ties() -> None:
    rng = np.random.default_rng(1)
    for shape, axis in [((7, 50, 3), 1), ((3, 200), -1), ((100, 6), 0)]:
        for ascend in (True, False):
            x = rng.integers(0, 4, shape).astype(np.float32)
            for k in (1, 3):
                np.testing.assert_array_equal(
                    top_order(x, axis, ascend, k),
                    np.take(order(x, axis, ascend), np.arange(k), axis=axis))


def _mlp():
    x = S.FullyConnected(S.var("data"), num_hidden=3, name="fc")
    x = S.Dropout(S.Activation(x, act_type="relu", name="act"), p=0.5, name="do")
    return S.LinearRegressionOutput(x, name="out")


def test_monitor_callback_names_values_and_masks() -> None:
    exe = _mlp().simple_bind(sg.cpu(), data=(4, 2))
    rng = np.random.default_rng(0)
    for name, arr in exe.arg_dict.items():
        arr[:] = rng.normal(size=arr.shape)
    seen: dict[str, np.ndarray] = {}
    exe.set_monitor_callback(lambda n, a: seen.__setitem__(n.decode(), a.asnumpy()))
    exe.forward(is_train=True)
    assert list(seen) == ["fc_output", "act_output", "do_output", "do_mask", "out_output"]
    np.testing.assert_allclose(seen["out_output"], exe.outputs[0].asnumpy())
    x, w, b = (exe.arg_dict[k].asnumpy() for k in ("data", "fc_weight", "fc_bias"))
    np.testing.assert_allclose(seen["fc_output"], x @ w.T + b, rtol=1e-5)
    names: list[str] = []
    exe.set_monitor_callback(lambda n, a: names.append(n.decode()), monitor_all=True)
    exe.forward()
    assert names[:7] == ["data", "fc_data", "fc_weight", "fc_weight", "fc_bias", "fc_bias",
                         "fc_output"]


def test_monitor_class_and_fit(caplog: pytest.LogCaptureFixture) -> None:
    mon = sg.monitor.Monitor(1, pattern="fc.*", sort=True)
    exe = _mlp().simple_bind(sg.cpu(), data=(4, 2))
    mon.install(exe)
    mon.tic()
    exe.forward(is_train=True)
    res = mon.toc()
    assert [k for _, k, _ in res] == ["fc_bias", "fc_output", "fc_weight"]
    w = exe.arg_dict["fc_weight"].asnumpy()
    assert float(res[2][2]) == pytest.approx(np.linalg.norm(w) / np.sqrt(w.size), rel=1e-5)
    it = sg.io.NDArrayIter(np.ones((8, 2)), np.ones((8, 3)), batch_size=4,
                           label_name="out_label")
    mod = sg.mod.Module(_mlp(), label_names=["out_label"])
    with caplog.at_level(logging.INFO):
        mod.fit(it, num_epoch=1, monitor=sg.monitor.Monitor(1, pattern="act_output"),
                progress_bar=False)
    assert sum("act_output" in r.getMessage() for r in caplog.records) == 2


def test_test_utils_follow_mxnet() -> None:
    x = S.var("x")
    # a transposed (non-contiguous) location used to give zero numeric gradients
    check_numeric_gradient(S.sin(x), {"x": np.random.rand(3, 4).T})
    check_symbolic_backward(x * 2.0, {"x": np.ones(3)}, [np.ones(3)], {"x": np.full(3, 2.0)},
                            grad_req="add")
    check_symbolic_backward(x * 2.0, {"x": np.ones(3)}, [np.ones(3)], {"x": np.zeros(3)},
                            grad_req="null")
    assert_almost_equal(np.ones((2, 3)), np.float32(1.0))  # broadcasts, as MXNet's
    with pytest.raises(AssertionError):
        assert_almost_equal(np.array([np.nan]), np.array([np.nan]))
    assert_almost_equal(np.array([np.nan]), np.array([np.nan]), equal_nan=True)
