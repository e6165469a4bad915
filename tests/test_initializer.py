"""Initializers: MXNet's Xavier/MSRAPrelu scales, name-based defaults, ``__init__`` attribute,
reproducibility under ``sg.random.seed``."""
from __future__ import annotations

import numpy as np
import pytest

import symgraph as sg
from symgraph.core.base import AttrError


def _draw(init, name, shape, attrs=None):
    arr = sg.nd.zeros(shape)
    init(sg.init.InitDesc(name, attrs or {}), arr)
    return arr.asnumpy()


@pytest.mark.parametrize("factor_type,magnitude", [("avg", 3), ("in", 2), ("out", 1)])
def test_xavier_uniform_bound(factor_type, magnitude):
    shape = (64, 32, 3, 3)
    fan_in, fan_out = 32 * 9, 64 * 9
    factor = {"avg": (fan_in + fan_out) / 2, "in": fan_in, "out": fan_out}[factor_type]
    bound = np.sqrt(magnitude / factor)
    w = _draw(sg.init.Xavier("uniform", factor_type, magnitude), "c_weight", shape)
    assert np.abs(w).max() <= bound * (1 + 1e-6)
    assert np.abs(w).max() > 0.95 * bound
    assert w.std() == pytest.approx(bound / np.sqrt(3), rel=0.05)


def test_xavier_gaussian_and_msra():
    shape = (200, 100)
    w = _draw(sg.init.Xavier("gaussian", "in", 2), "f_weight", shape)
    assert w.std() == pytest.approx(np.sqrt(2 / 100), rel=0.05)
    w = _draw(sg.init.MSRAPrelu("avg", 0.25), "f_weight", shape)
    assert w.std() == pytest.approx(np.sqrt(2 / (1 + 0.25 ** 2) / 150), rel=0.05)


def test_name_defaults():
    init = sg.init.Uniform(0.5)
    assert (_draw(init, "fc_bias", (4,)) == 0).all()
    assert (_draw(init, "bn_gamma", (4,)) == 1).all()
    assert (_draw(init, "bn_beta", (4,)) == 0).all()
    assert (_draw(init, "bn_moving_mean", (4,)) == 0).all()
    assert (_draw(init, "bn_moving_var", (4,)) == 1).all()
    w = _draw(init, "fc_weight", (50, 40))
    assert np.abs(w).max() <= 0.5 and w.std() > 0.2


def test_init_attribute_and_constant():
    v = sg.sym.var("fc_bias", init=sg.init.Constant(2.5))
    attrs = v.list_attr()
    assert (_draw(sg.init.Uniform(), "fc_bias", (3,), attrs) == 2.5).all()
    assert (_draw(sg.init.Zero(), "w_weight", (2, 2), {"__init__": '["one", {}]'}) == 1).all()
    w = _draw(sg.init.Zero(), "x_weight", (100,), {"__init__": sg.init.Normal(3.0).dumps()})
    assert w.std() == pytest.approx(3.0, rel=0.2)


def test_seeded():
    sg.random.seed(7)
    a = _draw(sg.init.Xavier(), "a_weight", (5, 5))
    sg.random.seed(7)
    b = _draw(sg.init.Xavier(), "a_weight", (5, 5))
    np.testing.assert_array_equal(a, b)


def test_bad_input():
    with pytest.raises(AttrError, match="no initialisation rule"):
        _draw(sg.init.Uniform(), "mystery", (2,))
    with pytest.raises(AttrError, match="rnd_type"):
        sg.init.Xavier(rnd_type="normal")
    with pytest.raises(AttrError, match="at least 2 dimensions"):
        _draw(sg.init.Xavier(), "v_weight", (5,))
    with pytest.raises(AttrError, match="unknown initializer"):
        sg.init.create("glorot")
