"""Bad input to the layer, attention and loss ops: a typed symgraph error naming the node, the
op and the values, raised before anything runs, and the caller's arrays left untouched."""
from __future__ import annotations

import numpy as np
import pytest

import symgraph as sg
from symgraph.core.base import AttrError, DataError, ShapeError

S = sg.sym
x, y = S.var("x"), S.var("y")

# (symbol, input shapes, error type, message pattern)
STATIC = [
    (S.Correlation(x, y, kernel_size=2, name="corr"), {"x": (1, 1, 8, 8), "y": (1, 1, 8, 8)},
     AttrError, r"corr \(Correlation\).*kernel_size=2.*odd"),
    (S.Correlation(x, y, kernel_size=27, name="corr"), {"x": (1, 1, 28, 28),
                                                        "y": (1, 1, 28, 28)},
     ShapeError, r"corr \(Correlation\).*no output position"),
    (S.Correlation(x, y), {"x": (1, 1, 8, 8), "y": (1, 2, 8, 8)}, ShapeError, "one shape"),
    (S.GridGenerator(x, target_shape=(3, 3), name="grid"), {"x": (2, 5)}, ShapeError,
     r"grid \(GridGenerator\).*\(2, 5\).*\(batch, 6\)"),
    (S.GridGenerator(x), {"x": (2, 6)}, AttrError, r"target_shape=\(0, 0\)"),
    (S.BilinearSampler(x, y), {"x": (2, 3, 4, 4), "y": (3, 2, 4, 4)}, ShapeError,
     r"grid \(3, 2, 4, 4\)"),
    (S.contrib.BilinearResize2D(x, mode="odd_scale"), {"x": (1, 1, 4, 4)}, AttrError,
     "scale_height"),
    (S.contrib.AdaptiveAvgPooling2D(x, output_size=(1, 2, 3)), {"x": (1, 1, 4, 4)}, AttrError,
     "output_size"),
    (S.contrib.interleaved_matmul_selfatt_qk(x, heads=4), {"x": (3, 2, 10)}, ShapeError,
     r"\(3, 2, 10\).*heads=4"),
    (S.contrib.interleaved_matmul_encdec_valatt(x, y, heads=2), {"x": (5, 2, 8),
                                                                  "y": (4, 3, 6)},
     ShapeError, r"attention \(4, 3, 6\)"),
    (S.contrib.fft(x), {"x": (6,)}, ShapeError, r"\(6,\)"),
    (S.contrib.ifft(x), {"x": (2, 5)}, ShapeError, "even"),
    (S.contrib.count_sketch(x, y, S.var("s"), out_dim=4), {"x": (2, 5), "y": (1, 4),
                                                          "s": (1, 5)},
     ShapeError, r"h \(1, 4\)"),
    (S.SVMOutput(x, y), {"x": (4, 3), "y": (3,)}, ShapeError, r"label \(3,\)"),
    (S.IdentityAttachKLSparseReg(x), {"x": (2, 3, 4)}, ShapeError, "2-d"),
    (S.contrib.boolean_mask(x, y, name="bm"), {"x": (3, 2), "y": (3,)}, ShapeError,
     r"bm \(_contrib_boolean_mask\).*depends on the values of index"),
    (S.contrib.DeformableConvolution(x, y, kernel=(3, 3), num_filter=2, name="dc"),
     {"x": (1, 2, 5, 5), "y": (1, 9, 3, 3)}, ShapeError,
     r"dc \(_contrib_DeformableConvolution\): .*offset has shape \(1, 9, 3, 3\), expected "
     r"\(1, 18, 3, 3\)"),
    (S.stack(x, y), {"x": (2, 3), "y": (3, 2)}, ShapeError, "one shape"),
]


@pytest.mark.parametrize("sym,shapes,err,pattern", STATIC,
                         ids=[f"{s.list_outputs()[0]}-{i}" for i, (s, *_) in enumerate(STATIC)])
def test_static_errors_are_typed(sym, shapes, err, pattern) -> None:
    with pytest.raises(err, match=pattern):
        sym.infer_shape(**shapes)


def test_bad_bucket_is_a_data_error_and_inputs_are_untouched() -> None:
    data = np.arange(10, dtype=np.float32).reshape(2, 5)
    h = np.array([[0, 1, 2, 3, 9]], np.float32)
    arrays = [sg.nd.array(v) for v in (data, h, np.ones((1, 5), np.float32))]
    with pytest.raises(DataError, match=r"buckets 0\.\.9, outside 0\.\.3"):
        sg.nd.contrib.count_sketch(*arrays, out_dim=4).asnumpy()
    np.testing.assert_array_equal(arrays[0].asnumpy(), data)
    np.testing.assert_array_equal(arrays[1].asnumpy(), h)


def test_boolean_mask_count_must_match_the_index() -> None:
    exe = S.contrib.boolean_mask(x, y, num_selected=1).bind(
        sg.cpu(), {"x": sg.nd.ones((3, 2)), "y": sg.nd.array([1.0, 1.0, 0.0])})
    with pytest.raises(DataError, match="selects 2 rows.*num_selected=1"):
        exe.forward()
