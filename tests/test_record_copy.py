"""A copy between devices inside ``autograd.record()``: refused by name for an array the
recorded graph holds (its gradient would silently be zero), allowed for everything else."""
from __future__ import annotations

import numpy as np
import pytest

import symgraph as sg


def _leaf() -> sg.nd.NDArray:
    x = sg.nd.array([1.0, 2.0, 3.0], ctx=sg.cpu(0))
    x.attach_grad()
    return x


@pytest.mark.parametrize("copy", ["as_in_context", "copyto"])
def test_recorded_copy_across_devices_is_refused(copy: str) -> None:
    x = _leaf()
    with sg.autograd.record():
        y = x * 3
        with pytest.raises(sg.BindError, match=r"cpu\(0\) to cpu\(1\).*autograd.record"):
            getattr(y, copy)(sg.cpu(1))
    np.testing.assert_array_equal(x.grad.asnumpy(), np.zeros(3))  # untouched


def test_copies_that_cut_no_gradient_still_work() -> None:
    x = _leaf()
    data = sg.nd.array([4.0, 5.0, 6.0], ctx=sg.cpu(0))
    with sg.autograd.record():
        moved = data.as_in_context(sg.cpu(1))  # not part of the recorded graph
        y = (x * 2).sum()
        with sg.autograd.pause():
            paused = x.as_in_context(sg.cpu(1))
    y.backward()
    np.testing.assert_array_equal(x.grad.asnumpy(), [2.0, 2.0, 2.0])
    assert moved.context == sg.cpu(1) and paused.context == sg.cpu(1)
    np.testing.assert_array_equal(moved.asnumpy(), [4.0, 5.0, 6.0])
    np.testing.assert_array_equal(x.as_in_context(sg.cpu(1)).asnumpy(), [1.0, 2.0, 3.0])
