"""Control flow as MXNet 1.9.1's users see it: output formats (a hybridized block returning a
one-element list, ``sym.while_loop``'s single step output), subgraph names counted in
``AttrScope._subgraph_names``, a second loop reading the first one's final states (values
against a float64 numpy loop), data of unknown length (``infer_shape_partial``), gradient
arrays bound for variables a body does not read, and MXNet live where installed."""
from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest

import symgraph as sg
from symgraph.core.base import BindError, UnusedLoopValueError

from .mxnet_live import mxnet_json

S = sg.sym


class _ListOut(sg.gluon.HybridBlock):
    def hybrid_forward(self, F, x):
        return F.contrib.cond(x.slice_axis(axis=0, begin=0, end=1), lambda: [x * 2],
                              lambda: [x * 3])


def test_hybridized_one_element_list_stays_a_list() -> None:
    x = np.array([1.5, -2.0], np.float32)
    outs = []
    for hybrid in (False, True):
        net = _ListOut()
        net.initialize()
        if hybrid:
            net.hybridize()
        outs.append(net(sg.nd.array(x)))
    for got in outs:
        assert isinstance(got, list) and len(got) == 1
        np.testing.assert_allclose(got[0].asnumpy(), x * 2, rtol=1e-6)


def _chained(F, s0):
    """Two while loops; the second's body also reads the first one's final states."""
    def cond(a, b):
        return F.squeeze(a.slice_axis(axis=0, begin=0, end=1)) < 1e9

    out1, st1 = F.contrib.while_loop(cond, lambda a, b: (a + 1, [a * 0.5, b]),
                                     [s0, s0 + 1], max_iterations=3)
    out2, _ = F.contrib.while_loop(cond, lambda a, b: (a + 1, [a + st1[0], b + st1[1]]),
                                   st1, max_iterations=4)
    return out2


def _chained_numpy(s0: np.ndarray) -> np.ndarray:
    a, b = s0.astype(np.float64), s0.astype(np.float64) + 1
    for _ in range(3):
        a, b = a * 0.5, b
    fa, fb = a, b
    rows = []
    for _ in range(4):
        rows.append(a + 1)
        a, b = a + fa, b + fb
    return np.stack(rows)


def test_second_loop_reads_first_loops_final_states() -> None:
    s0 = np.array([0.3, -1.2, 2.0], np.float32)
    out = _chained(S, S.var("s"))
    assert isinstance(out, sg.sym.Symbol)  # one step output, not a list of one
    got = out.eval(ctx=sg.cpu(), s=sg.nd.array(s0))[0].asnumpy()
    np.testing.assert_allclose(got, _chained_numpy(s0), rtol=1e-6)
    imperative = _chained(sg.nd, sg.nd.array(s0)).asnumpy()
    np.testing.assert_allclose(imperative, _chained_numpy(s0), rtol=1e-6)


def _count_names() -> dict:
    """Subgraph names counted while building two conds and a foreach holding a cond."""
    saved = sg.AttrScope._subgraph_names
    sg.AttrScope._subgraph_names = defaultdict(int)
    try:
        x = S.var("x")
        for _ in range(2):
            S.contrib.cond(x.sum() > 0, lambda: x * 2, lambda: x * 3, name="c")
        S.contrib.foreach(lambda d, s: (S.contrib.cond(d.sum() > 0, lambda: d, lambda: -d),
                                        s), x, [], name="f")
        return dict(sg.AttrScope._subgraph_names)
    finally:
        sg.AttrScope._subgraph_names = saved


def test_subgraph_names_are_counted_per_name() -> None:
    assert _count_names() == {"c_pred": 2, "c_then": 2, "c_else": 2, "f": 1,
                              "f0$cond_pred": 1, "f0$cond_then": 1, "f0$cond_else": 1}


def _unknown_length_shapes() -> tuple[list, list]:
    data = S.var("data", shape=(0, 3, 8, 8))
    outs, _ = S.contrib.foreach(lambda d, st: (d + st[0], [st[0] * 2]), data, [S.var("st")])
    args, out_shapes, _ = outs.infer_shape_partial()
    return [tuple(a) for a in args], [tuple(o) for o in out_shapes]


