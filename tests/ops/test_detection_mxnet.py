"""The detection ops against MXNet 1.9.1 run live on the same random float32 inputs: every
output, and the data gradient (head gradient 1, 2, 3, ...) of the ROI ops. Marked ``mxnet``;
skipped unless ``SYMGRAPH_MXNET_PYTHON`` (default /tmp/mxvenv/bin/python) imports mxnet."""
from __future__ import annotations

import numpy as np
import pytest

import symgraph as sg
from tests.mxnet_live import mxnet_json
from tests.mxnet_live import ND_CASES as CHILD

pytestmark = pytest.mark.mxnet
R = np.random.default_rng(7)


def _rois(n: int, batch: int, size: float) -> list:
    xy = R.uniform(0, size * 0.7, (n, 2))
    wh = R.uniform(1.0, size * 0.5, (n, 2))
    return np.concatenate([R.integers(0, batch, (n, 1)), xy, xy + wh], 1).tolist()


def _boxes(*shape: int) -> np.ndarray:
    xy = R.uniform(0, 0.7, shape + (2,))
    return np.concatenate([xy, xy + R.uniform(0.05, 0.4, shape + (2,))], -1)


def _dets(b: int, n: int, classes: int) -> list:
    ids = R.integers(-1, classes, (b, n, 1)).astype(float)
    scores = np.round(R.uniform(0, 1, (b, n, 1)), 1)  # ties: the stable order decides
    return np.concatenate([ids, scores, _boxes(b, n)], -1).tolist()


def _labels() -> list:
    lab = np.full((2, 4, 5), -1.0)
    lab[0, :3] = np.concatenate([[[0], [2], [1]], _boxes(3)], 1)
    lab[1, :1] = np.concatenate([[[1]], _boxes(1)], 1)
    return lab.tolist()


ROTATED = np.concatenate([R.integers(0, 2, (4, 1)), R.uniform(3, 10, (4, 2)),
                          R.uniform(2, 8, (4, 2)), R.uniform(-90, 90, (4, 1))], 1).tolist()
