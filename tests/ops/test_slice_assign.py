"""``_slice_assign`` / ``_slice_assign_scalar`` (and their ``_crop_assign`` spellings): outputs
against MXNet 1.9.1 run live (marked ``mxnet``), MXNet's ``out=lhs`` idiom, the gradients
MXNet lacks against numpy, and bad regions refused by name with the user's array untouched."""
from __future__ import annotations

import numpy as np
import pytest

import symgraph as sg
from symgraph.core.base import ShapeError
from tests.mxnet_live import ND_CASES, check_nd_case, mxnet_json

X = np.arange(24.0).reshape(2, 3, 4).tolist()
# name: (expression over nd and its inputs a, b; inputs; differentiated inputs: none, MXNet
# registers no gradient for these ops)
CASES = {
    "assign": ("nd._internal._slice_assign(a, b, begin=(0, 1), end=(2, 3))",
               [X, np.full((2, 2, 4), -1.0).tolist()], []),
    "assign_steps": ("nd._internal._slice_assign(a, b, begin=(None, 2, -1), end=(None, 0, 0), "
                     "step=(None, -1, -2))", [X, np.full((2, 2, 2), -3.0).tolist()], []),
    "crop_assign": ("nd._internal._crop_assign(a, b, begin=(1,), end=(2,))",
                    [X, np.zeros((1, 3, 4)).tolist()], []),
    "assign_scalar": ("nd._internal._slice_assign_scalar(a, scalar=7, begin=(0, None, 1), "
                      "end=(1, None, None), step=(1, 2, 2))", [X], []),
    "crop_assign_scalar": ("nd._internal._crop_assign_scalar(a, begin=(-1, -2), end=(None, None))",
                           [X], []),
}


@pytest.fixture(scope="module")
def mxnet_results() -> dict:
    return mxnet_json(ND_CASES, CASES)


@pytest.mark.mxnet
@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_mxnet(name: str, mxnet_results: dict) -> None:
    check_nd_case(name, CASES[name], mxnet_results[name])


def test_out_is_lhs_as_mxnet_writes_it() -> None:
    x = sg.nd.ones((2, 3, 4))
    sg.nd._internal._crop_assign(x, sg.nd.zeros((2, 1, 3)), begin=(0, 0, 0), end=(2, 1, 3),
                                 out=x)
    want = np.ones((2, 3, 4))
    want[:, :1, :3] = 0
    np.testing.assert_array_equal(x.asnumpy(), want)
    sg.nd._internal._slice_assign_scalar(x, scalar=5, begin=(1,), end=(None,), out=x)
    want[1:] = 5
    np.testing.assert_array_equal(x.asnumpy(), want)


def test_gradients_split_the_output_gradient() -> None:
    """lhs: the output gradient with the region zeroed; rhs: the region's part of it."""
    rng = np.random.default_rng(3)
    a, b = sg.nd.array(rng.normal(size=(4, 5))), sg.nd.array(rng.normal(size=(2, 2)))
    a.attach_grad()
    b.attach_grad()
    head = rng.normal(size=(4, 5))
    with sg.autograd.record():
        y = sg.nd._slice_assign(a, b, begin=(3, 0), end=(None, 4), step=(-2, 3))
    y.backward(sg.nd.array(head))
    region = np.s_[3::-2, 0:4:3]
    want_a = head.copy()
    want_a[region] = 0
    np.testing.assert_allclose(a.grad.asnumpy(), want_a, rtol=1e-6)
    np.testing.assert_allclose(b.grad.asnumpy(), head[region], rtol=1e-6)


@pytest.mark.parametrize("call,message", [
    (lambda x: sg.nd._internal._slice_assign(x, sg.nd.zeros((2, 2)), begin=(0, 0),
                                             end=(1, 2), out=x),
     "rhs has shape (2, 2), inferred (1, 2)"),
    (lambda x: sg.nd._internal._slice_assign_scalar(x, begin=(0, 0, 0), end=(1, 2, 1), out=x),
     "do not fit (2, 3)"),
    (lambda x: sg.nd._internal._slice_assign_scalar(x, begin=(0, 0), end=(1, 2), step=(0, 1),
                                                    out=x),
     "step (0, 1) contains 0"),
])
def test_bad_region_is_refused_and_data_kept(call, message: str) -> None:
    x = sg.nd.ones((2, 3))
    with pytest.raises(ShapeError, match=r"\(_slice_assign(_scalar)?\)") as err:
        call(x)
    assert message in str(err.value)
    np.testing.assert_array_equal(x.asnumpy(), np.ones((2, 3)))