def test_foreach_over_data_of_unknown_length() -> None:
    args, outs = _unknown_length_shapes()
    assert outs == [(0, 3, 8, 8)]
    assert args == [(0, 3, 8, 8), (3, 8, 8)]  # data, st: the state from the body's a + b


def test_unknown_operand_of_plus_takes_the_other_shape() -> None:
    y = S.var("a", shape=(3, 4)) + S.var("b")
    args, outs, _ = y.infer_shape_partial()
    assert args == [(3, 4), (3, 4)] and outs == [(3, 4)]


def test_same_shape_guess_waits_for_the_certain_rules() -> None:
    w, shift = S.var("w"), S.var("shift", shape=(1,))
    net = S.FullyConnected(S.var("data"), weight=S.broadcast_add(w, shift), num_hidden=11,
                           no_bias=True)
    args, _, _ = net.infer_shape(data=(7, 100))
    assert dict(zip(net.list_arguments(), args))["w"] == (11, 100)  # not shift's (1,)


def test_gradient_arrays_for_unread_names_are_left_out() -> None:
    a, b, unused = S.var("a"), S.var("b"), S.var("unused")
    out = S.contrib.cond((a * b).sum() < 100, lambda: a * b, lambda: a + b)
    x, y = np.array([1.0, 2.0], np.float32), np.array([3.0, -1.0], np.float32)
    grads = {n: sg.nd.zeros((2,)) for n in ("a", "b", "unused")}
    exe = out.bind(sg.cpu(), {"a": sg.nd.array(x), "b": sg.nd.array(y)}, args_grad=grads)
    exe.forward(is_train=True)
    exe.backward(sg.nd.ones((2,)))
    np.testing.assert_allclose(grads["a"].asnumpy(), y)  # d(a*b)/da
    np.testing.assert_allclose(grads["b"].asnumpy(), x)
    np.testing.assert_array_equal(grads["unused"].asnumpy(), np.zeros(2))
    assert "unused" not in exe.grad_dict
    with pytest.raises(BindError, match=r"\['unused'\] are not arguments"):
        out.bind(sg.cpu(), {"a": sg.nd.array(x), "b": sg.nd.array(y),
                            "unused": sg.nd.array(x)})
    del unused


def test_unused_state_is_an_assertion_error_as_in_mxnet() -> None:
    with pytest.raises(AssertionError, match=r"loop values \['s-0'\] are not used"):
        S.contrib.foreach(lambda d, st: (d * 2, [d]), S.var("x"), [S.var("s")])
    assert issubclass(UnusedLoopValueError, sg.GraphError)


def test_nd_list_attribute_after_the_arrays() -> None:
    got = sg.nd.array([[1.0], [2.0]]).broadcast_to([2, 3]).asnumpy()
    np.testing.assert_array_equal(got, np.repeat([[1.0], [2.0]], 3, axis=1))


MX_NAMES = """
import json, sys
from collections import defaultdict
import mxnet as mx
S = mx.sym
mx.AttrScope._subgraph_names = defaultdict(int)
x = S.var("x")
for _ in range(2):
    S.contrib.cond(x.sum() > 0, lambda: x * 2, lambda: x * 3, name="c")
S.contrib.foreach(lambda d, s: (S.contrib.cond(d.sum() > 0, lambda: d, lambda: -d), s),
                  x, [], name="f")
data = S.var("data", shape=(0, 3, 8, 8))
outs, _ = S.contrib.foreach(lambda d, st: (d + st[0], [st[0] * 2]), data, [S.var("st")])
args, out_shapes, _ = outs.infer_shape_partial()
print(json.dumps({"names": dict(mx.AttrScope._subgraph_names), "args": args,
                  "outs": out_shapes}))
"""


@pytest.mark.mxnet
def test_names_and_partial_shapes_match_mxnet() -> None:
    ref = mxnet_json(MX_NAMES, {})
    ref["names"].pop("foreach")  # (the shape case's loop: counted there, not in _count_names)
    assert _count_names() == ref["names"]
    args, outs = _unknown_length_shapes()
    assert args == [tuple(a) for a in ref["args"]]
    assert outs == [tuple(o) for o in ref["outs"]]