DATA = R.normal(size=(2, 8, 6, 7)).tolist()
ANCHORS = _boxes(1, 30)
SOFT = np.exp(R.normal(size=(2, 3, 30)))
PROB = (SOFT / SOFT.sum(1, keepdims=True)).tolist()
_RPN = np.exp(R.normal(size=(2, 2, 4, 6, 7)))
RPN_SCORE = (_RPN / _RPN.sum(1, keepdims=True)).reshape(2, 8, 6, 7).tolist()
RPN_DELTA = (R.normal(size=(2, 16, 6, 7)) * 0.2).tolist()
# name: (expression over nd and its inputs a, b, c, ...; inputs; differentiated inputs)
CASES = {
    "roi_pool": ("nd.ROIPooling(a, b, pooled_size=(3, 2), spatial_scale=0.5)",
                 [DATA, _rois(5, 2, 14)], [0]),
    "roi_align": ("nd.contrib.ROIAlign(a, b, pooled_size=(3, 3), spatial_scale=0.5)",
                  [DATA, _rois(5, 2, 14)], [0]),
    "roi_align_ratio": ("nd.contrib.ROIAlign(a, b, (2, 2), 0.7, sample_ratio=2, aligned=True)",
                        [DATA, _rois(4, 2, 10)], [0]),
    "roi_align_ps": ("nd.contrib.ROIAlign(a, b, (2, 2), 0.5, position_sensitive=True)",
                     [DATA, _rois(4, 2, 14)], [0]),
    "psroi": ("nd.contrib.PSROIPooling(a, b, spatial_scale=0.5, output_dim=2, pooled_size=2)",
              [DATA, _rois(4, 2, 14)], [0]),
    "rroi_align": ("nd.contrib.RROIAlign(a, b, pooled_size=(2, 3), spatial_scale=0.5, "
                   "sampling_ratio=2)", [DATA, ROTATED], []),
    "rroi_align_adaptive": ("nd.contrib.RROIAlign(a, b, (3, 2), 0.6)", [DATA, ROTATED], []),
    "deformable": ("nd.contrib.DeformablePSROIPooling(a, b, c, spatial_scale=0.5, output_dim=2, "
                   "group_size=2, pooled_size=3, part_size=2, sample_per_part=2, "
                   "trans_std=0.3)",
                   [DATA, _rois(3, 2, 14), (R.normal(size=(3, 2, 2, 2)) * 0.5).tolist()],
                   [0, 2]),
    "deformable_no_trans": ("nd.contrib.DeformablePSROIPooling(a, b, spatial_scale=0.5, "
                            "output_dim=2, group_size=2, pooled_size=2, no_trans=True)",
                            [DATA, _rois(3, 2, 14)], [0]),
    "box_iou": ("nd.contrib.box_iou(a, b)", [_boxes(2, 5).tolist(), _boxes(3).tolist()], []),
    "box_iou_center": ("nd.contrib.box_iou(a, b, format='center')",
                       [_boxes(4).tolist(), _boxes(3).tolist()], []),
    "box_nms": ("nd.contrib.box_nms(a, overlap_thresh=0.3, valid_thresh=0.15, topk=8, "
                "id_index=0, force_suppress=False)", [_dets(2, 12, 3)], []),
    "box_nms_center": ("nd.contrib.box_nms(a, overlap_thresh=0.2, in_format='center', "
                       "out_format='corner', force_suppress=True)", [_dets(1, 10, 2)], []),
    "bipartite": ("nd.contrib.bipartite_matching(a, threshold=0.2, topk=2)",
                  [np.round(R.uniform(0, 1, (2, 4, 3)), 1).tolist()], []),
    "box_encode": ("nd.contrib.box_encode(a, b, c, d, e, f)",
                   [[[1, 0, 1, 1]], [[0, 1, 1, 0]], _boxes(1, 4).tolist(), _boxes(1, 2).tolist(),
                    [0.0, 0.1, 0.0, -0.1], [0.1, 0.1, 0.2, 0.2]], []),
    "box_decode": ("nd.contrib.box_decode(a, b, std0=0.1, std1=0.1, std2=0.2, std3=0.2, "
                   "clip=1.5, format='corner')",
                   [R.normal(size=(2, 4, 4)).tolist(), _boxes(1, 4).tolist()], []),
    "prior": ("nd.contrib.MultiBoxPrior(a, sizes=(0.5, 0.25), ratios=(1, 2, 0.5), clip=True)",
              [np.zeros((1, 2, 3, 4)).tolist()], []),
    "prior_steps": ("nd.contrib.MultiBoxPrior(a, sizes=(0.3,), steps=(0.2, 0.25), "
                    "offsets=(0.4, 0.6))", [np.zeros((1, 1, 2, 3)).tolist()], []),
    "target": ("nd.contrib.MultiBoxTarget(a, b, c, overlap_threshold=0.3)",
               [ANCHORS.tolist(), _labels(), R.normal(size=(2, 3, 30)).tolist()], []),
    "target_mining": ("nd.contrib.MultiBoxTarget(a, b, c, negative_mining_ratio=2, "
                      "negative_mining_thresh=0.4)",
                      [ANCHORS.tolist(), _labels(), R.normal(size=(2, 3, 30)).tolist()], []),
    "detection": ("nd.contrib.MultiBoxDetection(a, b, c, threshold=0.2, nms_threshold=0.3)",
                  [PROB, (R.normal(size=(2, 120)) * 0.3).tolist(), ANCHORS.tolist()], []),
    "detection_topk": ("nd.contrib.MultiBoxDetection(a, b, c, nms_topk=5, force_suppress=True, "
                       "clip=False)",
                       [PROB, (R.normal(size=(2, 120)) * 0.3).tolist(), ANCHORS.tolist()], []),
    "proposal": ("nd.contrib.Proposal(a, b, c, rpn_pre_nms_top_n=40, rpn_post_nms_top_n=12, "
                 "threshold=0.6, rpn_min_size=4, scales=(2, 4), ratios=(0.5, 1), "
                 "feature_stride=8, output_score=True)",
                 [RPN_SCORE[:1], RPN_DELTA[:1], [[40.0, 48.0, 1.0]]], []),
    "multi_proposal": ("nd.contrib.MultiProposal(a, b, c, rpn_pre_nms_top_n=30, "
                       "rpn_post_nms_top_n=10, threshold=0.5, rpn_min_size=8, scales=(2, 4), "
                       "ratios=(0.5, 1), feature_stride=8, output_score=True, iou_loss=False)",
                       [RPN_SCORE, RPN_DELTA, [[40.0, 48.0, 1.0], [30.0, 33.0, 0.8]]], []),
}



def _symgraph(expr: str, inputs: list, wrt: list, ctx: object = None) -> list:
    """Outputs and input gradients of ``expr`` run by symgraph (on ``ctx``, default the CPU)."""
    xs = [sg.nd.array(np.asarray(v, np.float32), ctx) for v in inputs]
    for k in wrt:
        xs[k].attach_grad()
    with sg.autograd.record():
        y = eval(expr, {"nd": sg.nd}, dict(zip("abcdef", xs)))  # noqa: S307 (the table above)
    ys = list(y) if isinstance(y, (list, tuple)) else [y]
    if wrt:
        head = np.arange(1, ys[0].size + 1, dtype=np.float32).reshape(ys[0].shape)
        ys[0].backward(sg.nd.array(head, ctx))
    return [v.asnumpy().astype(float) for v in ys] + [xs[k].grad.asnumpy() for k in wrt]


@pytest.fixture(scope="module")
def mxnet_results() -> dict:
    return mxnet_json(CHILD, CASES, timeout=600)


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_mxnet(name: str, mxnet_results: dict) -> None:
    """Every output, then each differentiated input's gradient, within 1e-4 (float32)."""
    pairs = list(zip(_symgraph(*CASES[name]), mxnet_results[name], strict=True))
    for k, (ours, theirs) in enumerate(pairs):
        np.testing.assert_allclose(ours, np.asarray(theirs, float), rtol=1e-4, atol=1e-4,
                                   err_msg=f"{name} output/gradient {k}")
