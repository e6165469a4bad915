"""gluon.Trainer over several contexts with a kvstore: update_on_kvstore on and off against a
float64 momentum-SGD reference, learning-rate schedules counted once per step, multipliers
changed after the Trainer was made, a store reset by set_data, saved states, and stores that
cannot update (MXNet's TestStore, a registered store)."""
from __future__ import annotations

import numpy as np
import pytest

import symgraph as sg
from symgraph import gluon
from symgraph.core.base import AttrError
from symgraph.frontend import autograd
from symgraph.training.kvstore_base import KVStoreBase, TestStore

CTXS = [sg.cpu(0), sg.cpu(1)]


def _param(value: np.ndarray, ctxs=CTXS) -> gluon.Parameter:
    p = gluon.Parameter("x", shape=value.shape)
    p.initialize(ctx=ctxs, init=sg.init.Constant(0))
    p.set_data(sg.nd.array(value))
    return p


def _backward(p: gluon.Parameter, coefs: list) -> None:
    """Context k's loss: sum(c_k * x^2 / 2), so its gradient is c_k * x."""
    with autograd.record():
        losses = [(w * w * c).sum() * 0.5 for w, c in zip(p.list_data(), coefs)]
    for loss in losses:
        loss.backward()


def _reference(x0: np.ndarray, coefs: list, lrs: list, momentum: float) -> np.ndarray:
    x, mom = x0.astype(np.float64), np.zeros_like(x0, np.float64)
    for lr in lrs:
        grad = sum(c * x for c in coefs)
        mom = momentum * mom - lr * grad
        x = x + mom
    return x


@pytest.mark.parametrize("on_kv", [None, False])
def test_two_contexts_match_float64_momentum(on_kv) -> None:
    x0 = np.array([1.0, -2.0, 0.5], np.float32)
    p = _param(x0)
    trainer = gluon.Trainer([p], "sgd", {"learning_rate": 0.1, "momentum": 0.5},
                            update_on_kvstore=on_kv)
    for _ in range(3):
        _backward(p, [1.0, 3.0])
        trainer.step(1)
    assert trainer._kvstore.type == "device"
    assert trainer._update_on_kvstore is (on_kv is None)  # MXNet's default: on the store
    want = _reference(x0, [1.0, 3.0], [0.1] * 3, 0.5)
    for c in CTXS:
        np.testing.assert_allclose(p.data(c).asnumpy(), want, rtol=1e-5)


@pytest.mark.parametrize("on_kv", [None, False])
def test_schedule_counts_one_update_per_step(on_kv) -> None:
    p = _param(np.ones(2, np.float32))
    sched = sg.lr_scheduler.FactorScheduler(step=2, factor=0.1, base_lr=1.0)
    trainer = gluon.Trainer([p], "sgd", {"learning_rate": 1.0, "lr_scheduler": sched},
                            update_on_kvstore=on_kv)
    seen = []
    for _ in range(5):
        _backward(p, [1.0, 1.0])
        trainer.step(1)
        seen.append(trainer.learning_rate)
    # FactorScheduler(step=2): the rate drops by 10 once more than 2, 4... updates were made
    np.testing.assert_allclose(seen, [1.0, 1.0, 0.1, 0.1, 0.01])


def test_lr_mult_changed_after_the_trainer_was_made() -> None:
    x0 = np.array([2.0, 4.0], np.float32)
    p = _param(x0, [sg.cpu(0)])
    trainer = gluon.Trainer([p], "sgd", {"learning_rate": 0.25})
    _backward(p, [1.0])
    trainer.step(1)
    p.lr_mult = 0.5  # takes effect at the next step (MXNet's param_dict)
    assert trainer.optimizer._get_lr(0) == 0.125
    _backward(p, [1.0])
    trainer.step(1)
    want = x0 * (1 - 0.25) * (1 - 0.125)
    np.testing.assert_allclose(p.data().asnumpy(), want, rtol=1e-6)


