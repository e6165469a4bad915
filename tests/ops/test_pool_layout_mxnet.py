"""Channels-last pooling (``layout='NHWC'``, ``'NWC'``) against MXNet 1.9.1 run live (marked
``mxnet``; skipped without it): outputs and data gradients of max, average and global pooling,
with padding and both conventions, for a fixed head gradient, on the default CPU backend."""
from __future__ import annotations

import numpy as np
import pytest

import symgraph as sg
from symgraph import autograd

from ..mxnet_live import mxnet_json

pytestmark = pytest.mark.mxnet

CASES = {
    "max-pad": ((2, 7, 7, 3), dict(kernel=(3, 3), stride=(2, 2), pad=(1, 1), layout="NHWC")),
    "max-tiles": ((2, 8, 6, 4), dict(kernel=(2, 2), stride=(2, 2), layout="NHWC")),
    "avg-exclude-full": ((1, 7, 6, 2), dict(kernel=(3, 3), stride=(2, 2), pad=(1, 1),
                                           pool_type="avg", count_include_pad=False,
                                           pooling_convention="full", layout="NHWC")),
    "global-avg": ((2, 5, 4, 3), dict(kernel=(1, 1), global_pool=True, pool_type="avg",
                                      layout="NHWC")),
    "sum-1d": ((2, 9, 3), dict(kernel=(3,), stride=(2,), pool_type="sum", layout="NWC")),
}
SCRIPT = """
import json, sys
import mxnet as mx
import numpy as np
out = {}
for name, (x, kw) in json.load(sys.stdin).items():
    kw = {k: tuple(v) if isinstance(v, list) else v for k, v in kw.items()}
    a = mx.nd.array(np.array(x, np.float32))
    a.attach_grad()
    with mx.autograd.record():
        y = mx.nd.Pooling(a, **kw)
    y.backward(mx.nd.array(np.arange(1, y.size + 1, dtype=np.float32).reshape(y.shape)))
    out[name] = [y.asnumpy().tolist(), a.grad.asnumpy().tolist()]
print(json.dumps(out))
"""


def test_channels_last_pooling_matches_mxnet() -> None:
    rng = np.random.default_rng(0)
    inputs = {k: rng.normal(size=s).astype(np.float32) for k, (s, _) in CASES.items()}
    want = mxnet_json(SCRIPT, {k: [inputs[k].tolist(), kw] for k, (_, kw) in CASES.items()})
    for name, (_, kw) in CASES.items():
        a = sg.nd.array(inputs[name])
        a.attach_grad()
        with autograd.record():
            y = sg.nd.Pooling(a, **kw)
        y.backward(sg.nd.array(np.arange(1, y.size + 1, dtype=np.float32).reshape(y.shape)))
        y_mx, g_mx = (np.array(v, np.float32) for v in want[name])
        assert y.shape == y_mx.shape, name
        np.testing.assert_allclose(y.asnumpy(), y_mx, rtol=1e-5, atol=1e-6, err_msg=name)
        np.testing.assert_allclose(a.grad.asnumpy(), g_mx, rtol=1e-5, atol=1e-5, err_msg=name)
