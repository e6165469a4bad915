"""``sg.nd.contrib.adamw_update`` and its mp_/multi_ forms: states, skipped steps, float16 master
weights, list checking; one step against float64 and against MXNet 1.9.1 live."""
from __future__ import annotations

import numpy as np
import pytest

import symgraph as sg
from symgraph.core.base import AttrError

from .mxnet_live import mxnet_json
from .ops.cases_adamw import adamw_ref

RNG = np.random.default_rng(7)
KW = {"lr": 0.05, "eta": 0.9, "wd": 0.02, "clip_gradient": 0.4, "beta2": 0.99}


def _arrays(shape=(3, 4)):
    w, g, m = (RNG.uniform(-1, 1, shape) for _ in range(3))
    return w, g, m, RNG.uniform(0.1, 1.0, shape)


def _ref(w, g, m, v, r, **kw):
    return adamw_ref(w, g, m, v, r, kw["lr"], kw["eta"], kw["wd"], beta2=kw["beta2"],
                     clip=kw["clip_gradient"])


def test_one_step_updates_weight_and_states() -> None:
    w, g, m, v = _arrays()
    nw, ng, nm, nv = (sg.nd.array(x) for x in (w, g, m, v))
    sg.nd.contrib.adamw_update(nw, ng, nm, nv, 3.0, out=nw, **KW)
    for got, want in zip((nw, nm, nv), _ref(w, g, m, v, 3.0, **KW)):
        np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("scale", [0.0, np.nan, np.inf, -np.inf])
def test_step_skipped_for_bad_rescale(scale: float) -> None:
    w, g, m, v = _arrays()
    nw, ng, nm, nv = (sg.nd.array(x) for x in (w, g, m, v))
    sg.nd.contrib.adamw_update(nw, ng, nm, nv, sg.nd.array([scale]), out=nw, **KW)
    for got, want in zip((nw, nm, nv), (w, m, v)):
        np.testing.assert_array_equal(got.asnumpy(), want.astype(np.float32))


def test_multi_precision_updates_master_and_float16_copy() -> None:
    w, g, m, v = _arrays()
    w16, g16 = sg.nd.array(w, dtype=np.float16), sg.nd.array(g, dtype=np.float16)
    w32, nm, nv = sg.nd.array(w), sg.nd.array(m), sg.nd.array(v)
    g_used = g.astype(np.float16).astype(np.float64)
    sg.nd.contrib.mp_adamw_update(w16, g16, nm, nv, w32, 2.0, out=w16, **KW)
    want, _, _ = _ref(w.astype(np.float32).astype(np.float64), g_used, m, v, 2.0, **KW)
    np.testing.assert_allclose(w32.asnumpy(), want, rtol=1e-5, atol=1e-6)
    assert w16.dtype == np.float16
    np.testing.assert_allclose(w16.asnumpy().astype(np.float64), want, rtol=1e-3, atol=1e-3)


def test_multi_forms_match_single_steps() -> None:
    shapes = [(3,), (2, 5), (4, 1)]
    data = [_arrays(s) for s in shapes]
    lrs, wds, etas = [0.1, 0.01, 0.05], [0.0, 0.1, 0.01], [1.0, 0.5, 0.8]
    ws, gs, ms, vs = ([sg.nd.array(d[k]) for d in data] for k in range(4))
    sg.nd.contrib.multi_adamw_update(ws, gs, ms, vs, 0.5, lrs=lrs, wds=wds, etas=etas,
                                     out=ws, clip_gradient=0.4)
    for i, (w, g, m, v) in enumerate(data):
        want = adamw_ref(w, g, m, v, 0.5, lrs[i], etas[i], wds[i], clip=0.4)
        for got, ref in zip((ws[i], ms[i], vs[i]), want):
            np.testing.assert_allclose(got.asnumpy(), ref, rtol=1e-5, atol=1e-6)


def test_bad_lists_are_refused_untouched() -> None:
    w, g, m, v = _arrays()
    ws = [sg.nd.array(w)]
    with pytest.raises(AttrError, match="multi_adamw_update.*lengths"):
        sg.nd.contrib.multi_adamw_update(ws, [sg.nd.array(g)], [], [sg.nd.array(v)], 1.0,
                                         lrs=[0.1], wds=[0.0], etas=[1.0], out=ws)
    with pytest.raises(AttrError, match="lrs has 2 values for num_weights=1"):
        sg.nd.contrib.multi_adamw_update(ws, [sg.nd.array(g)], [sg.nd.array(m)],
                                         [sg.nd.array(v)], 1.0, lrs=[0.1, 0.2], wds=[0.0],
                                         etas=[1.0], out=ws)
    np.testing.assert_array_equal(ws[0].asnumpy(), w.astype(np.float32))


def test_symbolic_front_takes_a_number() -> None:
    names = ("weight", "grad", "mean", "var")
    y = sg.sym.contrib.adamw_update(*[sg.sym.var(n) for n in names], 2.0, **KW)
    w, g, m, v = _arrays((2, 2))
    arrays = {n: sg.nd.array(x) for n, x in zip(names, (w, g, m, v))}
    exe = y.bind(sg.cpu(), {n: arrays[n] for n in names[:2]},
                 aux_states={n: arrays[n] for n in names[2:]})
    got = exe.forward()[0]
    np.testing.assert_allclose(got.asnumpy(), _ref(w, g, m, v, 2.0, **KW)[0], rtol=1e-5,
                               atol=1e-6)


MX_SCRIPT = """
import json, sys
import numpy as np
import mxnet as mx
arrays, kw = json.load(sys.stdin)
w, g, m, v = (mx.nd.array(np.array(x, np.float32)) for x in arrays)
mx.nd.contrib.adamw_update(w, g, m, v, 3.0, out=w, **kw)
ws, gs, ms, vs = ([mx.nd.array(np.array(x, np.float32))] for x in arrays)
mx.nd.contrib.multi_adamw_update(ws, gs, ms, vs, 0.5, lrs=[kw['lr']], wds=[kw['wd']],
                                 etas=[kw['eta']], out=ws)
print(json.dumps([x.asnumpy().tolist() for x in (w, m, v, ws[0], ms[0], vs[0])]))
"""


@pytest.mark.mxnet
def test_matches_mxnet() -> None:
    arrays = [x.astype(np.float32) for x in _arrays()]
    mx = mxnet_json(MX_SCRIPT, [[x.tolist() for x in arrays], KW])
    w, g, m, v = (sg.nd.array(x) for x in arrays)
    sg.nd.contrib.adamw_update(w, g, m, v, 3.0, out=w, **KW)
    ws, gs, ms, vs = ([sg.nd.array(x)] for x in arrays)
    sg.nd.contrib.multi_adamw_update(ws, gs, ms, vs, 0.5, lrs=[KW["lr"]], wds=[KW["wd"]],
                                     etas=[KW["eta"]], out=ws)
    for got, want in zip((w, m, v, ws[0], ms[0], vs[0]), mx):
        np.testing.assert_allclose(got.asnumpy(), np.array(want), rtol=1e-6, atol=1e-6)
