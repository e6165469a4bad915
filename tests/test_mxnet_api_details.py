"""MXNet 1.x API details: nd's binary functions,
NDArray storage types, bool(Symbol), MXNet's integer mod gradient, Module._exec_group,
check_symbolic_backward with surplus head gradients. References are plain numpy."""
from __future__ import annotations

import numpy as np
import pytest

import symgraph as sg
from symgraph.core.base import AttrError, NotImplementedForSymbol, SymgraphError, mx_real_t
from symgraph.interop.test_utils import check_symbolic_backward

S = sg.sym


@pytest.mark.parametrize("name, ref", [
    ("add", np.add), ("subtract", np.subtract), ("multiply", np.multiply),
    ("divide", np.divide), ("power", np.power), ("maximum", np.maximum),
    ("minimum", np.minimum), ("modulo", np.mod), ("equal", np.equal),
    ("greater", np.greater), ("lesser_equal", np.less_equal),
    ("logical_and", np.logical_and), ("logical_xor", np.logical_xor)])
def test_nd_binary_functions_broadcast_and_take_scalars(name: str, ref) -> None:
    rng = np.random.default_rng(0)
    a = rng.uniform(0.5, 2.0, (3, 4)).round(1)
    b = rng.uniform(0.5, 2.0, (1, 4)).round(1)
    fn = getattr(sg.nd, name)
    got = fn(sg.nd.array(a, dtype=np.float64), sg.nd.array(b, dtype=np.float64)).asnumpy()
    np.testing.assert_allclose(got, ref(a, b).astype(np.float64), rtol=1e-12)
    left = fn(1.5, sg.nd.array(a, dtype=np.float64)).asnumpy()  # scalar on the left
    np.testing.assert_allclose(left, ref(1.5, a).astype(np.float64), rtol=1e-12)
    # two numbers: a Python number, as MXNet 1.9.1 gives (nd.power(0.9, 2) == 0.81)
    both = fn(1.5, 2.0)
    assert isinstance(both, (int, float)) and both == pytest.approx(float(ref(1.5, 2.0)))


def test_storage_type_is_dense_only() -> None:
    x = sg.nd.ones((2, 2))
    assert x.stype == "default" and x.tostype("default") is x
    with pytest.raises(AttrError, match="csr"):
        x.tostype("csr")


def test_bool_of_a_symbol_raises() -> None:
    with pytest.raises(NotImplementedForSymbol):
        bool(S.var("x"))
    assert issubclass(NotImplementedForSymbol, SymgraphError) and mx_real_t is np.float32
    star: dict = {}
    exec("from symgraph.core.base import *", star)  # what code written for mxnet.base imports
    assert star["mx_real_t"] is np.float32 and star["NotImplementedForSymbol"] is not None


def test_integer_mod_has_zero_gradient_as_in_mxnet() -> None:
    a, b = S.var("a"), S.var("b")
    y = S.broadcast_mod(S.Cast(a, dtype="int32"), S.Cast(b, dtype="int32"))
    av, bv = np.array([[7.0, 9.0]]), np.array([[2.0, 4.0]])
    check_symbolic_backward(y, {"a": av, "b": bv}, [np.ones((1, 2))],
                            {"a": np.zeros((1, 2)), "b": np.zeros((1, 2))})
    z = S.broadcast_mod(a, b)  # floats keep the true derivative
    check_symbolic_backward(z, {"a": av, "b": bv}, [np.ones((1, 2))],
                            {"a": np.ones((1, 2)), "b": -np.floor(av / bv)}, rtol=1e-6)


def test_surplus_head_gradients_are_ignored_as_mxnet_does() -> None:
    x = S.var("x")
    xv = np.array([1.0, -2.0, 3.0])
    check_symbolic_backward(S.square(x), [xv], [np.ones(3), np.ones(3)], [2 * xv])


def test_module_exec_group_view() -> None:
    sym = S.FullyConnected(S.var("data"), num_hidden=3, name="fc")
    mod = sg.mod.Module(sym, ("data",), None)
    with pytest.raises(SymgraphError, match="not bound"):
        mod._exec_group
    mod.bind(data_shapes=[("data", (2, 4))])
    mod.init_params()
    group = mod._exec_group
    assert group.param_names == ["fc_weight", "fc_bias"]
    assert group.execs[0].arg_dict["fc_weight"].shape == (3, 4)
    mod.init_optimizer(optimizer="sgd")
    assert mod._optimizer.idx2name == dict(enumerate(group.param_names))


@pytest.mark.parametrize("op", ["sum", "mean", "max", "min", "prod", "nansum", "nanprod",
                                "norm"])
def test_reducing_every_axis_gives_shape_1_as_mxnet_1x(op: str) -> None:
    x = np.arange(1.0, 7.0).reshape(2, 3)
    y = getattr(S, op)(S.var("x"))
    assert y.infer_shape(x=(2, 3))[1] == [(1,)]
    out = y.bind(sg.cpu(), {"x": sg.nd.array(x)}).forward()[0]
    assert out.shape == (1,)
    kept = getattr(S, op)(S.var("x"), keepdims=True).infer_shape(x=(2, 3))[1]
    assert kept == [(1, 1)]


def test_reshape_partial_input_from_known_output_and_old_api() -> None:
    net = S.elemwise_add(S.var("data").reshape((-1, 6)), S.ones(shape=(4, 6)))
    arg, out, _ = net.infer_shape(data=(2, 0, 3))  # the 0 is unknown: 24 / (2 * 3)
    assert arg == [(2, 4, 3)] and out == [(4, 6)]
    assert S.Reshape(S.var("x"), target_shape=(2, 0)).infer_shape(x=(2, 3, 5))[1] == [(2, 15)]
    kept = S.Reshape(S.var("x"), target_shape=(7, 5, 0), keep_highest=True)
    assert kept.infer_shape(x=(2, 3, 10))[1] == [(2, 5, 6)]
    # reverse reads codes right to left, -4's sizes included (MXNet 1.9.1's result)
    rev = S.Reshape(S.var("x"), shape=(3, 2, -4, 0), reverse=True)
    assert rev.infer_shape(x=(6, 6))[1] == [(3, 2, 6)]  # MXNet 1.9.1 gives (3, 2, 6)
