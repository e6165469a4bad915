"""Examples of the detection ops: region pooling, anchors, proposals and box utilities."""
from __future__ import annotations

from ._text import call

# a 4x4 map whose cell (y, x) holds 4y + x: bilinear samples at whole coordinates are exact
MAP = "img = sg.nd.arange(16).reshape((1, 1, 4, 4))"
# one anchor of side 0.5 in the middle of the unit square
ANCHOR = "anchor = sg.nd.array([[[0.25, 0.25, 0.75, 0.75]]])"
# one RPN anchor (scale 2 of a 4-pixel stride: 8x8 around (1.5, 1.5)) on a 4x4 image
# (one feature cell of stride 4)
RPN = ("scores = sg.nd.array([[[[0.25]], [[0.75]]]])  # (1, 2 * anchors, H, W)",
       "deltas = sg.nd.zeros((1, 4, 1, 1))",
       "im_info = sg.nd.array([[4, 4, 1]])  # height, width, scale")
RPN_ARGS = ("scores, deltas, im_info, feature_stride=4, scales=(2,), ratios=(1,), "
            "rpn_pre_nms_top_n=1, rpn_post_nms_top_n=1, rpn_min_size=1")
# [-2, -2, 5, 5] clipped to the image's [0, 3]: (batch index, x1, y1, x2, y2)
RPN_BOX = "[[0. 0. 0. 3. 3.]]"

