"""``sg.operator``: Python custom ops (CustomOp/CustomOpProp and NDArrayOp) inside graphs."""
from __future__ import annotations

import numpy as np
import pytest

import symgraph as sg
from symgraph.core.registry import OPAQUE, get_op
from symgraph.interop.test_utils import assert_almost_equal, check_numeric_gradient

SEEN: dict = {}


class _Affine(sg.operator.CustomOp):
    """Two inputs, two outputs: (a*x + y, x*y); keeps state from forward for backward."""

    def __init__(self, a: float) -> None:
        self.a = a

    def forward(self, is_train, req, in_data, out_data, aux):
        x, y = in_data[0].asnumpy(), in_data[1].asnumpy()
        self.assign(out_data[0], req[0], self.a * x + y)
        self.assign(out_data[1], req[1], x * y)
        self.saved = x.copy()  # the backward must see the same operator object
        SEEN["ctx"] = in_data[0].context

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        g0, g1 = out_grad[0].asnumpy(), out_grad[1].asnumpy()
        x, y = self.saved, in_data[1].asnumpy()
        SEEN["out_data"] = out_data
        self.assign(in_grad[0], req[0], self.a * g0 + g1 * y)
        self.assign(in_grad[1], req[1], g0 + g1 * x)


@sg.operator.register("test_affine")
class _AffineProp(sg.operator.CustomOpProp):
    def __init__(self, a: str = "1.0", flag: str = "False") -> None:
        super().__init__(need_top_grad=True)
        SEEN["kwargs"] = (a, flag)
        self.a = float(a)

    def list_arguments(self):
        return ["x", "y"]

    def list_outputs(self):
        return ["sum", "prod"]

    def infer_shape(self, in_shape):
        return in_shape, [in_shape[0], in_shape[0]], []

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        return out_grad + in_data  # out_data not needed

    def create_operator(self, ctx, in_shapes, in_dtypes):
        return _Affine(self.a)


