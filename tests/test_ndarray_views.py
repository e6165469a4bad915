"""NDArray semantics MXNet's own tests rely on: views of basic indexing, indexing under
autograd, in-place reshapes, moveaxis, writes while recording; references are numpy."""
from __future__ import annotations

from itertools import product

import numpy as np
import pytest

import symgraph as sg


def test_integer_and_contiguous_slice_indexing_are_views() -> None:
    ref = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    x = sg.nd.array(ref)
    x[1][2] = -1          # a view of a view: both write x
    x[0, 1:3][:] = 7
    ref[1, 2] = -1
    ref[0, 1:3] = 7
    np.testing.assert_array_equal(x.asnumpy(), ref)
    part = x[:, 1]        # not contiguous: a copy, as MXNet
    part[:] = 100
    np.testing.assert_array_equal(x.asnumpy(), ref)
    assert x[1, 2, 3].shape == (1,)  # no 0-d results of indexing


def test_contiguity_rule_matches_numpy() -> None:
    shape = (3, 4, 5)
    base = np.arange(60).reshape(shape)
    slices = [slice(None), slice(1, 2), slice(0, 3), slice(None, None, 2), slice(None, None, -1)]
    rule = sg.nd.NDArray._basic_indexing_slice_is_contiguous
    for key in product(slices, repeat=3):
        assert rule(key, shape) == base[key].flags.c_contiguous, key


def test_indexing_while_recording_passes_gradients() -> None:
    ref = np.arange(24, dtype=np.float64).reshape(2, 3, 4)
    keys = [(1, Ellipsis, -1), (slice(2), None, 0), [1, 0], (slice(None), [2, 0]),
            np.array([[1], [0]])]
    for key in keys:
        x = sg.nd.array(ref)
        x.attach_grad()
        with sg.autograd.record():
            y = x[key]
        y.backward()
        want = np.zeros_like(ref)
        np.add.at(want, key, 1.0)
        got_y = ref[key]
        np.testing.assert_array_equal(y.asnumpy(), got_y.reshape(y.shape))
        np.testing.assert_array_equal(x.grad.asnumpy(), want)


def test_write_of_recorded_value_into_part_raises_and_keeps_data() -> None:
    x = sg.nd.ones((3, 4))
    y = sg.nd.ones((4,))
    y.attach_grad()
    with sg.autograd.record():
        with pytest.raises(sg.base.GraphError, match="Inplace operations"):
            x[0] = y
        x[:] = y * 2  # the whole array: a copy, allowed as in MXNet
    np.testing.assert_array_equal(x.asnumpy(), np.full((3, 4), 2.0))


def test_inplace_reshape_is_a_view_on_every_call() -> None:
    for _ in range(2):  # the second call once took the fast path and lost the view
        data = sg.nd.zeros((2, 3))
        ref = data.expand_dims(axis=1, inplace=True)
        data[0] = 5
        np.testing.assert_array_equal(ref.asnumpy()[0, 0], np.full(3, 5.0))


@pytest.mark.parametrize("src,dst", [(0, 2), (-1, 0), ([0, 1], [2, 3]), ([3, 0], [1, 0]),
                                     (range(4), range(4))])
def test_moveaxis_matches_numpy(src, dst) -> None:
    ref = np.arange(24.0).reshape(4, 1, 2, 3)
    got = sg.nd.moveaxis(sg.nd.array(ref), src, dst).asnumpy()
    np.testing.assert_array_equal(got, np.moveaxis(ref, src, dst))


@pytest.mark.parametrize("src,dst", [(4, 0), (0, -5), ([0, 0], [0, 1]), (0, [0, 1])])
def test_moveaxis_refuses_bad_axes(src, dst) -> None:
    with pytest.raises(ValueError):
        sg.nd.moveaxis(sg.nd.zeros((1, 2, 3, 4)), src, dst)


def test_broadcast_like_axes() -> None:
    lhs, rhs = sg.nd.ones((1, 3)), sg.nd.ones((2, 3))
    with pytest.raises(sg.ShapeError, match="empty axes tuple"):
        sg.nd.broadcast_like(lhs, rhs, lhs_axes=(), rhs_axes=())
    assert sg.nd.broadcast_like(lhs, rhs, lhs_axes=(0,)).shape == (2, 3)
    assert sg.nd.broadcast_like(lhs, rhs, lhs_axes=(0,), rhs_axes=(0,)).shape == (2, 3)
