"""MXNet's ``Optimizer`` base class as a user subclasses it (no update rule: its own
``create_state``/``update``), learning-rate rules, ``lr_mult`` from argument attributes, and
MXNet's nesting of multi-precision states (checked live against MXNet 1.9.1, ``mxnet``)."""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import symgraph as sg
from symgraph.core.base import AttrError

from .mxnet_live import mxnet_json


class HandSGD(sg.optimizer.Optimizer):
    """Plain SGD written as MXNet users write optimizers: no rule, an ``update`` of its own."""

    def create_state(self, index: Any, weight: Any) -> Any:
        return sg.nd.zeros(weight.shape, dtype=weight.dtype)

    def update(self, index: Any, weight: Any, grad: Any, state: Any) -> None:
        self._update_count(index)
        state[:] = grad * self.rescale_grad
        weight[:] = weight - self._get_lr(index) * state


def test_base_class_constructs_and_keeps_the_learning_rate() -> None:
    opt = sg.optimizer.Optimizer(learning_rate=0.01)
    opt.set_learning_rate(0.2)
    assert opt.learning_rate == 0.2
    assert opt.create_state(0, sg.nd.ones((2,))) is None
    with pytest.raises(AttrError, match="Optimizer: no update rule"):
        opt.update(0, sg.nd.ones((2,)), sg.nd.ones((2,)), None)


def test_set_learning_rate_under_a_scheduler_is_a_user_warning() -> None:
    opt = sg.optimizer.Optimizer(lr_scheduler=sg.lr_scheduler.FactorScheduler(step=1),
                                 learning_rate=0.3)
    assert opt.learning_rate == 0.3
    with pytest.raises(UserWarning):
        opt.set_learning_rate(0.5)
    with pytest.raises(AttrError):  # the same error is a typed symgraph error
        opt.set_learning_rate(0.5)
    assert opt.learning_rate == 0.3


def test_subclass_update_runs_through_updater_and_multi() -> None:
    w0 = np.array([1.0, -2.0, 3.0], np.float32)
    g = np.array([0.5, 0.25, -1.0], np.float32)
    weight = sg.nd.array(w0)
    updater = sg.optimizer.get_updater(HandSGD(learning_rate=0.1, rescale_grad=2.0))
    updater.update_multi([0], [sg.nd.array(g)], [weight])
    updater(0, sg.nd.array(g), weight)
    want = w0.astype(np.float64) - 2 * 0.1 * 2.0 * g  # two steps of lr*rescale*grad
    np.testing.assert_allclose(weight.asnumpy(), want, rtol=1e-6)
    assert not updater.optimizer.fused  # a hand-written update never goes to the fused path


class HalvingSGD(sg.optimizer.SGD):
    """A rule optimizer whose ``update`` is overridden: SGD's step, then the weight halved."""

    seen: list = []

    def update(self, index: Any, weight: Any, grad: Any, state: Any) -> None:
        self.seen.append(index)
        super().update(index, weight, grad, state)
        weight[:] = weight.asnumpy() / 2


def _fc_step(opt: Any) -> dict:
    """fc's weight and bias after one ``Module`` step with ``opt`` (fixed data and params)."""
    sym = sg.sym.SoftmaxOutput(sg.sym.FullyConnected(sg.sym.var("data"), num_hidden=2,
                                                     name="fc"), name="softmax")
    mod = sg.mod.Module(sym, context=sg.cpu())
    mod.bind([("data", (4, 3))], [("softmax_label", (4,))])
    rng = np.random.default_rng(0)
    mod.init_params(arg_params={"fc_weight": sg.nd.array(rng.normal(size=(2, 3))),
                                "fc_bias": sg.nd.array(rng.normal(size=2))})
    mod.init_optimizer(optimizer=opt)
    mod.forward_backward(sg.io.DataBatch([sg.nd.array(rng.normal(size=(4, 3)))],
                                         [sg.nd.array([0, 1, 1, 0])]))
    mod.update()
    return {k: v.asnumpy() for k, v in mod.get_params()[0].items()}


def test_an_overridden_update_is_what_module_and_trainer_call() -> None:
    """MXNet's updater calls the optimizer's ``update``: overriding it in a subclass of a
    rule optimizer takes effect in ``Module.update`` and ``Trainer.step``, and its
    ``super().update`` still steps by the rule."""
    HalvingSGD.seen = []
    plain, halved = _fc_step(sg.optimizer.SGD(learning_rate=0.5)), \
        _fc_step(HalvingSGD(learning_rate=0.5))
    assert sorted(HalvingSGD.seen) == [0, 1]
    for name in plain:
        np.testing.assert_allclose(halved[name], plain[name] / 2, rtol=1e-6)
    assert not HalvingSGD().fused  # (nor does the fused GPU update skip it)
    net = sg.gluon.nn.Dense(2, in_units=3)
    net.initialize(sg.init.One())
    trainer = sg.gluon.Trainer(net.collect_params(), HalvingSGD(learning_rate=0.0))
    with sg.autograd.record():
        loss = net(sg.nd.ones((1, 3))).sum()
    loss.backward()
    trainer.step(1)
    assert net.weight.data().asnumpy().tolist() == [[0.5] * 3] * 2  # lr 0: halved only


