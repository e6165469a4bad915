"""Shape and dtype inference: bidirectional fixpoint, checking given shapes, clear errors."""
from __future__ import annotations

import numpy as np
import pytest

import symgraph as sg

S = sg.sym


def mlp():
    net = S.FullyConnected(S.var("data"), num_hidden=128, name="fc1")
    net = S.relu(net)
    net = S.FullyConnected(net, num_hidden=64, name="fc2")
    net = S.Activation(net, act_type="relu")
    net = S.FullyConnected(net, num_hidden=10, name="fc3")
    return S.SoftmaxOutput(net, name="softmax")


def test_mlp_shapes_all_come_from_data() -> None:
    net = mlp()
    args, outs, aux = net.infer_shape(data=(64, 784))
    assert dict(zip(net.list_arguments(), args)) == {
        "data": (64, 784), "fc1_weight": (128, 784), "fc1_bias": (128,),
        "fc2_weight": (64, 128), "fc2_bias": (64,), "fc3_weight": (10, 64), "fc3_bias": (10,),
        "softmax_label": (64,)}
    assert outs == [(64, 10)] and aux == []


def test_fully_connected_flattens_data() -> None:
    fc = S.FullyConnected(S.var("x"), num_hidden=5, name="fc")
    args, outs, _ = fc.infer_shape(x=(2, 3, 4))
    assert args[1] == (5, 12) and outs == [(2, 5)]
    fc = S.FullyConnected(S.var("x"), num_hidden=5, flatten=False, name="fc")
    args, outs, _ = fc.infer_shape(x=(2, 3, 4))
    assert args[1] == (5, 4) and outs == [(2, 3, 5)]


def test_backward_inference_through_elementwise_ops() -> None:
    a, b = S.var("a"), S.var("b")
    net = S.elemwise_add(S.exp(a), b)
    args, outs, _ = net.infer_shape(b=(3, 2))
    assert args == [(3, 2), (3, 2)] and outs == [(3, 2)]


def test_variable_declared_shape_is_used_and_checked() -> None:
    x = S.var("x", shape=(4, 6))
    fc = S.FullyConnected(x, num_hidden=2, name="fc")
    assert fc.infer_shape()[0][0] == (4, 6)
    # MXNet: a shape given to infer_shape overrides the declared one
    assert fc.infer_shape(x=(4, 7))[0] == [(4, 7), (2, 7), (2,)]


def test_conflict_names_node_op_and_both_shapes() -> None:
    fc = S.FullyConnected(S.var("data"), num_hidden=128, name="fc1")
    with pytest.raises(sg.ShapeError) as err:
        fc.infer_shape(data=(64, 64, 7, 7), fc1_weight=(128, 100))
    msg = str(err.value)
    assert "fc1 (FullyConnected)" in msg and "weight" in msg
    assert "(128, 100)" in msg and "(128, 3136)" in msg and "(64, 64, 7, 7)" in msg


def test_label_shape_conflict() -> None:
    net = S.SoftmaxOutput(S.var("x"), name="sm")
    with pytest.raises(sg.ShapeError, match=r"sm \(SoftmaxOutput\): label has shape \(5,\)"):
        net.infer_shape(x=(4, 3), sm_label=(5,))


def test_undecidable_shapes_list_the_arguments() -> None:
    net = S.elemwise_add(S.var("a"), S.var("b"))
    with pytest.raises(sg.ShapeError, match=r"cannot decide the shapes of \['a', 'b'\]"):
        net.infer_shape()
    args, outs, _ = net.infer_shape_partial()
    assert args == [(), ()] and outs == [()]  # MXNet's unknown shape
    with sg.np_shape(True):  # () is a scalar's shape there: unknown is None
        args, outs, _ = net.infer_shape_partial()
    assert args == [None, None] and outs == [None]


def test_broadcast_incompatible_shapes() -> None:
    net = S.var("a") + S.var("b")
    assert net.infer_shape(a=(3, 1), b=(1, 4))[1] == [(3, 4)]
    with pytest.raises(sg.ShapeError, match=r"broadcast_add.*do not broadcast"):
        net.infer_shape(a=(3, 2), b=(4,))


def test_unknown_name_in_infer_shape() -> None:
    with pytest.raises(sg.ShapeError, match="not an input"):
        S.relu(S.var("x")).infer_shape(y=(2,))


def test_duplicate_argument_names_are_refused() -> None:
    net = S.var("x") + S.exp(S.var("x"))
    with pytest.raises(sg.GraphError, match="duplicate argument name 'x'"):
        net.infer_shape(x=(2,))
    with pytest.raises(sg.GraphError, match="duplicate argument name 'x'"):
        net.simple_bind(sg.cpu(), x=(2,))


def test_infer_type_defaults_and_propagates() -> None:
    net = mlp()
    args, outs, _ = net.infer_type()
    assert all(t == np.float32 for t in args) and outs == [np.float32]
    args, outs, _ = net.infer_type(data="float64")
    assert all(t == np.float64 for t in args) and outs == [np.float64]


def test_infer_type_conflict() -> None:
    net = S.elemwise_add(S.var("a"), S.var("b"))
    with pytest.raises(sg.DTypeError, match=r"elemwise_add.*float16.*float64|float64.*float16"):
        net.infer_type(a="float64", b="float16")
