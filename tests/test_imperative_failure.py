"""An imperative computation that fails: the error is raised where its result is read (again
on every read), the arrays its failure does not reach still compute, and flushing pending work
before an unrelated write does not raise it."""
from __future__ import annotations

import numpy as np
import pytest

from symgraph import nd
from symgraph.core.base import DataError


def _bad_ctc(labels: nd.NDArray) -> nd.NDArray:
    # Label 3 is the blank of a 4-letter alphabet with blank_label='last': refused by value.
    return nd.CTCLoss(nd.ones((20, 2, 4)), labels, blank_label="last")


def test_failure_is_raised_where_read_and_spares_the_rest() -> None:
    a0 = np.array([1.0, 2.0])
    a = nd.array(a0)
    before = a + 1                  # pending, in the same program as the failing op
    labels = nd.array([[3, 0], [1, 1]])
    loss = _bad_ctc(labels)
    after = before * 2
    with pytest.raises(DataError, match=r"label\[0, 0\] = 3"):
        loss.asnumpy()
    np.testing.assert_array_equal(before.asnumpy(), a0 + 1)
    np.testing.assert_array_equal(after.asnumpy(), (a0 + 1) * 2)
    w = nd.zeros(3)
    w[:] = 5.0                      # flushes pending work: the failed loss is not part of it
    np.testing.assert_array_equal(w.asnumpy(), np.full(3, 5.0))
    np.testing.assert_array_equal(a.asnumpy(), a0)  # the user's input is untouched


def test_failed_result_stays_failed_after_its_input_changes() -> None:
    labels = nd.array([[3, 0], [1, 1]])
    loss = _bad_ctc(labels)
    with pytest.raises(DataError):
        loss.asnumpy()
    labels[:] = nd.array([[1, 0], [1, 1]])  # a later write does not revive the old call
    with pytest.raises(DataError, match=r"label\[0, 0\] = 3"):
        loss.asnumpy()
    with pytest.raises(DataError):
        (loss + 1).asnumpy()        # what reads a failed result fails with its error
    assert _bad_ctc(labels).shape == (2,) and np.all(np.isfinite(_bad_ctc(labels).asnumpy()))


def test_reading_a_failed_result_leaves_no_pending_work() -> None:
    loss = _bad_ctc(nd.array([[3, 0], [1, 1]]))
    with pytest.raises(DataError):
        loss.asnumpy()
    reader = loss * 2
    with pytest.raises(DataError):
        reader.asnumpy()
    w = nd.zeros(2)
    w[:] = 1.0  # flushes: neither the failed loss nor its reader is pending any more
    assert np.array_equal(w.asnumpy(), np.ones(2))
