"""Blocks and parameters: MXNet's naming (names printed by MXNet 1.9.1 for the same code),
collect_params' regex select, deferred initialisation, save/load and the wrong-network error,
export to Module and SymbolBlock.imports, hybridized equals imperative (values and gradients)."""
from __future__ import annotations

import numpy as np
import pytest

import symgraph as sg
from symgraph.frontend import autograd
from symgraph import gluon
from symgraph.core.base import BindError, DataError, ShapeError
from symgraph.gluon import nn


class Net(gluon.HybridBlock):
    def __init__(self, **kw):
        super().__init__(**kw)
        with self.name_scope():
            self.body = nn.HybridSequential()
            with self.body.name_scope():
                self.body.add(nn.Conv2D(4, 3, activation="relu"), nn.BatchNorm(), nn.Dense(5))
            self.out = nn.Dense(2, in_units=5)

    def hybrid_forward(self, F, x):
        return self.out(self.body(x))


# What MXNet 1.9.1 prints for the same code (a fresh process: net0, net1, mynet_).
MX_ALL = ["net0_hybridsequential0_conv0_weight", "net0_hybridsequential0_conv0_bias",
          "net0_hybridsequential0_batchnorm0_gamma", "net0_hybridsequential0_batchnorm0_beta",
          "net0_hybridsequential0_batchnorm0_running_mean",
          "net0_hybridsequential0_batchnorm0_running_var",
          "net0_hybridsequential0_dense0_weight", "net0_hybridsequential0_dense0_bias",
          "net0_dense0_weight", "net0_dense0_bias"]
MX_SELECT = ["net1_hybridsequential0_conv0_weight", "net1_hybridsequential0_conv0_bias",
             "net1_hybridsequential0_dense0_weight", "net1_hybridsequential0_dense0_bias",
             "net1_dense0_weight", "net1_dense0_bias"]
MX_STRUCTURAL = ["body.0.bias", "body.0.weight", "body.1.beta", "body.1.gamma",
                 "body.1.running_mean", "body.1.running_var", "body.2.bias", "body.2.weight",
                 "out.bias", "out.weight"]


def test_names_and_regex_select_as_mxnet() -> None:
    with sg.name.NameManager():
        a, b, c = Net(), Net(), Net(prefix="mynet_")
        d, e = nn.Dense(3), nn.Dense(3)
    assert list(a.collect_params().keys()) == MX_ALL
    assert list(b.collect_params(".*weight|.*bias").keys()) == MX_SELECT
    assert list(c.collect_params(".*running").keys()) == \
        ["mynet_hybridsequential0_batchnorm0_running_mean",
         "mynet_hybridsequential0_batchnorm0_running_var"]
    assert sorted(a._collect_params_with_prefix()) == MX_STRUCTURAL
    assert (d.name, d.weight.name, e.prefix) == ("dense0", "dense0_weight", "dense1_")
    with pytest.raises(sg.AttrError, match="regular expression"):
        a.collect_params("(")


def test_deferred_init_and_parameter_api() -> None:
    net = Net()
    net.initialize(sg.init.Xavier())
    w = net.body[0].weight
    assert w.shape == (4, 0, 3, 3)
    with pytest.raises(gluon.DeferredInitializationError, match="deferred"):
        w.data()
    out = net(sg.nd.ones((2, 3, 6, 6)))
    assert out.shape == (2, 2) and w.shape == (4, 3, 3, 3)
    assert net.body[2].weight.data().shape == (5, 64)
    assert w.list_ctx() == [sg.cpu()] and w.grad().shape == w.shape
    w.set_data(np.full(w.shape, 0.5, np.float32))
    np.testing.assert_array_equal(w.data().asnumpy(), 0.5)
    with pytest.raises(ShapeError, match="cannot become"):
        w.shape = (4, 2, 3, 3)
    with pytest.raises(BindError, match="not been initialized"):
        nn.Dense(2, in_units=3).weight.data()
    with pytest.warns(UserWarning, match="already initialized"):
        net.initialize()
    c = gluon.Constant("c", np.arange(3))
    c.initialize()
    assert c.grad_req == "null" and c.data().asnumpy().tolist() == [0, 1, 2]