def test_subclass_multi_precision_steps_the_float32_master() -> None:
    opt = HandSGD(learning_rate=0.1, multi_precision=True)
    weight = sg.nd.array(np.array([1.0, 2.0], np.float16), dtype="float16")
    state = opt.create_state_multi_precision(0, weight)
    assert state[0].dtype == np.float32 and state[1].dtype == np.float32
    opt.update_multi_precision(0, weight, sg.nd.array(np.array([1e-3, 1.0]), dtype="float16"),
                               state)
    want = np.array([1.0, 2.0]) - 0.1 * np.array([np.float16(1e-3), 1.0], np.float64)
    np.testing.assert_allclose(state[0].asnumpy(), want, rtol=1e-6)
    assert weight.dtype == np.float16
    np.testing.assert_allclose(weight.asnumpy(), want.astype(np.float16))


def test_lr_mult_and_wd_mult_come_from_arguments_only() -> None:
    data = sg.sym.Variable("data")
    bias = sg.sym.Variable("fc1_bias", lr_mult=1.0)
    fc1 = sg.sym.FullyConnected(data=data, bias=bias, name="fc1", num_hidden=4, lr_mult=0)
    fc2 = sg.sym.FullyConnected(data=fc1, name="fc2", num_hidden=4, wd_mult=0.5)
    opt = sg.optimizer.SGD(sym=fc2, param_idx2name=dict(enumerate(fc2.list_arguments()[1:])))
    assert opt.lr_mult == {"fc1_bias": 1.0, "fc1_weight": 0.0}
    assert opt.wd_mult == {"fc2_bias": 0.5, "fc2_weight": 0.5, "fc1_bias": 0.0}


def test_nd_binary_function_on_two_numbers_is_a_number() -> None:
    assert sg.nd.power(0.9, 2) == pytest.approx(0.81, rel=1e-15)
    assert sg.nd.maximum(1, 3) == 3 and sg.nd.greater(1, 3) == 0
    with pytest.raises(AttrError, match="nd.power"):
        sg.nd.power("a", 2)


# (NAG without weight decay: MXNet's nag_mom_update departs there, docs/mxnet_parity.md)
CASES = {"sgd": ("SGD", {"momentum": 0.9}), "nag": ("NAG", {"momentum": 0.9, "wd": 0.0}),
         "adamax": ("Adamax", {}), "adam": ("Adam", {}), "sgd0": ("SGD", {})}
W = [[0.5, -1.25, 2.0], [0.75, 0.125, -0.5]]
G = [[0.25, 0.5, -1.0], [1.5, -0.75, 0.125]]

MX_SCRIPT = r"""
import json, sys
import numpy as np
import mxnet as mx
def layout(s):
    if s is None: return None
    if isinstance(s, (tuple, list)): return [layout(x) for x in s]
    return np.dtype(s.dtype).name
out = {}
for key, (cls, kw) in json.load(sys.stdin).items():
    opt = getattr(mx.optimizer, cls)(learning_rate=0.1, multi_precision=True, **{"wd": 0.01, **kw})
    w = mx.nd.array(np.array(%s, np.float16), dtype="float16")
    st = opt.create_state_multi_precision(0, w)
    desc = layout(st)
    for _ in range(2):
        opt.update_multi_precision(0, w, mx.nd.array(np.array(%s), dtype="float16"), st)
    out[key] = {"layout": desc, "weight": w.asnumpy().astype(float).tolist()}
print(json.dumps(out))
""" % (W, G)


def _layout(s: Any) -> Any:
    if s is None:
        return None
    if isinstance(s, (tuple, list)):
        return [_layout(x) for x in s]
    return np.dtype(s.dtype).name


@pytest.mark.mxnet
def test_multi_precision_states_nest_as_mxnets() -> None:
    want = mxnet_json(MX_SCRIPT, CASES)
    for key, (cls, kw) in CASES.items():
        opt = getattr(sg.optimizer, cls)(learning_rate=0.1, multi_precision=True,
                                         **{"wd": 0.01, **kw})
        w = sg.nd.array(np.array(W, np.float16), dtype="float16")
        st = opt.create_state_multi_precision(0, w)
        assert _layout(st) == want[key]["layout"], key
        for _ in range(2):
            opt.update_multi_precision(0, w, sg.nd.array(np.array(G), dtype="float16"), st)
        np.testing.assert_allclose(w.asnumpy().astype(np.float64), want[key]["weight"],
                                   rtol=2e-3, err_msg=key)


REGISTRY_SCRIPT = """
import json, sys
import mxnet as mx
json.load(sys.stdin)
print(json.dumps(sorted(mx.optimizer.Optimizer.opt_registry)))
"""


@pytest.mark.mxnet
def test_opt_registry_names_are_mxnets() -> None:
    want = set(mxnet_json(REGISTRY_SCRIPT, {}))
    assert want <= set(sg.optimizer.Optimizer.opt_registry)


def test_register_and_create_optimizer_are_the_class_spellings() -> None:
    registry = sg.optimizer.Optimizer.opt_registry
    try:
        @sg.optimizer.Optimizer.register
        class Halved(HandSGD):
            pass
        assert registry["halved"] is Halved
        made = sg.optimizer.Optimizer.create_optimizer("HALVED", learning_rate=0.5)
        assert type(made) is Halved and made.lr == 0.5
        with pytest.raises(AttrError, match="unknown optimizer 'nope'.*'sgd'"):
            sg.optimizer.Optimizer.create_optimizer("nope")
    finally:
        registry.pop("halved", None)
