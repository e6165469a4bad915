"""The ``linalg`` family and ``khatri_rao`` against MXNet 1.9.1 run live: outputs and input
gradients (head gradient 1, 2, 3, ...) of the same float32 inputs, through the runner of
tests/ops/test_seqops_mxnet.py. Marked ``mxnet``; skipped unless MXNet is installed."""
from __future__ import annotations

import numpy as np
import pytest

from tests.mxnet_live import ND_CASES as CHILD, nd_case as _symgraph
from tests.mxnet_live import mxnet_json

pytestmark = pytest.mark.mxnet
RNG = np.random.default_rng(7)


def _m(*shape: int, spd: bool = False, well: bool = False) -> list:
    x = RNG.normal(size=shape)
    if spd:
        x = x @ np.swapaxes(x, -1, -2) + np.eye(shape[-1])
    if well:
        x = 0.5 * x + 3 * np.eye(shape[-1])
    return x.round(3).tolist()


def _flat(call: str) -> str:
    """Several outputs as one vector (the runner differentiates one array)."""
    return f"nd.concat(*[o.reshape((-1,)) for o in {call}], dim=0)"


# name: (expression over nd and inputs a, b, c; inputs; differentiated inputs)
CASES = {
    "gemm": ("nd.linalg.gemm(a, b, c, transpose_b=True, alpha=2.0, beta=0.5)",
             [_m(2, 3, 4), _m(2, 5, 4), _m(2, 3, 5)], [0, 1, 2]),
    "gemm2_axis": ("nd.linalg.gemm2(a, b, axis=0, transpose_a=True)",
                   [_m(4, 2, 3), _m(4, 2, 5)], [0, 1]),
    "syrk": ("nd.linalg.syrk(a, transpose=True, alpha=0.5)", [_m(2, 3, 4)], [0]),
    "trmm": ("nd.linalg.trmm(a, b, rightside=True, transpose=True, lower=False, alpha=2.0)",
             [_m(3, 3), _m(2, 3)], [0, 1]),
    "trsm": ("nd.linalg.trsm(a, b, transpose=True, alpha=0.5)", [_m(2, 3, 3, well=True),
                                                                  _m(2, 3, 2)], [0, 1]),
    "trsm_right_upper": ("nd.linalg.trsm(a, b, rightside=True, lower=False)",
                         [_m(3, 3, well=True), _m(2, 3)], [0, 1]),
    "potrf": ("nd.linalg.potrf(a)", [_m(2, 3, 3, spd=True)], [0]),
    "potri": ("nd.linalg.potri(a)", [_m(3, 3, well=True)], [0]),
    "gelqf": (_flat("nd.linalg.gelqf(a)"), [_m(2, 2, 4)], [0]),
    "syevd": (_flat("nd.linalg.syevd(a)"), [_m(2, 3, 3, spd=True)], [0]),
    "inverse": ("nd.linalg.inverse(a)", [_m(2, 3, 3, well=True)], [0]),
    "det": ("nd.linalg.det(a)", [_m(2, 3, 3)], [0]),
    "slogdet": (_flat("nd.linalg.slogdet(a)"), [_m(3, 3, 3)], [0]),
    "sumlogdiag": ("nd.linalg.sumlogdiag(a)", [_m(2, 3, 3, spd=True)], [0]),
    "extractdiag": ("nd.linalg.extractdiag(a, offset=-1)", [_m(2, 3, 3)], [0]),
    "makediag": ("nd.linalg.makediag(a, offset=2)", [_m(2, 3)], [0]),
    "extracttrian": ("nd.linalg.extracttrian(a, offset=1)", [_m(2, 4, 4)], [0]),
    "extracttrian_upper": ("nd.linalg.extracttrian(a, lower=False)", [_m(3, 3)], [0]),
    "maketrian": ("nd.linalg.maketrian(a, offset=-1)", [_m(2, 6)], [0]),
    "maketrian_upper": ("nd.linalg.maketrian(a, lower=False)", [_m(6)], [0]),
    "khatri_rao": ("nd.khatri_rao(a, b, c)", [_m(2, 3), _m(3, 3), _m(2, 3)], []),
}


@pytest.fixture(scope="module")
def mxnet_results() -> dict:
    return mxnet_json(CHILD, CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_linalg_matches_mxnet(name: str, mxnet_results: dict) -> None:
    """Output first, then the gradient of each differentiated input."""
    pairs = list(zip(_symgraph(*CASES[name]), mxnet_results[name], strict=True))
    for k, (ours, theirs) in enumerate(pairs):
        np.testing.assert_allclose(ours, np.asarray(theirs, float), rtol=2e-4, atol=2e-4,
                                   err_msg=f"{name}: result {k}")
