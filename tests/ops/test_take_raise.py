"""``take(mode='raise')``: MXNet 1.9.1's third mode. In-range indices read what numpy's take
reads; an index outside [0, n-1] (checked before truncation, as MXNet does) is a DataError
naming the node, the index, its position and the bound, and nothing is written. The GPU
clips instead (a kernel cannot raise): its kernel is run on the host in
tests/cuda/test_take_raise_host.py."""
from __future__ import annotations

import re

import numpy as np
import pytest

import symgraph as sg
from symgraph import DataError

from ..mxnet_live import mxnet_json

DATA = np.arange(12, dtype=np.float64).reshape(3, 4) * 0.5 - 1


def _forward(idx: list, axis: int = 0, name: str = "rows"):
    sym = sg.sym.take(sg.sym.var("a"), sg.sym.var("i"), axis=axis, mode="raise", name=name)
    return sym.bind(sg.cpu(), {"a": sg.nd.array(DATA), "i": sg.nd.array(idx)})


def test_in_range_reads_numpy_rows() -> None:
    exe = _forward([[2, 0], [1.7, 0.0]])
    want = np.take(DATA, np.array([[2, 0], [1, 0]]), axis=0)
    np.testing.assert_allclose(exe.forward()[0].asnumpy(), want, rtol=1e-6)
    exe = _forward([3, -0.0], axis=-1)
    np.testing.assert_allclose(exe.forward()[0].asnumpy(), DATA[:, [3, 0]], rtol=1e-6)


@pytest.mark.parametrize("bad", [3, -1, 2.5, np.nan])
def test_out_of_range_is_a_data_error_naming_node_index_and_bound(bad: float) -> None:
    exe = _forward([0, bad])
    msg = f"rows (take): index {float(bad)} at position (1,) of the indices (2,) is outside [0, 2]"
    with pytest.raises(DataError, match=re.escape(msg)):
        exe.forward()


def test_imperative_error_leaves_inputs_alone() -> None:
    a, i = sg.nd.array(DATA), sg.nd.array([5.0])
    with pytest.raises(DataError, match=r"\(take\): index 5.0 .*outside \[0, 2\], the axis of "
                                        r"size 3"):
        sg.nd.take(a, i, mode="raise").asnumpy()
    np.testing.assert_array_equal(a.asnumpy(), DATA.astype(np.float32))
    np.testing.assert_array_equal(i.asnumpy(), [5.0])


def test_gradient_sums_rows_like_finite_differences() -> None:
    """The gradient of sum(w * take(a, i)) against float64 central differences."""
    idx = np.array([1, 1, 0, 2])
    w = np.linspace(1, 2, 16).reshape(4, 4)
    a = sg.nd.array(DATA)
    a.attach_grad()
    with sg.autograd.record():
        y = (sg.nd.take(a, sg.nd.array(idx), mode="raise") * sg.nd.array(w)).sum()
    y.backward()

    def f(x: np.ndarray) -> float:
        return float((np.take(x, idx, axis=0) * w).sum())
    num = np.zeros_like(DATA)
    for k in range(DATA.size):
        e = np.zeros(DATA.size)
        e[k] = 1e-6
        e = e.reshape(DATA.shape)
        num.reshape(-1)[k] = (f(DATA + e) - f(DATA - e)) / 2e-6
    np.testing.assert_allclose(a.grad.asnumpy(), num, rtol=1e-5, atol=1e-6)


def test_unknown_mode_is_refused() -> None:
    with pytest.raises(sg.AttrError, match="mode"):
        sg.sym.take(sg.sym.var("a"), sg.sym.var("i"), mode="fail")


MX_TAKE = """
import json, sys
import mxnet as mx
out = []
for idx in json.load(sys.stdin):
    try:
        y = mx.nd.take(mx.nd.arange(12).reshape(3, 4), mx.nd.array(idx), mode='raise')
        out.append(y.asnumpy().tolist())
    except mx.MXNetError:
        out.append(None)
print(json.dumps(out))
"""


@pytest.mark.mxnet
def test_matches_mxnet_which_indices_raise() -> None:
    cases = [[0, 2], [1.7], [2.0], [2.5], [-0.5], [3], [-1]]
    want = mxnet_json(MX_TAKE, cases)
    a = sg.nd.array(np.arange(12).reshape(3, 4))
    for idx, w in zip(cases, want):
        try:
            got = sg.nd.take(a, sg.nd.array(idx), mode="raise").asnumpy().tolist()
        except DataError:
            got = None
        assert got == w, idx
