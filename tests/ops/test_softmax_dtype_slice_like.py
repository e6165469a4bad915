"""softmax/log_softmax/softmin with ``dtype`` (output in it, gradient back in the input's
dtype) and slice_like with a shape_like of another dtype, against float64 numpy."""
from __future__ import annotations

import numpy as np
import pytest

import symgraph as sg


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


@pytest.mark.parametrize("op, ref", [
    ("softmax", _softmax), ("softmin", lambda x: _softmax(-x)),
    ("log_softmax", lambda x: np.log(_softmax(x)))])
def test_softmax_dtype(op: str, ref) -> None:
    x64 = np.random.default_rng(3).uniform(-2, 2, (4, 6))
    x = sg.nd.array(x64, dtype="float16")
    x.attach_grad()
    head = np.arange(24.0).reshape(4, 6) / 24
    with sg.autograd.record():
        y = getattr(sg.nd, op)(x, axis=-1, dtype="float32")
    y.backward(sg.nd.array(head, dtype="float32"))
    assert y.dtype == np.float32 and x.grad.dtype == np.float16
    xs = x.asnumpy().astype(np.float64)  # the float16 values the op read
    np.testing.assert_allclose(y.asnumpy(), ref(xs), rtol=1e-5, atol=1e-6)
    eps, num = 1e-6, np.zeros_like(xs)
    for i in np.ndindex(xs.shape):
        d = np.zeros_like(xs)
        d[i] = eps
        num[i] = ((ref(xs + d) - ref(xs - d)) * head).sum() / (2 * eps)
    np.testing.assert_allclose(x.grad.asnumpy(), num, rtol=2e-2, atol=2e-3)


def test_slice_like_reads_only_the_shape_of_shape_like() -> None:
    x = np.arange(12.0).reshape(3, 4)
    z = sg.nd.slice_like(sg.nd.array(x), sg.nd.zeros((2, 3)).astype("int32"))
    assert z.dtype == np.float32
    np.testing.assert_array_equal(z.asnumpy(), x[:2, :3])
