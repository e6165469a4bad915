"""The Gluon route to float16 training: net.cast('float16'), multi_precision=True (float32
master weights in the trainer's updater) and dynamic loss scaling through amp.scale_loss."""
from __future__ import annotations

import numpy as np

import symgraph as sg
from symgraph.frontend import amp
from symgraph.frontend import autograd
from symgraph import gluon


def test_float16_gluon_training_with_master_weights_and_loss_scaling() -> None:
    sg.random.seed(0)
    net = gluon.nn.HybridSequential()
    net.add(gluon.nn.Dense(16, activation="relu"), gluon.nn.Dense(3))
    net.initialize(sg.init.Xavier())
    net.cast("float16")
    net.hybridize()
    trainer = gluon.Trainer(net.collect_params(), "sgd",
                            {"learning_rate": 0.1, "multi_precision": True})
    amp.init("float16")
    amp.init_trainer(trainer)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 8))
    y = (x[:, 0] > 0).astype(np.float32) + (x[:, 1] > 0)
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    losses = []
    for _ in range(40):
        with autograd.record():
            out = net(sg.nd.array(x, dtype="float16"))
            loss = loss_fn(out.astype("float32"), sg.nd.array(y))
            with amp.scale_loss(loss, trainer) as scaled:
                pass
        scaled.backward()
        trainer.step(64)
        losses.append(loss.mean().asscalar())
    assert all(p.data().dtype == np.float16 for p in net.collect_params().values())
    states = [s for upd in trainer._updaters for s in upd.states.values()]
    assert states and all(s[0].dtype == np.float32 for s in states)  # master weights
    for p, s in zip(net.collect_params().values(), states):
        np.testing.assert_array_equal(p.data().asnumpy(), s[0].astype(np.float16))
    assert trainer._amp_loss_scaler.loss_scale < 2.0 ** 16  # float16 overflowed at first
    assert losses[-1] < 0.7 * losses[0]
    assert (out.asnumpy().argmax(1) == y).mean() > 0.7
