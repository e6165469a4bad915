"""Pieces moved below the layers that use them keep the names users reach them by, and the
registrations from above reach the lower layer.

The random generator (``core/rng``), the optimizers' formulas (``compiler/ops/update_rules``),
the initializer names (``core/init_registry``), ``Updater`` (``runtime/updater``) and the
user-kernel stream (``core/launch_stream``) sit in lower layers; ``sg.random``,
``sg.optimizer``, ``sg.init`` and ``sg.rtc`` still answer with them.
"""
from __future__ import annotations

import numpy as np
import pytest

import symgraph as sg
from symgraph.compiler.ops import custom, update_rules
from symgraph.core import init_registry, launch_stream, rng
from symgraph.core.base import AttrError, GraphError
from symgraph.runtime import updater


def test_user_names_are_the_moved_objects() -> None:
    assert sg.optimizer.UpdateRule is update_rules.UpdateRule
    assert sg.optimizer.RuleInputs is update_rules.RuleInputs
    assert sg.optimizer.Updater is updater.Updater
    assert sg.rtc.stream_scope is launch_stream.stream_scope
    assert custom.HOST_ARRAY["wrap"] is sg.nd.NDArray


def test_seed_reseeds_the_generator_the_ops_draw_from() -> None:
    sg.random.seed(11)
    assert sg.random.generator() is rng.generator()
    first = rng.generator().random(3)
    sg.random.seed(11)
    np.testing.assert_array_equal(rng.generator().random(3), first)
    # the reference: numpy's generator of the same seed
    np.testing.assert_array_equal(first, np.random.default_rng(11).random(3))


def test_dropout_reference_draws_from_the_seeded_generator() -> None:
    x = sg.nd.ones((64,))
    sg.random.seed(5)
    with sg.autograd.record():
        a = sg.nd.Dropout(x, p=0.5).asnumpy()
    sg.random.seed(5)
    with sg.autograd.record():
        b = sg.nd.Dropout(x, p=0.5).asnumpy()
    np.testing.assert_array_equal(a, b)
    assert set(np.unique(a)) <= {0.0, 2.0} and 0 < (a == 0).sum() < 64


@pytest.mark.parametrize("name", ["sgd", "nag", "adam", "rmsprop", "ftml", "lamb", "signum"])
def test_optimizer_rules_step_as_before(name: str) -> None:
    """An optimizer built on the moved rules still steps like MXNet's formula: checked for SGD
    with momentum against float64 numpy, for the others that the step moves the weight."""
    opt = sg.optimizer.create(name, learning_rate=0.1, **({"momentum": 0.9}
                                                             if name in ("sgd", "nag") else {}))
    w = np.array([1.0, -2.0, 3.0], np.float32)
    g = np.array([0.5, 0.5, -1.0], np.float32)
    state = opt.create_state(0, w)
    before = w.copy()
    opt.update(0, w, g, state)
    assert not np.allclose(w, before)
    if name == "sgd":
        mom = -0.1 * g.astype(np.float64)
        np.testing.assert_allclose(w, before + mom, rtol=1e-6)


def test_initializer_names_checked_when_json_is_read() -> None:
    assert "xavier" in init_registry.names() and sg.init.names() == init_registry.names()
    assert isinstance(init_registry.from_spec('["constant", {"value": 2.0}]'), sg.init.Constant)
    with pytest.raises(AttrError, match="unknown initializer 'nosuch'"):
        sg.init.create("nosuch")
    net = sg.sym.var("w", init="nosuch_init")
    with pytest.raises(GraphError, match="variable w: bad user attribute"):
        sg.sym.load_json(net.tojson())


def test_stream_scope_nests_and_restores() -> None:
    with launch_stream.stream_scope("outer"):
        with launch_stream.stream_scope("inner"):
            assert launch_stream.current() == "inner"
        assert launch_stream.current() == "outer"
    assert launch_stream.current() is None