def test_save_load_round_trip_and_wrong_network(tmp_path) -> None:
    net = Net()
    net.initialize(sg.init.Normal(0.5))
    x = sg.nd.array(np.random.default_rng(0).normal(size=(2, 3, 6, 6)))
    ref = net(x).asnumpy()
    path = str(tmp_path / "net.params")
    net.save_parameters(path)
    other = Net()
    other.load_parameters(path)
    np.testing.assert_allclose(other(x).asnumpy(), ref, rtol=1e-6)

    wrong = nn.HybridSequential()
    wrong.add(nn.Dense(3, in_units=4))
    wrong.initialize()
    before = wrong[0].weight.data().asnumpy()
    with pytest.raises(DataError) as err:
        wrong.load_parameters(path)
    assert "0.weight" in str(err.value) and path in str(err.value)
    np.testing.assert_array_equal(wrong[0].weight.data().asnumpy(), before)  # untouched
    # Full names (ParameterDict.save) work too, and a missing file is named.
    net.collect_params().save(str(tmp_path / "full.params"), strip_prefix=net.prefix)
    third = Net()
    third.load_parameters(str(tmp_path / "full.params"))
    np.testing.assert_allclose(third(x).asnumpy(), ref, rtol=1e-6)
    with pytest.raises(DataError, match="nothing.params"):
        third.load_parameters(str(tmp_path / "nothing.params"))


def test_export_loads_in_module_and_symbolblock(tmp_path) -> None:
    net = Net()
    net.initialize(sg.init.Normal(0.5))
    net.hybridize()
    x = np.random.default_rng(1).normal(size=(2, 3, 6, 6)).astype(np.float32)
    ref = net(sg.nd.array(x)).asnumpy()
    prefix = str(tmp_path / "exported")
    net.export(prefix, epoch=3)
    mod = sg.mod.Module.load(prefix, 3, label_names=None)
    mod.bind(data_shapes=[("data", x.shape)], for_training=False)
    mod.forward(sg.io.DataBatch([sg.nd.array(x)]), is_train=False)
    np.testing.assert_allclose(mod.get_outputs()[0].asnumpy(), ref, rtol=1e-5, atol=1e-6)
    block = gluon.SymbolBlock.imports(prefix + "-symbol.json", ["data"],
                                      prefix + "-0003.params")
    np.testing.assert_allclose(block(sg.nd.array(x)).asnumpy(), ref, rtol=1e-5, atol=1e-6)
    with pytest.raises(BindError, match="hybridize"):
        Net().export(prefix)


def test_hybridized_gradients_equal_imperative() -> None:
    rng = np.random.default_rng(2)
    x = sg.nd.array(rng.normal(size=(4, 3, 6, 6)))
    label = sg.nd.array(rng.integers(0, 2, 4), dtype=np.int32)
    net = Net()
    net.initialize(sg.init.Normal(0.3))
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    results = []
    for hybrid in (False, True):
        net.hybridize(hybrid)
        with autograd.record():
            loss = loss_fn(net(x), label)
        loss.backward()
        results.append((loss.asnumpy(), {k: p.grad().asnumpy().copy() for k, p in
                                         net.collect_params().items() if p.grad_req != "null"}))
    (l0, g0), (l1, g1) = results
    np.testing.assert_allclose(l1, l0, rtol=1e-5)
    for k in g0:
        np.testing.assert_allclose(g1[k], g0[k], rtol=1e-4, atol=1e-6, err_msg=k)
    assert len(net._cached) == 1


def test_grad_req_add_zero_grad_reset_ctx_force_reinit() -> None:
    net = nn.Dense(2, in_units=3)
    net.initialize(sg.init.Normal(1.0))
    net.collect_params().setattr("grad_req", "add")
    x = sg.nd.array(np.ones((4, 3)))
    for _ in range(2):
        with autograd.record():
            loss = net(x).sum()
        loss.backward()
    np.testing.assert_allclose(net.weight.grad().asnumpy(), np.full((2, 3), 8.0))  # 2 x 4 rows
    net.collect_params().zero_grad()
    np.testing.assert_array_equal(net.weight.grad().asnumpy(), 0)
    w = net.weight.data().asnumpy()
    net.collect_params().reset_ctx(sg.cpu(1))
    assert net.weight.list_ctx() == [sg.cpu(1)]
    np.testing.assert_array_equal(net.weight.data(sg.cpu(1)).asnumpy(), w)
    net.initialize(sg.init.Constant(0.25), ctx=sg.cpu(), force_reinit=True)
    np.testing.assert_array_equal(net.weight.data().asnumpy(), 0.25)
    np.testing.assert_array_equal(net.bias.data().asnumpy(), 0.0)  # its own init: zeros


def test_shape_error_names_the_layer_node() -> None:
    dense = nn.Dense(3, in_units=4, prefix="fc_")
    dense.initialize()
    for hybrid in (False, True):
        dense.hybridize(hybrid)
        with pytest.raises(ShapeError, match=r"fc_fwd \(FullyConnected\): weight has shape "
                                             r"\(3, 4\), inferred \(3, 5\)"):
            dense(sg.nd.ones((2, 5)))
