"""The rank-sort kernel (``kernels_sort.render_rank``) on integer data, compiled as host C++
and run one thread at a time (``host_run``): sort, argsort and topk orders against numpy's
stable argsort in float64 (exact for these values), including int32 values a float cannot tell
apart."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import symgraph as sg

from .host_run import host_compiler, run_on_host

pytestmark = pytest.mark.skipif(host_compiler() is None, reason="g++ not on PATH")
S = sg.sym


def _run(y: sg.sym.Symbol, x: np.ndarray, tmp: Path) -> list:
    exe = y.simple_bind(sg.cpu(), grad_req="null", type_dict={"x": x.dtype.name}, x=x.shape)
    sch = exe._infer.schedule
    (step,) = [st for st in sch.steps if st.node.op in ("topk", "sort", "argsort")]
    return run_on_host(step, sch.shapes, sch.dtypes, [x], tmp)


@pytest.mark.parametrize("dtype", ["uint8", "int8", "int32", "int64"])
def test_integer_rank_sort_orders_as_numpy(dtype: str, tmp_path: Path) -> None:
    info = np.iinfo(dtype)
    big = min(info.max, 2**24 + 3)  # 2**24 + 1 .. + 3 round to one float32
    row = [0, 3, info.max, 3, info.min, 1, big, big - 1, big - 2]
    x = np.array([row, row[::-1]], dtype)
    key = x.astype(np.float64)
    down = np.argsort(-key, axis=1, kind="stable")
    up = np.argsort(key, axis=1, kind="stable")
    v = S.var("x")
    cases = [(S.topk(v, axis=1, k=5, dtype="int64"), [down[:, :5]]),
             (S.topk(v, axis=1, k=4, ret_typ="both", dtype="int32"),
              [np.take_along_axis(x, down[:, :4], 1), down[:, :4]]),
             (S.sort(v, axis=1), [np.take_along_axis(x, up, 1)]),
             (S.argsort(v, axis=1, is_ascend=False, dtype="float32"), [down])]
    for k, (y, want) in enumerate(cases):
        (tmp_path / str(k)).mkdir()
        got = _run(y, x, tmp_path / str(k))
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w.astype(g.dtype), err_msg=f"case {k}, {dtype}")
