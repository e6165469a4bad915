"""A parameter that no gradient reaches (behind BlockGrad) still takes its optimizer step on a
zero gradient, as MXNet's: SGD's weight decay and momentum move it. On the GPU the fused update
tail has no slot for it, so Module falls back to the separate update (tested on both)."""
from __future__ import annotations

import numpy as np
import pytest

import symgraph as sg

S = sg.sym
LR, WD, MOM, STEPS = 0.1, 0.2, 0.9, 3


def _net():
    x = S.var("data")
    live = S.FullyConnected(x, num_hidden=3, name="live")
    blocked = S.BlockGrad(S.FullyConnected(x, num_hidden=3, name="blocked"))
    return S.SoftmaxOutput(live + blocked, name="softmax")


@pytest.mark.parametrize("ctx", ["cpu", pytest.param("gpu", marks=pytest.mark.gpu)])
def test_unreached_parameter_decays_with_momentum(ctx: str) -> None:
    rng = np.random.default_rng(3)
    x = rng.normal(size=(4, 5)).astype(np.float32)
    y = np.array([0, 1, 2, 1], np.float32)
    w0 = rng.normal(size=(3, 5)).astype(np.float32)
    mod = sg.mod.Module(_net(), context=getattr(sg, ctx)())
    mod.bind(data_shapes=[("data", x.shape)], label_shapes=[("softmax_label", y.shape)])
    mod.init_params(sg.init.Uniform(0.1))
    arg, aux = mod.get_params()
    arg["blocked_weight"] = sg.nd.array(w0)
    mod.set_params(arg, aux)
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": LR, "wd": WD,
                                                          "momentum": MOM})
    for _ in range(STEPS):
        mod.forward_backward_update(sg.io.DataBatch([sg.nd.array(x)], [sg.nd.array(y)]))
    # MXNet's SGD on a zero gradient: m = mom*m - lr*wd*w; w += m (float64 reference)
    w, m = w0.astype(np.float64), np.zeros_like(w0, np.float64)
    for _ in range(STEPS):
        m = MOM * m - LR * WD * w
        w = w + m
    got = mod.get_params()[0]["blocked_weight"].asnumpy()
    np.testing.assert_allclose(got, w, rtol=1e-5, atol=1e-6)
    assert not np.allclose(got, w0, rtol=1e-3)  # it moved
