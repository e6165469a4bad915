"""Higher-order gradients through ``autograd.grad(create_graph=True)``: second and third
derivatives of unary ops and of graphs whose head gradients differ in shape from the
variable (reductions, reshapes, broadcasts, FullyConnected), checked against float64 central
differences of the gradient one order lower, which is itself checked against central
differences of a numpy float64 function."""
from __future__ import annotations

from typing import Callable

import numpy as np
import pytest

import symgraph as sg
from symgraph.frontend import autograd as ag
from symgraph import nd
from symgraph.core.base import ShapeError
from symgraph.interop.test_utils import assert_almost_equal

H = 1e-6


def _var(x: np.ndarray) -> sg.nd.NDArray:
    a = nd.array(x, dtype=np.float64)
    a.attach_grad()
    return a


def _first_grad(f: Callable, x0: np.ndarray, hg1: np.ndarray) -> np.ndarray:
    """d(sum(hg1 * f(x)))/dx at x0, as symgraph computes it without create_graph."""
    x = _var(x0)
    with ag.record():
        y = f(x)
    return ag.grad(y, [x], head_grads=[nd.array(hg1, dtype=np.float64)])[0].asnumpy()


def _central(fn: Callable[[np.ndarray], float], x0: np.ndarray) -> np.ndarray:
    """Central differences of a scalar function, one element at a time."""
    out = np.zeros_like(x0)
    for i in np.ndindex(x0.shape):
        up, down = x0.copy(), x0.copy()
        up[i] += H
        down[i] -= H
        out[i] = (fn(up) - fn(down)) / (2 * H)
    return out


def _second_grad(f: Callable, x0: np.ndarray, hg1: np.ndarray,
                 hg2: np.ndarray) -> np.ndarray:
    x = _var(x0)
    with ag.record():
        g1 = ag.grad(f(x), [x], head_grads=[nd.array(hg1, dtype=np.float64)],
                     create_graph=True)[0]
        g2 = ag.grad(g1, [x], head_grads=[nd.array(hg2, dtype=np.float64)],
                     create_graph=True)[0]
    assert g1.shape == x0.shape and g2.shape == x0.shape
    return g2.asnumpy()


# name: (symgraph op, numpy float64 function, sampler of valid inputs)
UNARY = {
    "sin": (nd.sin, np.sin, lambda r, s: r.normal(size=s)),
    "tan": (nd.tan, np.tan, lambda r, s: r.uniform(-1, 1, s)),
    "log": (nd.log, np.log, lambda r, s: r.uniform(0.5, 2, s)),
    "log2": (nd.log2, np.log2, lambda r, s: r.uniform(0.5, 2, s)),
    "sqrt": (nd.sqrt, np.sqrt, lambda r, s: r.uniform(0.5, 2, s)),
    "rsqrt": (nd.rsqrt, lambda x: 1 / np.sqrt(x), lambda r, s: r.uniform(0.5, 2, s)),
    "cbrt": (nd.cbrt, np.cbrt, lambda r, s: r.uniform(0.5, 2, s)),
    "reciprocal": (nd.reciprocal, lambda x: 1 / x, lambda r, s: r.uniform(0.5, 2, s)),
    "sigmoid": (nd.sigmoid, lambda x: 1 / (1 + np.exp(-x)), lambda r, s: r.normal(size=s)),
    "tanh": (nd.tanh, np.tanh, lambda r, s: r.normal(size=s)),
    "arcsin": (nd.arcsin, np.arcsin, lambda r, s: r.uniform(-0.8, 0.8, s)),
    "arctan": (nd.arctan, np.arctan, lambda r, s: r.normal(size=s)),
    "arcsinh": (nd.arcsinh, np.arcsinh, lambda r, s: r.normal(size=s)),
    "arccosh": (nd.arccosh, np.arccosh, lambda r, s: r.uniform(1.5, 3, s)),
    "arctanh": (nd.arctanh, np.arctanh, lambda r, s: r.uniform(-0.8, 0.8, s)),
    "expm1": (nd.expm1, np.expm1, lambda r, s: r.normal(size=s)),
    "log1p": (nd.log1p, np.log1p, lambda r, s: r.uniform(-0.5, 1, s)),
}


