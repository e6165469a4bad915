"""Bad input to the detection ops: a typed symgraph error naming the node, the op and the
values, raised before anything runs, with the user's arrays left as they were."""
from __future__ import annotations

import numpy as np
import pytest

import symgraph as sg
from symgraph.core.base import AttrError, ShapeError

S = sg.sym


def _bind_error(sym, shapes: dict) -> str:
    with pytest.raises(ShapeError) as err:
        sym.infer_shape(**shapes)
    return str(err.value)


def test_wrong_rois_width_names_the_op() -> None:
    d, r = S.var("data"), S.var("rois")
    for op, sym in (("pool (ROIPooling)", S.ROIPooling(d, r, (2, 2), 1.0, name="pool")),
                    ("align (_contrib_ROIAlign)", S.contrib.ROIAlign(d, r, (2, 2), 1.0,
                                                                     name="align")),
                    ("ps (_contrib_PSROIPooling)", S.contrib.PSROIPooling(
                        d, r, spatial_scale=1.0, output_dim=1, pooled_size=2, name="ps"))):
        msg = _bind_error(sym, {"data": (1, 4, 8, 8), "rois": (3, 4)})
        assert op in msg and "(3, 4)" in msg and "(R, 5)" in msg, msg


def test_bad_anchors_name_the_op() -> None:
    t = S.contrib.MultiBoxTarget(S.var("anchor"), S.var("label"), S.var("cls"), name="tgt")
    msg = _bind_error(t, {"anchor": (2, 10, 4), "label": (2, 3, 5), "cls": (2, 4, 10)})
    assert "tgt" in msg and "MultiBoxTarget" in msg and "(2, 10, 4)" in msg, msg
    d = S.contrib.MultiBoxDetection(S.var("p"), S.var("l"), S.var("a"), name="det")
    msg = _bind_error(d, {"p": (2, 4, 10), "l": (2, 36), "a": (1, 10, 4)})
    assert "det" in msg and "(2, 36)" in msg, msg


def test_psroi_channels_must_match_groups() -> None:
    p = S.contrib.PSROIPooling(S.var("data"), S.var("rois"), spatial_scale=1.0, output_dim=3,
                               pooled_size=2)
    msg = _bind_error(p, {"data": (1, 8, 8, 8), "rois": (2, 5)})
    assert "8 channels" in msg and "12" in msg, msg


def test_bad_nms_columns_and_variances_are_attr_errors() -> None:
    x = sg.nd.array(np.ones((2, 5, 6), np.float32))
    before = x.asnumpy().copy()
    with pytest.raises((AttrError, ShapeError)) as err:
        sg.nd.contrib.box_nms(x, coord_start=3).asnumpy()
    assert "coord_start" in str(err.value) and "box_nms" in str(err.value)
    np.testing.assert_array_equal(x.asnumpy(), before)
    with pytest.raises((AttrError, ShapeError)) as err:
        sg.nd.contrib.MultiBoxPrior(sg.nd.zeros((1, 1, 2, 2)), steps=(0.1, -1)).asnumpy()
    assert "steps" in str(err.value)


def test_roi_of_no_image_pools_to_zero() -> None:
    """A batch index outside [0, N) pools to 0 in every ROI op (docs/mxnet_parity.md)."""
    nd = sg.nd
    data = nd.array(np.random.default_rng(0).uniform(1, 2, (1, 8, 5, 5)))
    rois = nd.array([[3, 0, 0, 4, 4.0], [-1, 1, 1, 3, 3]])
    outs = [nd.ROIPooling(data, rois, (2, 2), 1.0), nd.contrib.ROIAlign(data, rois, (2, 2), 1.0),
            nd.contrib.PSROIPooling(data, rois, spatial_scale=1.0, output_dim=2, pooled_size=2),
            nd.contrib.DeformablePSROIPooling(data, rois, nd.zeros((2, 2, 2, 2)),
                                              spatial_scale=1.0, output_dim=2, group_size=2,
                                              pooled_size=2),
            nd.contrib.RROIAlign(data, nd.array([[5, 2, 2, 2, 2, 0.0]]), (2, 2), 1.0)]
    for y in outs:
        assert y.shape[0] in (1, 2) and not y.asnumpy().any()
