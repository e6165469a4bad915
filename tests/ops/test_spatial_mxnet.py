"""The layer, attention and loss ops of ops/{sampler,resize,correlation,deformable,attention,
loss_extra,contrib_small,boolean_mask}.py against MXNet 1.9.1 run live: outputs and input
gradients (head gradient 1, 2, 3, ...) of the same float32 inputs. Marked ``mxnet``; skipped
unless ``SYMGRAPH_MXNET_PYTHON`` (default /tmp/mxvenv/bin/python) imports mxnet. MXNet's CPU
has no fft/ifft/count_sketch (GPU-only there) nor a modulated deformable backward: those are
checked against float64 finite differences in tests/ops/cases_spatial.py."""
from __future__ import annotations

import textwrap

import numpy as np
import pytest

import symgraph as sg
from tests.mxnet_live import ND_CASES, check_nd_case, mxnet_json

pytestmark = pytest.mark.mxnet


def _r(seed: int, *shape: int, low: float = -1.0, high: float = 1.0) -> list:
    return np.random.default_rng(seed).uniform(low, high, shape).astype(np.float32).tolist()


THETA = (np.array([[0.9, 0.2, 0.1, -0.15, 1.1, -0.05], [1.2, -0.3, 0.3, 0.25, 0.8, 0.2]])
         .astype(np.float32).tolist())
IMG = _r(1, 2, 3, 5, 6)
# name: (expression over nd and inputs a, b, c, d, e; inputs; differentiated inputs)
CASES = {
    "grid_affine": ("nd.GridGenerator(a, transform_type='affine', target_shape=(4, 7))",
                    [THETA], [0]),
    "grid_warp": ("nd.GridGenerator(a, transform_type='warp')", [_r(2, 2, 2, 4, 5, low=-2,
                                                                     high=2)], [0]),
    "sampler": ("nd.BilinearSampler(a, b)", [IMG, _r(3, 2, 2, 4, 3, low=-1.3, high=1.3)],
                [0, 1]),
    "st": ("nd.SpatialTransformer(a, b, target_shape=(4, 3), transform_type='affine', "
           "sampler_type='bilinear')", [IMG, THETA], [0, 1]),
    "resize": ("nd.contrib.BilinearResize2D(a, height=9, width=4)", [IMG], [0]),
    "resize_noalign": ("nd.contrib.BilinearResize2D(a, height=3, width=11, "
                       "align_corners=False)", [IMG], [0]),
    "resize_odd": ("nd.contrib.BilinearResize2D(a, scale_height=2.0, scale_width=0.5, "
                   "mode='odd_scale')", [IMG], [0]),
    "resize_like": ("nd.contrib.BilinearResize2D(a, b, mode='like')",
                    [IMG, _r(4, 1, 1, 7, 3)], []),  # (MXNet's backward of 'like' crashes)
    "adaptive": ("nd.contrib.AdaptiveAvgPooling2D(a, output_size=(4, 3))", [IMG], [0]),
    "adaptive1": ("nd.contrib.AdaptiveAvgPooling2D(a)", [IMG], [0]),
    "corr": ("nd.Correlation(a, b, kernel_size=3, max_displacement=1, stride1=2, pad_size=2)",
             [IMG, _r(5, 2, 3, 5, 6)], [0, 1]),
    "corr_abs": ("nd.Correlation(a, b, max_displacement=4, stride2=2, pad_size=4, "
                 "is_multiply=False)", [IMG, _r(6, 2, 3, 5, 6)], [0, 1]),
    "modulated": ("nd.contrib.ModulatedDeformableConvolution(a, b, c, d, e, kernel=(3, 2), "
                  "stride=(2, 1), dilate=(1, 2), pad=(1, 0), num_filter=3, num_group=1, "
                  "num_deformable_group=3)",
                  [IMG, _r(7, 2, 36, 3, 4, low=-1.5, high=1.5), _r(8, 2, 18, 3, 4, low=0,
                                                                  high=1),
                   _r(9, 3, 3, 3, 2), _r(10, 3)], []),
    "deformable": ("nd.contrib.DeformableConvolution(a, b, c, d, kernel=(3, 2), stride=(2, 1), "
                   "dilate=(1, 2), pad=(1, 0), num_filter=3, num_deformable_group=3)",
                   [IMG, _r(7, 2, 36, 3, 4, low=-1.5, high=1.5), _r(9, 3, 3, 3, 2),
                    _r(10, 3)], [0, 1, 2, 3]),
    "selfatt": ("nd.contrib.interleaved_matmul_selfatt_qk(a, heads=3)", [_r(11, 4, 2, 18)],
                [0]),
    "selfatt_val": ("nd.contrib.interleaved_matmul_selfatt_valatt(a, b, heads=3)",
                    [_r(11, 4, 2, 18), _r(12, 6, 4, 4)], [0, 1]),
    "encdec": ("nd.contrib.interleaved_matmul_encdec_qk(a, b, heads=3)",
               [_r(13, 4, 2, 6), _r(14, 5, 2, 12)], [0, 1]),
    "encdec_val": ("nd.contrib.interleaved_matmul_encdec_valatt(a, b, heads=3)",
                   [_r(14, 5, 2, 12), _r(15, 6, 4, 5)], [0, 1]),
    "svm_l2": ("nd.SVMOutput(a, b, margin=1.5, regularization_coefficient=0.5)",
               [_r(16, 5, 4, low=-3, high=3), [0, 3, 1, 1, 2]], [0]),
    "svm_l1": ("nd.SVMOutput(a, b, use_linear=True)", [_r(17, 5, 4, low=-3, high=3),
                                                       [0, 3, 1, 1, 2]], [0]),
    "stack": ("nd.stack(a, b, axis=2)", [_r(18, 2, 3), _r(19, 2, 3)], [0, 1]),
    "quadratic": ("nd.contrib.quadratic(a, a=0.5, b=-2, c=1)", [_r(20, 2, 3)], [0]),
    "gradmult": ("nd.contrib.gradientmultiplier(a, scalar=3)", [_r(21, 2, 3)], [0]),
    "round_ste": ("nd.contrib.round_ste(a)", [_r(22, 2, 3, low=-3, high=3)], [0]),
    "sign_ste": ("nd.contrib.sign_ste(a)", [_r(23, 2, 3)], [0]),
    "boolean_mask": ("nd.contrib.boolean_mask(a, b)", [_r(24, 4, 3), [0, 2, 0, 1]], [0]),
}