def test_set_data_resets_the_store_and_keeps_momentum() -> None:
    p = _param(np.ones(2, np.float32))
    trainer = gluon.Trainer([p], "sgd", {"learning_rate": 0.1, "momentum": 0.5})
    _backward(p, [1.0, 1.0])
    trainer.step(1)  # x = 1 - 0.2 = 0.8, mom = -0.2
    p.set_data(sg.nd.array([3.0, 3.0]))
    assert trainer._kvstore is None and not trainer._kv_initialized
    _backward(p, [1.0, 1.0])
    trainer.step(1)  # from the new value: mom = -0.1 - 0.6
    np.testing.assert_allclose(p.data(sg.cpu(1)).asnumpy(), [3.0 - 0.7] * 2, rtol=1e-6)


def test_saved_states_continue_the_same_run(tmp_path) -> None:
    x0 = np.array([1.0, 2.0], np.float32)
    p = _param(x0)
    trainer = gluon.Trainer([p], "sgd", {"learning_rate": 0.1, "momentum": 0.9})
    _backward(p, [1.0, 2.0])
    trainer.step(1)
    path = str(tmp_path / "kv.states")
    trainer.save_states(path)
    q = _param(p.data().asnumpy())
    again = gluon.Trainer([q], "sgd", {"learning_rate": 0.1, "momentum": 0.9})
    again.load_states(path)
    for param, tr in ((p, trainer), (q, again)):
        _backward(param, [1.0, 2.0])
        tr.step(1)
    np.testing.assert_allclose(q.data().asnumpy(), _reference(x0, [1.0, 2.0], [0.1] * 2, 0.9),
                               rtol=1e-5)
    np.testing.assert_array_equal(q.data().asnumpy(), p.data().asnumpy())


def test_store_without_optimizer_sums_and_refuses_updates() -> None:
    p = _param(np.zeros(3, np.float32))
    kv = sg.kv.create("teststore")
    assert isinstance(kv, TestStore)
    trainer = gluon.Trainer([p], "sgd", {"learning_rate": 1.0}, kvstore=kv)
    with autograd.record():  # gradient 1 on each context, summed by the store
        losses = [(w + 1).sum() for w in p.list_data()]
    for loss in losses:
        loss.backward()
    trainer.step(1)
    assert trainer._update_on_kvstore is False
    np.testing.assert_array_equal(p.data(sg.cpu(1)).asnumpy(), [-2.0] * 3)
    bad = gluon.Trainer([p], "sgd", kvstore=kv, update_on_kvstore=True)
    with pytest.raises(ValueError, match="TestStore.*update_on_kvstore=False"):
        bad._init_kvstore()


def test_registered_store_and_refusals() -> None:
    @KVStoreBase.register
    class HalfStore(TestStore):
        """Averages instead of summing: the Trainer must use the given store."""

        def pushpull(self, key, value, out=None, priority=0):
            super().pushpull(key, value, out, priority)
            for v in value if out is None else out:
                v[:] = v * 0.5

    p = _param(np.zeros(2, np.float32))
    trainer = gluon.Trainer([p], "sgd", {"learning_rate": 1.0}, kvstore=sg.kv.create("halfstore"))
    with autograd.record():
        losses = [(w * 1).sum() for w in p.list_data()]
    for loss in losses:
        loss.backward()
    trainer.step(1)
    np.testing.assert_array_equal(p.data(sg.cpu(0)).asnumpy(), [-1.0, -1.0])
    on_kv = gluon.Trainer([p], "sgd", {"learning_rate": 1.0})
    _backward(p, [1.0, 1.0])
    on_kv.step(1)
    with pytest.raises(AssertionError, match="update_on_kvstore=False"):
        on_kv.allreduce_grads()
    with pytest.raises(AttrError, match="'nccl'"):
        gluon.Trainer([p], "sgd", kvstore="nccl")
