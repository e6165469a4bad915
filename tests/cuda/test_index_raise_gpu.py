"""On the GPU: take and _gather_axis with ``mode='raise'`` clip (a kernel cannot raise; the CPU
raises DataError), and descending topk of integer data orders as the CPU's (~x, not -x)."""
from __future__ import annotations

import numpy as np
import pytest

import symgraph as sg

pytestmark = pytest.mark.gpu


def test_take_and_gather_axis_raise_mode_clip_on_the_gpu() -> None:
    ctx = sg.gpu(0)
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    idx = np.array([-7, 0, 2, 9], np.float32)
    got = sg.nd.take(sg.nd.array(a, ctx), sg.nd.array(idx, ctx), mode="raise").asnumpy()
    np.testing.assert_array_equal(got, a[np.clip(idx.astype(np.int64), 0, 2)])
    rows = np.array([[5, -1, 0, 3]] * 3, np.float32)
    got = sg.nd._gather_axis(sg.nd.array(a, ctx), sg.nd.array(rows, ctx), axis=1,
                             mode="raise").asnumpy()
    np.testing.assert_array_equal(got, np.take_along_axis(a, np.clip(rows, 0, 3).astype(int), 1))


@pytest.mark.parametrize("dtype", ["uint8", "int8", "int32"])
def test_descending_integer_topk_matches_the_cpu(dtype: str) -> None:
    info = np.iinfo(dtype)
    x = np.array([[0, 3, info.max, 3, info.min, 1]], dtype)
    want = np.argsort(-x.astype(np.float64), axis=1, kind="stable")[:, :4]
    got = sg.nd.topk(sg.nd.array(x, sg.gpu(0), dtype=dtype), axis=1, k=4,
                     dtype="int64").asnumpy()
    np.testing.assert_array_equal(got, want)
