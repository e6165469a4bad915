"""sg.nd arrays and the sg.test_utils checkers (which must catch real mismatches)."""
from __future__ import annotations

import numpy as np
import pytest

import symgraph as sg
from symgraph.interop.test_utils import (check_numeric_gradient, check_symbolic_backward,
                                 check_symbolic_forward)


def test_ndarray_basics(rng) -> None:
    host = rng.normal(size=(2, 3))
    a = sg.nd.array(host)
    assert a.dtype == np.float32 and a.shape == (2, 3) and a.context == sg.cpu()
    np.testing.assert_allclose(a.asnumpy(), host.astype(np.float32))
    b = sg.nd.zeros((2, 3))
    a.copyto(b)
    np.testing.assert_array_equal(b.asnumpy(), a.asnumpy())
    c = a.copyto(sg.cpu())
    c[:] = 7
    assert np.all(c.asnumpy() == 7) and not np.all(a.asnumpy() == 7)  # a copy, not a view
    b[:] = 1.5  # broadcast assignment
    np.testing.assert_array_equal(b.asnumpy(), np.full((2, 3), 1.5, np.float32))
    assert sg.nd.ones(4, dtype=np.float64).asnumpy().dtype == np.float64
    with pytest.raises(sg.BindError, match=r"shape \(4,\).*\(2, 3\)"):
        b[:] = np.ones(4)
    with pytest.raises(sg.BindError, match="copyto"):
        a.copyto(sg.nd.zeros((3, 2)))


def test_asnumpy_is_a_copy() -> None:
    a = sg.nd.zeros((3,))
    view = a.asnumpy()
    view[:] = 5
    assert np.all(a.asnumpy() == 0)


def test_check_symbolic_forward_and_backward(rng) -> None:
    x = sg.sym.var("x")
    y = sg.sym.tanh(x) * 3
    xv, hv = rng.normal(size=(4,)), rng.normal(size=(4,))
    check_symbolic_forward(y, [xv], [3 * np.tanh(xv)], rtol=1e-5, atol=1e-6)
    check_symbolic_backward(y, [xv], [hv], [3 * hv * (1 - np.tanh(xv) ** 2)], rtol=1e-4,
                            atol=1e-6)
    with pytest.raises(AssertionError, match="output 0"):
        check_symbolic_forward(y, [xv], [3 * np.tanh(xv) + 0.1], rtol=1e-5, atol=1e-6)
    with pytest.raises(AssertionError, match="gradient of x"):
        check_symbolic_backward(y, [xv], [hv], [hv], rtol=1e-4, atol=1e-6)


def test_check_numeric_gradient_rejects_a_wrong_gradient(rng) -> None:
    """A gradient rule that is off by a factor is caught (the checker can fail)."""
    x = sg.sym.var("x")
    wrong = sg.sym.BlockGrad(x) * x  # true derivative 2x; symbolic gives x
    with pytest.raises(AssertionError, match="symbolic gradient of x"):
        check_numeric_gradient(wrong, {"x": rng.uniform(0.5, 1.5, size=(3,))})
    check_numeric_gradient(x * x, {"x": rng.uniform(0.5, 1.5, size=(3,))})
