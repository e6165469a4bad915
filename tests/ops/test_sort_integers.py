"""Descending sort, argsort and topk of integer data: -x wraps for unsigned types (and for
int8's -128), so the numpy reference orders integers by ~x. Checked against numpy's stable
argsort of the values as float64, negated."""
from __future__ import annotations

import numpy as np
import pytest

import symgraph as sg


@pytest.mark.parametrize("dtype", ["uint8", "int8", "int32", "int64"])
def test_descending_integer_order(dtype: str) -> None:
    info = np.iinfo(dtype)
    x = np.array([[0, 3, info.max, 3, info.min, 1]], dtype)
    want = np.argsort(-x.astype(np.float64), axis=1, kind="stable")
    a = sg.nd.array(x, dtype=dtype)
    got = sg.nd.argsort(a, axis=1, is_ascend=False, dtype="int64").asnumpy()
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(sg.nd.sort(a, axis=1, is_ascend=False).asnumpy(),
                                  np.take_along_axis(x, want, 1))
    vals, idx = sg.nd.topk(a, axis=1, k=4, ret_typ="both", dtype="int64")
    np.testing.assert_array_equal(idx.asnumpy(), want[:, :4])
    np.testing.assert_array_equal(vals.asnumpy(), np.take_along_axis(x, want[:, :4], 1))
