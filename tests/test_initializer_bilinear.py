"""``init.Bilinear``, ``init.Constant`` with array values (and its JSON), PReLU's gamma starting
at 0.25; Bilinear and the JSON checked against MXNet 1.9.1 live."""
from __future__ import annotations

import json

import numpy as np
import pytest

import symgraph as sg
from symgraph.core.base import AttrError

from .mxnet_live import mxnet_json


def _bilinear_reference(shape: tuple) -> np.ndarray:
    """The kernel element by element in float64 (the up-sampling weights of a stride-f
    deconvolution: a tent of half-width f around the centre c)."""
    f = np.ceil(shape[3] / 2.0)
    c = (2 * f - 1 - f % 2) / (2.0 * f)
    out = np.zeros(shape)
    for idx in np.ndindex(*shape):
        y, x = idx[2], idx[3]
        out[idx] = (1 - abs(x / f - c)) * (1 - abs(y / f - c))
    return out


@pytest.mark.parametrize("shape", [(1, 1, 4, 4), (2, 3, 5, 6), (1, 2, 3, 3)])
def test_bilinear_matches_the_elementwise_formula(shape) -> None:
    arr = sg.nd.empty(shape)
    sg.init.Bilinear()._init_weight("up_weight", arr)
    np.testing.assert_allclose(arr.asnumpy(), _bilinear_reference(shape), rtol=1e-6)
    assert sg.init.create(sg.init.Bilinear().dumps()).dumps() == '["bilinear", {}]'


def test_bilinear_refuses_other_ranks_untouched() -> None:
    arr = sg.nd.ones((3, 4))
    with pytest.raises(AttrError, match="w: Bilinear initialises a 4-d"):
        sg.init.Bilinear()._init_weight("w", arr)
    assert (arr.asnumpy() == 1).all()


@pytest.mark.parametrize("value", [sg.nd.array([[1.0, 2.0, 3.0]]),
                                   np.array([[1.0], [2.0]]), 2.5])
def test_constant_takes_arrays_and_dumps_them_as_lists(value) -> None:
    init = sg.init.Constant(value)
    text = init.dumps()
    host = value.asnumpy() if hasattr(value, "asnumpy") else np.asarray(value)
    assert json.loads(text) == ["constant", {"value": host.tolist()}]
    for made in (init, sg.init.create(text)):
        arr = sg.nd.zeros((2, 3))
        made._init_weight("c", arr)
        np.testing.assert_array_equal(arr.asnumpy(), np.broadcast_to(host, (2, 3)))


def test_constant_of_wrong_shape_is_refused() -> None:
    with pytest.raises(AttrError, match="w: Constant value of shape \\(4,\\) does not "):
        sg.init.Constant(np.ones(4))._init_weight("w", sg.nd.zeros((2, 3)))


def test_prelu_gamma_starts_at_quarter_unless_given() -> None:
    data = sg.sym.var("data")
    for sym, want in ((sg.sym.LeakyReLU(data, act_type="prelu"), 0.25),
                      (sg.sym.LeakyReLU(data, act_type="prelu", attr={"__init__": '["one", {}]'}),
                       1.0)):
        mod = sg.mod.Module(sym, label_names=None)
        mod.bind(data_shapes=[("data", (4, 3))])
        mod.init_params()
        (gamma,) = mod.get_params()[0].values()
        np.testing.assert_array_equal(gamma.asnumpy(), np.full(3, want, np.float32))


MX_SCRIPT = """
import json, sys
import mxnet as mx
shape = tuple(json.load(sys.stdin))
a = mx.nd.empty(shape)
mx.init.Bilinear()._init_weight(None, a)
sym = mx.sym.LeakyReLU(mx.sym.var('data'), act_type='prelu', name='p')
print(json.dumps([a.asnumpy().tolist(), mx.init.Constant(mx.nd.ones((2,))).dumps(),
                  sym.attr_dict()]))
"""


@pytest.mark.mxnet
def test_matches_mxnet() -> None:
    kernel, dumped, attrs = mxnet_json(MX_SCRIPT, [2, 1, 6, 5])
    arr = sg.nd.empty((2, 1, 6, 5))
    sg.init.Bilinear()._init_weight(None, arr)
    np.testing.assert_allclose(arr.asnumpy(), np.array(kernel), rtol=1e-7)
    assert sg.init.Constant(sg.nd.ones((2,))).dumps() == dumped
    ours = sg.sym.LeakyReLU(sg.sym.var("data"), act_type="prelu", name="p").attr_dict()
    assert ours["p_gamma"]["__init__"] == attrs["p_gamma"]["__init__"]
