"""Gluon's LayerNorm, GroupNorm, InstanceNorm, PReLU, ELU, SELU, GELU and Swish: outputs against
float64 numpy (imperative and hybridized), parameter names and shapes as MXNet 1.9.1's, gradients
of the parameters against central differences, ``export`` reloaded, and parameter files crossing
with MXNet 1.9.1 live (marked ``mxnet``)."""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest

import symgraph as sg
from symgraph import gluon
from symgraph.core.base import AttrError, ShapeError
from symgraph.gluon import nn
from tests.ops import cases_norm_layer as ref

from .conftest import run_both
from .test_mxnet_gluon import CHILD_BODY, _child, _make_net, _mxnet

X = np.random.default_rng(0).normal(size=(2, 4, 3, 5)) * 2 + 1
ERF = np.vectorize(math.erf)


def _elu(x: np.ndarray, a: float) -> np.ndarray:
    return np.where(x > 0, x, a * (np.exp(x) - 1))


# name: (block, parameter suffixes and shapes after a forward on X, float64 reference of X)
LAYERS: dict[str, tuple[Callable, dict, Callable]] = {
    "LayerNorm": (lambda: nn.LayerNorm(), {"gamma": (5,), "beta": (5,)},
                  lambda x: ref.layer_norm(x, np.ones(5), np.zeros(5))[0]),
    "LayerNorm_axis1": (lambda: nn.LayerNorm(axis=1, epsilon=1e-3), {"gamma": (4,),
                                                                      "beta": (4,)},
                        lambda x: ref.layer_norm(x, np.ones(4), np.zeros(4), 1, 1e-3)[0]),
    "GroupNorm": (lambda: nn.GroupNorm(num_groups=2), {"gamma": (2,), "beta": (2,)},
                  lambda x: ref.group_norm(x, np.ones(2), np.zeros(2), 2)[0]),
    "InstanceNorm": (lambda: nn.InstanceNorm(), {"gamma": (4,), "beta": (4,)},
                     lambda x: ref.instance_norm(x, np.ones(4), np.zeros(4), 1e-5)),
    "InstanceNorm_last": (lambda: nn.InstanceNorm(axis=-1), {"gamma": (5,), "beta": (5,)},
                          lambda x: ref.instance_norm(x.swapaxes(1, 3), np.ones(5),
                                                      np.zeros(5), 1e-5).swapaxes(1, 3)),
    "PReLU": (lambda: nn.PReLU(), {"alpha": (1,)}, lambda x: np.where(x > 0, x, 0.25 * x)),
    "ELU": (lambda: nn.ELU(alpha=0.5), {}, lambda x: _elu(x, 0.5)),
    "SELU": (lambda: nn.SELU(), {},
             lambda x: 1.0507009873554805 * _elu(x, 1.6732632423543772)),
    "GELU": (lambda: nn.GELU(), {}, lambda x: 0.5 * x * (1 + ERF(x / np.sqrt(2)))),
    "Swish": (lambda: nn.Swish(beta=2.0), {}, lambda x: x / (1 + np.exp(-2 * x))),
}


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_layer_matches_numpy_imperative_and_hybridized(name: str) -> None:
    make, params, want = LAYERS[name]
    block = make()
    block.initialize()
    x = X.astype(np.float32)
    first, second = run_both(block, x)
    np.testing.assert_allclose(first, want(x.astype(np.float64)), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(first, second)
    got = {k.split("_", 1)[1]: v.shape for k, v in block.collect_params().items()}
    assert got == params


def test_default_trainability_is_mxnets() -> None:
    """InstanceNorm's gamma is not trained by default; LayerNorm's and GroupNorm's are."""
    reqs = {type(b).__name__: {k.split("_")[-1]: p.grad_req for k, p in
                               b.collect_params().items()}
            for b in (nn.LayerNorm(), nn.GroupNorm(), nn.InstanceNorm(), nn.PReLU())}
    assert reqs == {"LayerNorm": {"gamma": "write", "beta": "write"},
                    "GroupNorm": {"gamma": "write", "beta": "write"},
                    "InstanceNorm": {"gamma": "null", "beta": "write"},
                    "PReLU": {"alpha": "write"}}


def _loss(block: Any, x: np.ndarray) -> Any:
    y = block(sg.nd.array(x, dtype=np.float64))
    return (y * sg.nd.array(np.cos(np.arange(y.size)).reshape(y.shape),
                            dtype=np.float64)).sum()


@pytest.mark.parametrize("name", ["LayerNorm_axis1", "GroupNorm", "PReLU"])
def test_parameter_gradients_match_central_differences(name: str) -> None:
    block = LAYERS[name][0]()
    block.initialize(sg.init.Uniform(0.8))
    block.cast("float64")
    x = X[:, :, :2, :3]
    block(sg.nd.array(x, dtype=np.float64))
    for p in block.collect_params().values():
        with sg.autograd.record():
            loss = _loss(block, x)
        loss.backward()
        got, base = p.grad().asnumpy(), p.data().asnumpy().copy()
        num = np.zeros_like(base)
        for i in range(base.size):
            for sign in (1, -1):
                v = base.copy()
                v.reshape(-1)[i] += sign * 1e-6
                p.set_data(v)
                num.reshape(-1)[i] += sign * float(_loss(block, x).asnumpy()[0]) / 2e-6
        p.set_data(base)
        np.testing.assert_allclose(got, num, rtol=1e-5, atol=1e-7, err_msg=p.name)


def test_bad_input_names_the_layer() -> None:
    block = nn.GroupNorm(num_groups=3)
    block.initialize()
    with pytest.raises(ShapeError, match="num_groups=3"):
        block(sg.nd.array(X))
    with pytest.raises(AttrError, match="num_groups"):
        nn.GroupNorm(num_groups=0)
    before = X.copy()
    with pytest.raises(ShapeError, match="InstanceNorm"):
        nn.InstanceNorm(in_channels=4).initialize() or sg.nd.InstanceNorm(
            sg.nd.array(X[0, 0]), sg.nd.ones((3,)), sg.nd.zeros((3,))).asnumpy()
    np.testing.assert_array_equal(X, before)


NET = '''
def make_net(mx, nn):
    net = nn.HybridSequential()
    with net.name_scope():
        net.add(nn.Conv2D(4, 3, padding=1), nn.GroupNorm(2), nn.PReLU(), nn.InstanceNorm(),
                nn.ELU(0.7), nn.SELU(), nn.GELU(), nn.Swish(1.5), nn.Dense(6),
                nn.LayerNorm())
    return net


def prepare(mx, np, net, x):
    net.initialize(mx.init.Uniform(0.9))
    net(x)
'''
CHILD = NET + CHILD_BODY


def test_export_reloads_with_the_same_outputs(tmp_path: Path) -> None:
    net = _make_net(NET)
    net.initialize(sg.init.Uniform(0.9))
    net.hybridize()
    x = sg.nd.array(X.astype(np.float32))
    want = net(x).asnumpy()
    net.export(str(tmp_path / "net"))
    block = gluon.SymbolBlock.imports(str(tmp_path / "net-symbol.json"), ["data"],
                                      str(tmp_path / "net-0000.params"))
    np.testing.assert_allclose(block(x).asnumpy(), want, rtol=1e-5, atol=1e-6)


@pytest.mark.mxnet
def test_parameter_files_cross_with_mxnet(tmp_path: Path) -> None:
    """MXNet's file predicts the same in symgraph, and symgraph's in MXNet."""
    exe = _mxnet()
    x = X.astype(np.float32)
    want = _child(exe, tmp_path, "save", tmp_path / "mx.params", x, CHILD)
    net = _make_net(NET)
    net.load_parameters(str(tmp_path / "mx.params"))
    np.testing.assert_allclose(net(sg.nd.array(x)).asnumpy(), want, rtol=1e-4, atol=1e-5)
    net.save_parameters(str(tmp_path / "sg.params"))
    again = _child(exe, tmp_path, "load", tmp_path / "sg.params", x, CHILD)
    np.testing.assert_allclose(again, want, rtol=1e-4, atol=1e-5)
