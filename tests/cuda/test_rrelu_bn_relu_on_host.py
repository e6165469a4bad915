"""The GPU kernels of LeakyReLU(act_type='rrelu') (a Philox draw of the slopes, then the
apply) and of BatchNormWithReLU's normalisation with relu as its epilogue, compiled as host
C++ and run on the CPU (``host_run``), against float64 numpy."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import symgraph as sg

from .host_run import host_compiler, run_on_host

pytestmark = pytest.mark.skipif(host_compiler() is None, reason="g++ not on PATH")
S = sg.sym


def test_rrelu_slopes_and_output(tmp_path: Path) -> None:
    sym = S.LeakyReLU(S.var("x"), act_type="rrelu", lower_bound=0.2, upper_bound=0.4)
    sch = sym.simple_bind(sg.cpu(), x=(3000,))._train.schedule
    x = np.random.default_rng(0).normal(size=(3000,)).astype(np.float32)
    y, mask = run_on_host(sch.steps[0], sch.shapes, sch.dtypes, [x], tmp_path, keys=[123])
    assert 0.2 <= mask.min() < 0.21 and 0.39 < mask.max() < 0.4
    assert abs(mask.mean() - 0.3) < 0.01  # 3000 uniform draws: over 5 standard deviations
    np.testing.assert_array_equal(y, np.where(x > 0, x, x * mask))


def test_batch_norm_relu_inference_kernel(tmp_path: Path) -> None:
    sym = S.contrib.BatchNormWithReLU(S.var("x"), S.var("g"), S.var("b"), S.var("mm"),
                                      S.var("mv"), fix_gamma=False, use_global_stats=True)
    sch = sym.simple_bind(sg.cpu(), x=(2, 3, 4, 5))._train.schedule
    rng = np.random.default_rng(1)
    x = rng.normal(size=(2, 3, 4, 5))
    g, b, mm = (rng.normal(size=3) for _ in range(3))
    mv = rng.uniform(0.5, 2, 3)
    ins = [v.astype(np.float32) for v in (x, g, b, mm, mv)]
    y = run_on_host(sch.steps[0], sch.shapes, sch.dtypes, ins, tmp_path)[0]
    r = lambda v: v.reshape(1, 3, 1, 1)  # noqa: E731
    want = np.maximum((x - r(mm)) / np.sqrt(r(mv) + 1e-3) * r(g) + r(b), 0.0)
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)
    assert 0.1 < (y == 0).mean() < 0.9  # both sides of the relu are exercised
