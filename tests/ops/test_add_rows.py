"""``indexing.add_rows`` (take's and Embedding's gradient) against ``np.add.at`` in float64:
repeated, unsorted and absent indices, rows of any rank, an empty index, into a gradient that
already holds values."""
from __future__ import annotations

import numpy as np
import pytest

from symgraph.compiler.ops.indexing import add_rows


@pytest.mark.parametrize("n,m,tail", [(7, 30, (3,)), (50, 5, (2, 4)), (4, 100, ()),
                                      (9, 0, (2,))])
def test_add_rows_equals_add_at(n: int, m: int, tail: tuple) -> None:
    rng = np.random.default_rng(n + m)
    i = rng.integers(0, n, m)
    rows = rng.normal(size=(m,) + tail)
    want = rng.normal(size=(n,) + tail)
    got = want.copy()
    np.add.at(want, i, rows)
    add_rows(got, i, rows)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("per_row", [1, 3])
def test_scatter_axis_equals_add_at(per_row: int) -> None:
    # one index per row (pick's gradient) is a store; several may share a cell: add.at
    from symgraph.core.attrs import parse_attrs
    from symgraph.core.registry import get_op
    rng = np.random.default_rng(per_row)
    data = np.zeros((4, 6, 5))
    index = rng.integers(0, 6, (4, per_row, 5)).astype(np.float64)
    dy = rng.normal(size=index.shape)
    a = parse_attrs(get_op("_scatter_axis").params, {"axis": 1}, "")
    got = get_op("_scatter_axis").compute(a, [dy, index, data], None)[0]
    want = np.zeros(data.shape)
    grid = list(np.indices(index.shape, sparse=True))
    grid[1] = index.astype(np.int64)
    np.add.at(want, tuple(grid), dy)
    np.testing.assert_allclose(got, want, rtol=0, atol=0)