@pytest.fixture(scope="module")
def mxnet_results() -> dict:
    return mxnet_json(ND_CASES, CASES, timeout=600)


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_mxnet(name: str, mxnet_results: dict) -> None:
    check_nd_case(name, CASES[name], mxnet_results[name], rtol=1e-4)


KL_CHILD = textwrap.dedent("""
    import json, sys
    import mxnet as mx
    import numpy as np
    x = np.array(json.load(sys.stdin), dtype=np.float32)
    s = mx.sym.IdentityAttachKLSparseReg(mx.sym.var('data'), name='kl', penalty=0.01)
    ex = s.simple_bind(mx.cpu(), data=x.shape)
    ex.aux_dict['kl_moving_avg'][:] = 0.3
    ex.forward(is_train=True, data=x)
    ex.backward(mx.nd.ones(x.shape))
    print(json.dumps([ex.aux_dict['kl_moving_avg'].asnumpy().tolist(),
                      ex.grad_dict['data'].asnumpy().tolist()]))
""")


def test_kl_sparse_reg_matches_mxnet() -> None:
    """The gradient of a training step (MXNet's; it reads the updated average) and the
    updated average (numpy: MXNet's backward writes it unordered with later reads, which may
    see the old value)."""
    x = _r(30, 4, 3, low=0.05, high=0.95)
    _, grad = mxnet_json(KL_CHILD, x)
    avg = 0.9 * 0.3 + 0.1 * np.asarray(x, np.float64).mean(axis=0)
    s = sg.sym.IdentityAttachKLSparseReg(sg.sym.var("data"), name="kl", penalty=0.01)
    ex = s.simple_bind(sg.cpu(), data=(4, 3))
    ex.aux_dict["kl_moving_avg"][:] = 0.3
    ex.forward(is_train=True, data=np.asarray(x, np.float32))
    ex.backward(sg.nd.ones((4, 3)))
    np.testing.assert_allclose(ex.aux_dict["kl_moving_avg"].asnumpy(), avg, rtol=1e-6)
    np.testing.assert_allclose(ex.grad_dict["data"].asnumpy(), grad, rtol=1e-6)

