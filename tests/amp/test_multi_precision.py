"""multi_precision=True: float32 master weights for float16/bfloat16 weights, the update in
float32 and the narrow weight written, against an independent float64 numpy reference."""
from __future__ import annotations

import numpy as np
import pytest

import symgraph as sg
from symgraph.core.dtypes import as_dtype


def _sgd_mom_ref(w, grads, lr, mom, wd, rescale):
    w, m = w.astype(np.float64), np.zeros_like(w, np.float64)
    for g in grads:
        m = mom * m - lr * (rescale * g + wd * w)
        w = w + m
    return w


def _adam_ref(w, grads, lr, b1, b2, eps, wd, rescale):
    w = w.astype(np.float64)
    m, v = np.zeros_like(w), np.zeros_like(w)
    for t, g in enumerate(grads, 1):
        g = rescale * g + wd * w
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        w = w - lr * np.sqrt(1 - b2 ** t) / (1 - b1 ** t) * m / (np.sqrt(v) + eps)
    return w


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("name", ["sgd", "adam"])
def test_master_weights_match_float64(dtype: str, name: str) -> None:
    rng = np.random.default_rng(1)
    dt = as_dtype(dtype)
    w0 = rng.normal(size=50).astype(dt)
    grads = [rng.normal(size=50).astype(dt) for _ in range(5)]
    g64 = [g.astype(np.float64) for g in grads]
    if name == "sgd":
        opt = sg.optimizer.SGD(learning_rate=0.1, momentum=0.9, wd=1e-3, rescale_grad=0.5,
                               multi_precision=True)
        want = _sgd_mom_ref(w0.astype(np.float64), g64, 0.1, 0.9, 1e-3, 0.5)
    else:
        opt = sg.optimizer.Adam(learning_rate=0.01, wd=1e-3, rescale_grad=0.5,
                                multi_precision=True)
        want = _adam_ref(w0.astype(np.float64), g64, 0.01, 0.9, 0.999, 1e-8, 1e-3, 0.5)
    w = sg.nd.array(w0.astype(np.float64), dtype=dt)
    upd = sg.optimizer.get_updater(opt)
    for g in grads:
        upd(0, sg.nd.array(g.astype(np.float64), dtype=dt), w)
    master = upd.states[0][0]
    assert master.dtype == np.float32 and w.dtype == dt
    np.testing.assert_allclose(master, want, rtol=1e-5, atol=1e-6)
    # the narrow weight is the master rounded to the narrow dtype
    np.testing.assert_array_equal(w.asnumpy(), master.astype(dt))


def test_small_updates_accumulate_only_with_master_weights() -> None:
    """lr * grad below half a float16 ulp of the weight: without a master copy the weight
    never moves; with one, the updates add up."""
    res = {}
    for mp in (False, True):
        w = sg.nd.ones((4,), dtype="float16")
        upd = sg.optimizer.get_updater(sg.optimizer.SGD(learning_rate=1e-4,
                                                         multi_precision=mp))
        for _ in range(100):
            upd(0, sg.nd.ones((4,), dtype="float16"), w)
        res[mp] = w.asnumpy().astype(np.float64)
    np.testing.assert_array_equal(res[False], 1.0)
    np.testing.assert_allclose(res[True], 1.0 - 100 * 1e-4, atol=5e-4)


def test_float32_weights_keep_the_plain_rule() -> None:
    opt = sg.optimizer.SGD(learning_rate=0.1, momentum=0.9, multi_precision=True)
    state = opt.create_state(0, sg.nd.ones((3,)))
    assert len(state) == 1  # no master copy for float32 weights


def test_master_rule_is_printable_as_a_fused_kernel() -> None:
    """The master-weight rule comes from the same formulas, so the fused-update codegen can
    print it (the narrow store itself is the dtype-generic kernels' work)."""
    from symgraph.runtime.cuda.update_kernel import render_update
    rule = sg.optimizer.Adam(multi_precision=True).mp_rule
    assert rule.states == ("weight32", "mean", "var")
    src = render_update(rule).source
    assert "fused_adam_mp_update_f32" in src
