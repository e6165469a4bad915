"""A Python CustomOp instance belongs to one executor (as in MXNet): two
executors never share the state a forward keeps for its backward, and instances are freed with
their executor."""
from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

import symgraph as sg

LIVE: "weakref.WeakSet[SaveSquare]" = weakref.WeakSet()
CREATED: list[int] = []


class SaveSquare(sg.operator.CustomOp):
    """y = x^2; forward keeps x on the instance, backward reads it (dy * 2x)."""

    def forward(self, is_train, req, in_data, out_data, aux):
        self.saved = in_data[0].asnumpy().copy()
        self.assign(out_data[0], req[0], self.saved ** 2)

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        self.assign(in_grad[0], req[0], out_grad[0].asnumpy() * 2 * self.saved)


@sg.operator.register("safety_save_square")
class SaveSquareProp(sg.operator.CustomOpProp):
    def create_operator(self, ctx, in_shapes, in_dtypes):
        op = SaveSquare()
        LIVE.add(op)
        CREATED.append(id(op))
        return op


def _sym() -> sg.sym.Symbol:
    return sg.sym.Custom(sg.sym.var("x"), op_type="safety_save_square", name="sq")


def _exe(x: np.ndarray, ctx: sg.Context = None) -> sg.Executor:
    ctx = ctx or sg.cpu()
    return _sym().bind(ctx, {"x": sg.nd.array(x, ctx)},
                       args_grad={"x": sg.nd.zeros(x.shape, ctx)})


CTXS = [pytest.param("cpu"), pytest.param("gpu", marks=pytest.mark.gpu)]


@pytest.mark.parametrize("device", CTXS)
def test_two_executors_keep_their_own_state(device: str) -> None:
    ctx = sg.gpu() if device == "gpu" else sg.cpu()
    a = _exe(np.array([1., 2., 3.]), ctx)
    b = _exe(np.array([10., 20., 30.]), ctx)
    a.forward(is_train=True)
    b.forward(is_train=True)  # a shared instance would now hold b's input
    a.backward()
    b.backward()
    np.testing.assert_array_equal(a.grad_dict["x"].asnumpy(), [2., 4., 6.])
    np.testing.assert_array_equal(b.grad_dict["x"].asnumpy(), [20., 40., 60.])
    np.testing.assert_array_equal(a.outputs[0].asnumpy(), [1., 4., 9.])
    np.testing.assert_array_equal(a.arg_dict["x"].asnumpy(), [1., 2., 3.])


def test_forward_and_backward_share_one_instance_per_executor() -> None:
    CREATED.clear()
    exe = _exe(np.array([1., 2.]))
    for _ in range(3):
        exe.forward(is_train=True)
        exe.backward()
    exe.forward(is_train=False)
    assert len(CREATED) == 1
    np.testing.assert_array_equal(exe.grad_dict["x"].asnumpy(), [2., 4.])


def test_instances_are_freed_with_their_executor() -> None:
    gc.collect()
    before = len(LIVE)
    sym = _sym()
    for batch in range(1, 201):
        exe = sym.simple_bind(sg.cpu(), x=(batch, 3))
        exe.forward(is_train=True, x=np.ones((batch, 3)))
        exe.backward()
    del exe
    gc.collect()
    assert len(LIVE) - before <= 1, f"{len(LIVE) - before} CustomOp instances still alive"


def test_an_executor_alive_keeps_its_instance() -> None:
    exe = _exe(np.array([3.]))
    exe.forward(is_train=True)
    gc.collect()
    op = next(iter(x for x in LIVE if np.array_equal(getattr(x, "saved", None), [3.])))
    ref = weakref.ref(op)
    del op
    gc.collect()
    assert ref() is not None
    exe.backward()
    np.testing.assert_array_equal(exe.grad_dict["x"].asnumpy(), [6.])
    del exe
    gc.collect()
    assert ref() is None


PROPS: "weakref.WeakSet[CountedProp]" = weakref.WeakSet()


@sg.operator.register("safety_counted")
class CountedProp(sg.operator.CustomOpProp):
    """A description with a keyword argument: one prop per distinct value."""

    def __init__(self, k: str = "0") -> None:
        super().__init__()
        PROPS.add(self)

    def create_operator(self, ctx, in_shapes, in_dtypes):
        return SaveSquare()


def test_descriptions_are_not_kept_forever() -> None:
    """Props are cached by attributes for speed, but only the most recent ones (a prop may hold
    user objects, e.g. an autograd.Function call)."""
    from symgraph.compiler.ops.custom import PROP_CACHE_SIZE
    for k in range(PROP_CACHE_SIZE + 100):
        sym = sg.sym.Custom(sg.sym.var("x"), op_type="safety_counted", k=k)
        assert len(PROPS) <= PROP_CACHE_SIZE + 2
    exe = sym.simple_bind(sg.cpu(), grad_req="null", x=(2,))
    np.testing.assert_array_equal(exe.forward(x=np.array([1., 3.]))[0].asnumpy(), [1., 9.])
    del sym, exe
    gc.collect()
    assert len(PROPS) <= PROP_CACHE_SIZE + 1