class _Counter(sg.operator.CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        self.assign(out_data[0], req[0], in_data[0].asnumpy() * 2)
        aux[0][:] = aux[0].asnumpy() + 1

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        self.assign(in_grad[0], req[0], out_grad[0].asnumpy() * 2)


@sg.operator.register("test_counter")
class _CounterProp(sg.operator.CustomOpProp):
    def list_auxiliary_states(self):
        return ["count"]

    def infer_shape(self, in_shape):
        return in_shape, [in_shape[0]], [[1]]

    def create_operator(self, ctx, in_shapes, in_dtypes):
        return _Counter()


def _affine(x=None, **kw):
    x = x if x is not None else sg.sym.var("x")  # bool(Symbol) raises, as in MXNet
    return sg.sym.Custom(x=x, y=sg.sym.var("y"), op_type="test_affine",
                         name="aff", **kw)


def test_two_outputs_forward_and_kwargs_as_strings(rng) -> None:
    sym = _affine(a=3, flag=True)
    assert SEEN["kwargs"] == ("3", "True")  # MXNet passes kwargs as strings
    assert sym.list_outputs() == ["aff_sum", "aff_prod"] and sym.list_arguments() == ["x", "y"]
    x, y = rng.normal(size=(2, 3)), rng.normal(size=(2, 3))
    exe = sym.bind(sg.cpu(), {"x": sg.nd.array(x), "y": sg.nd.array(y)})
    s, p = (o.asnumpy() for o in exe.forward())
    assert_almost_equal(s, (3 * x + y).astype(np.float32), rtol=1e-6)
    assert_almost_equal(p, (x * y).astype(np.float32), rtol=1e-6)
    assert SEEN["ctx"] == sg.cpu()


def test_gradient_inside_a_graph(rng) -> None:
    x = sg.sym.var("x")
    aff = _affine(x, a=0.5)
    net = sg.sym.tanh(aff[0]) * aff[1] + x
    check_numeric_gradient(net, {"x": rng.normal(size=(3, 2)), "y": rng.normal(size=(3, 2))})
    assert SEEN["out_data"] == [None, None]  # not declared as a dependency


def test_gradient_ops_are_opaque_and_registered_once() -> None:
    assert get_op("Custom").pattern == OPAQUE and get_op("_backward_Custom").pattern == OPAQUE
    exe = _affine().simple_bind(sg.cpu(), x=(2, 2), y=(2, 2))
    ops = [st.node.op for st in exe.schedule.steps]
    assert ops.count("Custom") == 1 and ops.count("_backward_Custom") == 1


def test_grad_req_add_accumulates(rng) -> None:
    x, y = rng.normal(size=(4,)).astype(np.float32), rng.normal(size=(4,)).astype(np.float32)
    sym = sg.sym.Group([_affine(a=2)[0]])
    gx = sg.nd.ones(4)
    exe = sym.bind(sg.cpu(), {"x": sg.nd.array(x), "y": sg.nd.array(y)},
                   args_grad={"x": gx, "y": sg.nd.zeros(4)}, grad_req="add")
    exe.forward(is_train=True)
    exe.backward(sg.nd.ones(4))
    assert_almost_equal(gx, np.full(4, 3.0, np.float32))


def test_aux_state_is_updated_in_place(rng) -> None:
    sym = sg.sym.Custom(sg.sym.var("data"), op_type="test_counter", name="cnt")
    assert sym.list_arguments() == ["data"] and sym.list_auxiliary_states() == ["cnt_count"]
    count = sg.nd.zeros(1)
    exe = sym.bind(sg.cpu(), {"data": sg.nd.ones(3)}, aux_states={"cnt_count": count})
    exe.forward()
    exe.forward()
    assert count.asnumpy()[0] == 2.0
    check_numeric_gradient(sym, {"data": rng.normal(size=(3,))}, aux_states={"cnt_count": [0.0]})


def test_json_round_trip_keeps_op_type_and_kwargs(rng) -> None:
    sym = _affine(a=1.5)
    text = sym.tojson()
    assert '"op_type": "test_affine"' in text and '"a": "1.5"' in text
    again = sg.sym.load_json(text)
    assert again.tojson() == text
    x, y = rng.normal(size=(2,)).astype(np.float32), rng.normal(size=(2,)).astype(np.float32)
    out = again.bind(sg.cpu(), {"x": sg.nd.array(x), "y": sg.nd.array(y)}).forward()[0]
    assert_almost_equal(out, 1.5 * x.astype(np.float64) + y, rtol=1e-6)


def test_infer_type_default_and_override() -> None:
    sym = _affine()
    assert sym.infer_type(x=np.float64, y=np.float64)[1] == [np.dtype(np.float64)] * 2


def test_unknown_op_type() -> None:
    with pytest.raises(sg.AttrError, match="op_type 'nope' is not registered.*test_affine"):
        sg.sym.Custom(sg.sym.var("x"), op_type="nope")
    text = sg.sym.Custom(sg.sym.var("x"), op_type="test_counter").tojson()
    with pytest.raises(sg.GraphError, match="malformed symbol JSON.*op_type 'gone' is not registered"):
        sg.sym.load_json(text.replace("test_counter", "gone"))


def test_bad_inputs() -> None:
    with pytest.raises(sg.AttrError, match=r"takes inputs \['x', 'y'\]"):
        sg.sym.Custom(z=sg.sym.var("z"), op_type="test_affine")
    with pytest.raises(sg.AttrError, match="give op_type"):
        sg.sym.Custom(sg.sym.var("z"))
    with pytest.raises(sg.AttrError, match="not a CustomOpProp"):
        sg.operator.register("x")(int)


class _Twice(sg.operator.NDArrayOp):
    def forward(self, in_data, out_data):
        out_data[0][:] = in_data[0].asnumpy() * 2

    def backward(self, out_grad, in_data, out_data, in_grad):
        in_grad[0][:] = out_grad[0].asnumpy() * 2


def test_ndarrayop_gradient_and_reuse(rng) -> None:
    op = _Twice()
    a = op(data=sg.sym.var("a"), name="t1")
    b = op(a, name="t2")  # one NDArrayOp object used twice
    check_numeric_gradient(b, {"a": rng.normal(size=(2, 3))})
    exe = b.bind(sg.cpu(), {"a": sg.nd.ones((2, 3))})
    assert_almost_equal(exe.forward()[0], np.full((2, 3), 4.0, np.float32))


def test_python_exception_propagates_and_outputs_untouched() -> None:
    class Boom(sg.operator.NDArrayOp):
        def forward(self, in_data, out_data):
            out_data[0][:] = 123.0
            raise ValueError("boom")
    exe = Boom()(data=sg.sym.var("a")).bind(sg.cpu(), {"a": sg.nd.ones(2)})
    exe.outputs[0][:] = 7.0
    with pytest.raises(sg.ExecutionError, match="Boom.forward raised ValueError: boom") as info:
        exe.forward()
    assert isinstance(info.value.__cause__, ValueError)
    np.testing.assert_array_equal(exe.outputs[0].asnumpy(), [7.0, 7.0])


@sg.operator.register("test_bad_shape")
class _BadShapeProp(sg.operator.CustomOpProp):
    def infer_shape(self, in_shape):
        return in_shape, [in_shape[0], in_shape[0]], []  # two shapes for one output

    def create_operator(self, ctx, in_shapes, in_dtypes):
        return _Counter()


def test_prop_shape_rule_mistakes_are_reported() -> None:
    sym = sg.sym.Custom(sg.sym.var("data"), op_type="test_bad_shape", name="bad")
    with pytest.raises(sg.ShapeError, match=r"bad \(Custom\): .*returned 2 output.* for 1 outputs"):
        sym.infer_shape(data=(2, 3))
