"""The classic indexing, rearranging and math ops against MXNet 1.9.1 run live: outputs and
input gradients (head gradient 1, 2, 3, ...) of the same float32 inputs. Marked ``mxnet``;
skipped unless ``SYMGRAPH_MXNET_PYTHON`` (default /tmp/mxvenv/bin/python) imports mxnet."""
from __future__ import annotations

import numpy as np
import pytest

from tests.mxnet_live import ND_CASES, check_nd_case, mxnet_json

pytestmark = pytest.mark.mxnet
L = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
X4 = np.arange(2 * 8 * 4 * 6, dtype=np.float32).reshape(2, 8, 4, 6).tolist()
# name: (expression over nd and its inputs a, b, c; inputs; differentiated inputs)
CASES = {
    "gather_nd": ("nd.gather_nd(a, b)", [L, [[1, 1, 1], [0, 2, 0]]], [0]),
    # MXNet's gradient drops negative indices (docs/mxnet_parity.md): outputs only
    "gather_nd_negative": ("nd.gather_nd(a, b)", [L, [[1, 1, -1], [0, 2, 0]]], []),
    "scatter_nd": ("nd.scatter_nd(a, b, shape=(2, 3))", [[1.0, 2.0, 3.0], [[1, 1, 0], [0, 2, 1]]],
                   [0]),
    "ravel": ("nd.ravel_multi_index(a, shape=(2, 3))", [[[1, 0, 5], [2, 1, -1]]], []),
    "unravel": ("nd.unravel_index(a, shape=(2, 3))", [[5, 1, 9, -1]], []),
    "index_copy": ("nd.contrib.index_copy(a, b, c)", [L, [1], [[7.0, 8.0, 9.0]]], [0, 2]),
    "index_array": ("nd.contrib.index_array(a, axes=(1,))", [L], []),
    "arange_like": ("nd.contrib.arange_like(a, start=1, step=2, repeat=2)", [L], []),
    "fill_element": ("nd.fill_element_0index(a, b, c)", [L, [9.0, 8.0], [2, 0]], []),
    "choose": ("nd.choose_element_0index(a, b)", [L, [2, 0]], [0]),
    "d2s": ("nd.depth_to_space(a, 2)", [X4], [0]),
    "s2d": ("nd.space_to_depth(a, 2)", [np.arange(48.0).reshape(1, 3, 4, 4).tolist()], [0]),
    "diag": ("nd.diag(a, k=1)", [L], [0]),
    "diag1": ("nd.diag(a, k=-1)", [[1.0, 2.0]], [0]),
    "diag3": ("nd.diag(a, k=1, axis1=2, axis2=0)", [np.arange(24.0).reshape(3, 2, 4).tolist()],
              [0]),
    "crop": ("nd.Crop(a, offset=(1, 2), h_w=(2, 2))", [X4], [0]),
    "crop_like": ("nd.Crop(a, b, center_crop=True)", [X4, np.zeros((1, 1, 1, 2)).tolist()], [0]),
    "im2col": ("nd.im2col(a, kernel=(2, 2), stride=(1, 2), pad=(1, 0))", [X4], [0]),
    "col2im": ("nd.col2im(a, output_size=(3, 4), kernel=(2, 2), stride=(1, 2), pad=(1, 0))",
               [np.linspace(-1, 1, 2 * 8 * 8).reshape(2, 8, 8).tolist()], [0]),
    "cumsum": ("nd.cumsum(a, axis=1)", [L], [0]),
    "cumsum_flat": ("nd.cumsum(a)", [L], [0]),
    "max_axis": ("nd.max_axis(a, axis=1)", [L], [0]),
    "min_axis": ("nd.min_axis(a, axis=0)", [L], [0]),
    "hard_sigmoid": ("nd.hard_sigmoid(a)", [[[-3.0, -2.4, 0.0, 1.3, 3.0]]], [0]),
    "erfinv": ("nd.erfinv(a)", [[[-0.5, 0.0, 0.3, 0.9]]], [0]),
    "allclose": ("nd.contrib.allclose(a, b, rtol=0.04)", [[1.0, 2.1], [1.0, 2.0]], []),
    "allclose_nan": ("nd.contrib.allclose(a, b)", [[1.0, float("nan")], [1.0, float("nan")]],
                     []),
    "div_sqrt_dim": ("nd.contrib.div_sqrt_dim(a)", [L], [0]),
}


@pytest.fixture(scope="module")
def mxnet_results() -> dict:
    return mxnet_json(ND_CASES, CASES, timeout=600)


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_mxnet(name: str, mxnet_results: dict) -> None:
    check_nd_case(name, CASES[name], mxnet_results[name])
