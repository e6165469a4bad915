"""Gluon details MXNet 1.9.1's own tests rely on (checked against MXNet's behaviour, noted
per test): constants of plain values are float32, ``load_parameters(cast_dtype=True,
dtype_source='saved')`` takes the file's dtypes, initializers compare by kind and arguments,
``Parameter._grad`` follows ``grad_req``, and ``util.is_np_array`` is False."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import symgraph as sg
from symgraph.core.base import AttrError
from symgraph.gluon import Constant, nn


def test_constant_of_plain_value_is_float32() -> None:
    # MXNet 1.9.1: Constant('c', np.arange(3)).dtype is float32 (made by nd.array)
    const = Constant("c", np.array([[1, 2], [3, 4]]))
    const.initialize()
    assert const.dtype == np.float32
    x = sg.nd.ones((2, 2))
    np.testing.assert_array_equal((x + const.data()).asnumpy(), [[2, 3], [4, 5]])


def test_load_with_saved_dtype(tmp_path: Path) -> None:
    net = nn.Dense(3, in_units=2)
    net.initialize()
    net.cast("float16")
    want = net.weight.data().asnumpy()
    net.save_parameters(str(tmp_path / "p"))
    net.cast("float32")
    net.load_parameters(str(tmp_path / "p"), cast_dtype=True, dtype_source="saved")
    assert net.weight.dtype == np.float16
    np.testing.assert_array_equal(net.weight.data().asnumpy(), want)
    net.cast("float32")
    net.load_parameters(str(tmp_path / "p"), cast_dtype=True)  # 'current': cast to float32
    assert net.weight.dtype == np.float32
    with pytest.raises(AttrError, match="dtype_source"):
        net.load_parameters(str(tmp_path / "p"), cast_dtype=True, dtype_source="file")


def test_initializers_compare_by_arguments() -> None:
    assert sg.init.Constant(-10.0) == sg.init.Constant(-10.0)
    assert sg.init.Constant(1.0) != sg.init.Constant(2.0)
    assert sg.init.Uniform(0.1) != sg.init.Normal(0.1)
    assert len({sg.init.Xavier(), sg.init.Xavier()}) == 1


def test_private_grad_view_follows_grad_req() -> None:
    layer = nn.Dense(2, in_units=3)
    layer.initialize()
    assert len(layer.weight._grad) == 1
    layer.collect_params().setattr("grad_req", "null")
    assert layer.weight._grad is None
    layer.collect_params().setattr("grad_req", "write")
    assert layer.weight._grad is not None


def test_is_np_array_is_false() -> None:
    assert sg.util.is_np_array() is False


def test_block_attribute_keeps_its_block_type() -> None:
    block = sg.gluon.Block()
    block.child = sg.gluon.Block()
    block.child = nn.Dense(2)  # (a Block still)
    with pytest.raises(TypeError, match="from Dense to tuple"):
        block.child = (2,)


def test_unregistered_blocks_in_containers_warn() -> None:
    class Listed(sg.gluon.Block):
        def __init__(self) -> None:
            super().__init__()
            with self.name_scope():
                self.layers = {"a": [nn.Dense(3)]}
                self.data = {"a": "4", "b": 123}

    with pytest.warns(UserWarning, match="Listed.layers"):
        params = Listed().collect_params()
    assert len(params) == 0  # (what the warning is about: the Dense is not a child)


def test_sequential_of_hybrid_blocks_warns_on_hybridize() -> None:
    seq = nn.Sequential()
    seq.add(nn.Dense(2))
    with pytest.warns(UserWarning, match="HybridSequential"):
        seq.hybridize()


def test_step_over_constants_only_changes_nothing() -> None:
    block = sg.gluon.Block()
    const = block.params.get_constant("c", np.ones((2,)))
    block.initialize()
    sg.gluon.Trainer(block.collect_params(), "sgd", {"learning_rate": 1.0}).step(1)
    np.testing.assert_array_equal(const.data().asnumpy(), np.ones(2))


def test_split_data_gives_ndarrays() -> None:
    x = sg.nd.array(np.arange(14.0).reshape(7, 2))
    parts = sg.gluon.utils.split_data(x, 3, even_split=False)
    assert all(isinstance(p, sg.nd.NDArray) for p in parts)
    for got, want in zip(parts, np.array_split(np.arange(14.0).reshape(7, 2), 3)):
        np.testing.assert_array_equal(got.asnumpy(), want)
    with pytest.raises(ValueError, match="evenly"):
        sg.gluon.utils.split_data(x, 3)


def test_hybridized_block_takes_none_inputs() -> None:
    class Either(sg.gluon.HybridBlock):
        def hybrid_forward(self, F, a, b):
            return b if a is None else a if b is None else a + b

    class Nested(sg.gluon.HybridBlock):
        def __init__(self) -> None:
            super().__init__()
            with self.name_scope():
                self.f1, self.f2 = Either(), Either()

        def hybrid_forward(self, F, a, b):
            return self.f2(a, self.f1(a, b))

    one = sg.nd.ones((3,))
    # (None, 1) -> 1; (1, 1) -> 1 + (1 + 1); (1, None) -> 1 + 1
    for args, want in (((None, one), 1.0), ((one, one), 3.0), ((one, None), 2.0)):
        net = Nested()
        net.hybridize()
        for _ in range(2):  # (the second call runs the cached program)
            np.testing.assert_array_equal(net(*args).asnumpy(), np.full(3, want))


def test_hybrid_block_inputs_lists_and_bad_inputs() -> None:
    class Summing(sg.gluon.HybridBlock):
        def hybrid_forward(self, F, a, b):
            a = sum(a) if isinstance(a, (list, tuple)) else a
            return a + (sum(b) if isinstance(b, (list, tuple)) else b)

    ones = sg.nd.ones((4,))
    # not hybridized: a list first and a scalar work as in a plain Block (2 + 3)
    np.testing.assert_array_equal(Summing()([ones, ones], 3).asnumpy(), np.full(4, 5.0))
    for args, what in (((ones, 1), "got int"), ((ones, sg.sym.var("a")), "got Symbol"),
                       ((sg.nd.ones((4,), ctx=sg.cpu(1)), sg.nd.ones((4,), ctx=sg.cpu(2))),
                        "several contexts")):
        block = Summing()
        block.hybridize()
        with pytest.raises(ValueError, match=what):  # (MXNet raises ValueError too)
            block(*args)


def test_block_called_with_only_none_inputs_raises() -> None:
    class Either(sg.gluon.HybridBlock):
        def hybrid_forward(self, F, a, b):
            return b if a is None else a

    for hybridize in (True, False):
        block = Either()
        if hybridize:
            block.hybridize()
        with pytest.raises(ValueError, match="every input is None"):
            block(None, None)


def test_unknown_storage_type_is_an_assertion_error_and_sparse_is_refused() -> None:
    """MXNet asserts a known storage type (test_invalid_parameter_*stype); a known sparse one
    is refused by name (dense storage only)."""
    for kw in ({"stype": "invalid"}, {"grad_stype": "csv"}):
        with pytest.raises(AssertionError, match=f"{next(iter(kw))}='{next(iter(kw.values()))}'"):
            sg.gluon.Parameter("w", shape=(2,), **kw)
    with pytest.raises(AttrError, match="only stype='default'"):
        sg.gluon.Parameter("w", shape=(2,), grad_stype="row_sparse")