EXAMPLES: dict[str, str] = {
    # roi (batch, x1, y1, x2, y2) covers the whole map; each output is the max of a quadrant
    "ROIPooling": call("sg.nd.ROIPooling(img, sg.nd.array([[0, 0, 0, 3, 3]]), "
                       "pooled_size=(2, 2), spatial_scale=1.0)",
                       "[[[[ 5.  7.]\n   [13. 15.]]]]", "1x1x2x2", (MAP,)),
    # one sample per 2x2 bin, at its centre (1 or 3 on each axis)
    "_contrib_ROIAlign": call("sg.nd.contrib.ROIAlign(img, sg.nd.array([[0, 0, 0, 4, 4]]), "
                              "pooled_size=(2, 2), spatial_scale=1.0, sample_ratio=1)",
                              "[[[[ 5.  7.]\n   [13. 15.]]]]", "1x1x2x2", (MAP,)),
    # roi (batch, cx, cy, w, h, angle): unrotated, the same bins as ROIAlign's
    "_contrib_RROIAlign": call("sg.nd.contrib.RROIAlign(img, sg.nd.array([[0, 2, 2, 4, 4, 0]]), "
                               "pooled_size=(2, 2), spatial_scale=1.0, sampling_ratio=1)",
                               "[[[[ 5.  7.]\n   [13. 15.]]]]", "1x1x2x2", (MAP,)),
    # one bin over cells 0..1 on both axes: the mean of 1, 2, 3, 4
    "_contrib_PSROIPooling": call("sg.nd.contrib.PSROIPooling(sg.nd.array([[[[1, 2], [3, 4]]]]), "
                                  "sg.nd.array([[0, 0, 0, 1, 1]]), spatial_scale=1.0, "
                                  "output_dim=1, pooled_size=1)", "[[[[2.5]]]]", "1x1x1x1"),
    # a constant map pools to its constant, wherever the offsets (trans, scaled by
    # trans_std) move the bin
    "_contrib_DeformablePSROIPooling": call(
        "sg.nd.contrib.DeformablePSROIPooling(sg.nd.full((1, 1, 2, 2), 3), "
        "sg.nd.array([[0, 0, 0, 1, 1]]), sg.nd.full((1, 2, 1, 1), 0.5), "
        "spatial_scale=1.0, output_dim=1, group_size=1, pooled_size=1, trans_std=0.1)",
        "[[[[3.]]]]", "1x1x1x1"),
    # one anchor of size 0.5 centred on the single cell of a 1x1 feature map
    "_contrib_MultiBoxPrior": call("sg.nd.contrib.MultiBoxPrior(sg.nd.zeros((1, 1, 1, 1)), "
                                   "sizes=(0.5,))", "[[[0.25 0.25 0.75 0.75]]]", "1x1x4"),
    # anchor 0 is exactly the labelled box (class 0): its class target is 0 + 1 and its four
    # offsets count; anchor 1 matches nothing and is background (0)
    "_contrib_MultiBoxTarget": (
        ">>> anchors = sg.nd.array([[[0, 0, 0.5, 0.5], [0.5, 0.5, 1, 1]]])\n"
        ">>> label = sg.nd.array([[[0, 0, 0, 0.5, 0.5]]])  # (class, x1, y1, x2, y2)\n"
        ">>> loc, mask, cls = sg.nd.contrib.MultiBoxTarget(anchors, label, "
        "sg.nd.zeros((1, 2, 2)))\n"
        ">>> cls\n[[1. 0.]]\n<NDArray 1x2 @cpu(0)>\n"
        ">>> mask\n[[1. 1. 1. 1. 0. 0. 0. 0.]]\n<NDArray 1x8 @cpu(0)>\n"),
    # class 0 scores 0.75 (background 0.25); zero offsets keep the anchor: (id, score, box)
    "_contrib_MultiBoxDetection": call(
        "sg.nd.contrib.MultiBoxDetection(sg.nd.array([[[0.25], [0.75]]]), sg.nd.zeros((1, 4)), "
        "anchor)", "[[[0.   0.75 0.25 0.25 0.75 0.75]]]", "1x1x6", (ANCHOR,)),
    "_contrib_Proposal": call(f"sg.nd.contrib.Proposal({RPN_ARGS})", RPN_BOX, "1x5", RPN),
    "_contrib_MultiProposal": call(f"sg.nd.contrib.MultiProposal({RPN_ARGS})", RPN_BOX, "1x5",
                                   RPN),
    # rows (score, x1, y1, x2, y2): the 0.5 box repeats the 0.75 one (IoU 1) and is dropped;
    # kept rows come first by score, dropped ones become -1
    "_contrib_box_nms": call(
        "sg.nd.contrib.box_nms(sg.nd.array([[0.5, 0, 0, 2, 2], [0.75, 0, 0, 2, 2], "
        "[0.25, 3, 3, 4, 4]]), coord_start=1, score_index=0)",
        "[[ 0.75  0.    0.    2.    2.  ]\n [ 0.25  3.    3.    4.    4.  ]\n"
        " [-1.   -1.   -1.   -1.   -1.  ]]", "3x5"),
    # overlap 1 over union 4 + 4 - 1 = 7, then a box with itself
    "_contrib_box_iou": call("sg.nd.contrib.box_iou(sg.nd.array([[0, 0, 2, 2]]), "
                             "sg.nd.array([[1, 1, 3, 3], [0, 0, 2, 2]]))",
                             "[[0.1429 1.    ]]", "1x2"),
    # anchor (cx, cy, w, h) = (1, 1, 2, 2) moved by half its width and height: corners out
    "_contrib_box_decode": call("sg.nd.contrib.box_decode(sg.nd.array([[[0.5, 0.5, 0, 0]]]), "
                                "sg.nd.array([[[1, 1, 2, 2]]]))", "[[[1. 1. 3. 3.]]]", "1x1x4"),
    # anchor [0, 0, 2, 2] to reference [1, 1, 3, 3]: centre moves by w/2, h/2, size unchanged
    "_contrib_box_encode": (
        ">>> t, m = sg.nd.contrib.box_encode(sg.nd.array([[1]]), sg.nd.array([[0]]), "
        "sg.nd.array([[[0, 0, 2, 2]]]), sg.nd.array([[[1, 1, 3, 3]]]), sg.nd.zeros(4), "
        "sg.nd.ones(4))\n"
        ">>> t\n[[[0.5 0.5 0.  0. ]]]\n<NDArray 1x1x4 @cpu(0)>\n"),
    # greedy by score: (row 0, col 1) at 0.75, then (row 1, col 0) at 0.25; row 2 is left over
    "_contrib_bipartite_matching": (
        ">>> rows, cols = sg.nd.contrib.bipartite_matching(sg.nd.array([[0.5, 0.75], "
        "[0.25, 0.5], [0.125, 0.0625]]), threshold=0.1)\n"
        ">>> rows  # the column each row took\n[ 1.  0. -1.]\n<NDArray 3 @cpu(0)>\n"
        ">>> cols  # the row each column took\n[1. 0.]\n<NDArray 2 @cpu(0)>\n"),
}