@pytest.mark.parametrize("name", sorted(UNARY))
@pytest.mark.parametrize("shape", [(5,), (2, 3)])
def test_unary_second_order(name: str, shape: tuple, rng) -> None:
    op, ref, sample = UNARY[name]
    x0 = sample(rng, shape)
    hg1, hg2 = rng.normal(size=shape), rng.normal(size=shape)
    g1 = _first_grad(op, x0, hg1)
    assert_almost_equal(g1, _central(lambda x: float((hg1 * ref(x)).sum()), x0),
                        rtol=1e-6, atol=1e-8)
    want = _central(lambda x: float((hg2 * _first_grad(op, x, hg1)).sum()), x0)
    assert_almost_equal(_second_grad(op, x0, hg1, hg2), want, rtol=1e-5, atol=1e-7)


def _fc(x: nd.NDArray) -> nd.NDArray:
    w = nd.array(np.linspace(-1, 1, 8).reshape(2, 4), dtype=np.float64)
    b = nd.array([0.5, -0.25], dtype=np.float64)
    return nd.FullyConnected(nd.tanh(x), w, b, num_hidden=2)


# Graphs whose output (and so the first head gradient) has another shape than x (3, 4).
GRAPHS = {
    "sum_axis": (lambda x: nd.sum(nd.sin(x) * x, axis=1), (3,)),
    "reshape": (lambda x: nd.reshape(nd.exp(x) * x, (12,)), (12,)),
    "broadcast": (lambda x: nd.broadcast_mul(nd.sin(x), nd.sum(x, axis=0, keepdims=True)),
                  (3, 4)),
    "dot": (lambda x: nd.dot(x * x, nd.array(np.ones((4, 2)), dtype=np.float64)), (3, 2)),
    "fully_connected": (_fc, (3, 2)),
    "mean_all": (lambda x: nd.mean(x * x * x), (1,)),
}


@pytest.mark.parametrize("name", sorted(GRAPHS))
def test_head_gradient_of_another_shape(name: str, rng) -> None:
    f, out_shape = GRAPHS[name]
    x0 = rng.normal(size=(3, 4))
    hg1, hg2 = rng.normal(size=out_shape), rng.normal(size=(3, 4))
    want = _central(lambda x: float((hg2 * _first_grad(f, x, hg1)).sum()), x0)
    assert_almost_equal(_second_grad(f, x0, hg1, hg2), want, rtol=1e-5, atol=1e-7)


def test_third_order_and_backward(rng) -> None:
    """Three nested grads, then backward() of the third: the fourth derivative of sin."""
    x0 = rng.normal(size=(2, 3))
    hgs = [rng.normal(size=(2, 3)) for _ in range(3)]
    x = _var(x0)
    with ag.record():
        y = nd.sin(x)
        for hg in hgs:
            y = ag.grad(y, [x], head_grads=[nd.array(hg, dtype=np.float64)],
                        create_graph=True)[0]
    y.backward()
    # d3/dx3 sin = -cos, so the third-order array is -cos(x) * hg1 * hg2 * hg3.
    scale = hgs[0] * hgs[1] * hgs[2]
    assert_almost_equal(y.asnumpy(), -np.cos(x0) * scale, rtol=1e-10, atol=1e-12)
    want = _central(lambda v: float((-np.cos(v) * scale).sum()), x0)
    assert_almost_equal(x.grad.asnumpy(), want, rtol=1e-6, atol=1e-8)


def test_grad_returns_a_list_for_one_variable(rng) -> None:
    x = _var(rng.normal(size=(3, 4)))
    with ag.record():
        y = nd.sin(x)
    for create in (False, True):
        got = ag.grad(y, x, create_graph=create, retain_graph=True)
        assert isinstance(got, list) and len(got) == 1 and got[0].shape == (3, 4)


def test_head_gradient_shape_mismatch_is_refused(rng) -> None:
    x = _var(rng.normal(size=(3, 4)))
    hg0 = rng.normal(size=(1, 4))
    hg = nd.array(hg0, dtype=np.float64)
    with ag.record():
        y = nd.sin(x)
        with pytest.raises(ShapeError, match=r"head_grads\[0\] has shape \(1, 4\).*\(3, 4\)"):
            ag.grad(y, [x], head_grads=[hg], create_graph=True)
    assert np.array_equal(hg.asnumpy(), hg0)  # the user's array is left alone
