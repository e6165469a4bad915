"""Bad input to the classic indexing, rearranging and math ops: a typed symgraph error naming
the node, the op and the values, raised before anything runs (shapes) or by the CPU reference
(an index out of range), with the user's arrays left as they were."""
from __future__ import annotations

import numpy as np
import pytest

import symgraph as sg
from symgraph.core.base import DataError, ShapeError

S = sg.sym
x, i = S.var("x"), S.var("i")


@pytest.mark.parametrize("sym,shapes,words", [
    (S.gather_nd(x, i, name="g"), {"x": (3, 4), "i": (3, 2)}, ["g (gather_nd)", "(3, 2)"]),
    (S.depth_to_space(x, block_size=2, name="d"), {"x": (1, 6, 2, 2)},
     ["d (depth_to_space)", "(1, 6, 2, 2)", "4"]),
    (S.space_to_depth(x, block_size=3, name="s"), {"x": (1, 2, 4, 6)}, ["s (space_to_depth)"]),
    (S.diag(x, k=5, name="dg"), {"x": (3, 4)}, ["dg (diag)", "k=5"]),
    (S.Crop(x, offset=(3, 0), h_w=(2, 2), num_args=1, name="c"), {"x": (1, 1, 4, 4)},
     ["c (Crop)", "(3, 0)"]),
    (S.col2im(x, output_size=(4, 4), kernel=(2, 2), name="ci"), {"x": (1, 8, 10)},
     ["ci (col2im)", "10 blocks", "9"]),
    (S.contrib.index_copy(x, i, S.var("n"), name="ic"), {"x": (4, 3), "i": (2,), "n": (2, 5)},
     ["ic (_contrib_index_copy)", "(2, 5)", "(2, 3)"]),
    (S.ravel_multi_index(x, shape=(2, 3), name="r"), {"x": (3, 4)}, ["r (ravel_multi_index)"]),
])
def test_shape_errors_name_node_op_and_values(sym, shapes: dict, words: list) -> None:
    with pytest.raises(ShapeError) as err:
        sym.infer_shape(**shapes)
    for w in words:
        assert w in str(err.value), (w, str(err.value))


def test_index_out_of_range_is_a_data_error_and_data_is_kept() -> None:
    data = sg.nd.array(np.arange(6.0).reshape(2, 3))
    idx = sg.nd.array([[0.0, 2.0], [1.0, 0.0]])  # row 2 of 2
    before = (data.asnumpy().copy(), idx.asnumpy().copy())
    with pytest.raises(DataError, match=r"gather_nd \(axis 0\): index 2 is out of range .* 2"):
        sg.nd.gather_nd(data, idx).asnumpy()
    with pytest.raises(IndexError, match="index -4 is out of range"):  # as MXNet's and numpy's
        sg.nd.gather_nd(data, sg.nd.array([[0.0], [-4.0]])).asnumpy()
    np.testing.assert_array_equal(data.asnumpy(), before[0])
    np.testing.assert_array_equal(idx.asnumpy(), before[1])
