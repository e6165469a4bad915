"""``sg.contrib.autograd`` (MXNet's older interface): one switch for recording and training,
``grad_and_loss``/``grad`` with ``argnum``, against float64 numpy derivatives."""
from __future__ import annotations

import numpy as np
import pytest

import symgraph as sg
from symgraph.frontend import autograd as ag
from symgraph.core.base import AttrError
from symgraph.interop.contrib import autograd as cag
from symgraph.interop.test_utils import assert_almost_equal


def test_sections_switch_recording_and_training_together() -> None:
    assert not ag.is_recording() and not ag.is_training()
    with cag.train_section():
        assert ag.is_recording() and ag.is_training()
        with cag.test_section():
            assert not ag.is_recording() and not ag.is_training()
        assert ag.is_recording() and ag.is_training()
    assert not ag.is_recording() and not ag.is_training()
    assert cag.set_is_training(True) is False and cag.set_is_training(False) is True


def test_grad_and_loss_with_argnum(rng) -> None:
    a0, b0 = rng.normal(size=(2, 3)), rng.normal(size=(2, 3))
    a, b = sg.nd.array(a0, dtype=np.float64), sg.nd.array(b0, dtype=np.float64)
    grads, loss = cag.grad_and_loss(lambda x, y: sg.nd.exp(x) * y)(a, b)
    assert_almost_equal(loss.asnumpy(), np.exp(a0) * b0, rtol=1e-12)
    assert_almost_equal(grads[0].asnumpy(), np.exp(a0) * b0, rtol=1e-12)
    assert_almost_equal(grads[1].asnumpy(), np.exp(a0), rtol=1e-12)
    only_b = cag.grad(lambda x, y: sg.nd.exp(x) * y, argnum=[1])(a, b)
    assert len(only_b) == 1
    assert_almost_equal(only_b[0].asnumpy(), np.exp(a0), rtol=1e-12)


def test_mark_variables_and_backward_with_out_grads(rng) -> None:
    x0, g0 = rng.normal(size=4), rng.normal(size=4)
    x = sg.nd.array(x0, dtype=np.float64)
    dx = sg.nd.zeros((4,), dtype=np.float64)
    cag.mark_variables([x], [dx])
    with cag.train_section():
        y = x * x * x
    cag.backward([y], [sg.nd.array(g0, dtype=np.float64)])
    assert_almost_equal(dx.asnumpy(), 3 * x0 ** 2 * g0, rtol=1e-12)


def test_bad_arguments_are_refused() -> None:
    f = cag.grad(lambda x: x * 2)
    with pytest.raises(AttrError, match="argument 0 is a list"):
        f([1.0, 2.0])
    with pytest.raises(AttrError, match="argnum 3 is out of range for 1"):
        cag.grad(lambda x: x * 2, argnum=3)(sg.nd.ones(2))
