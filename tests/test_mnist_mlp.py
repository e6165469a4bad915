"""End-to-end check: MLP 784-128-64-10, 100 SGD steps on real MNIST, > 90% test
accuracy (skips without the data; CI sets SYMGRAPH_DATA)."""
from __future__ import annotations


import symgraph as sg


def test_mlp_100_steps(mnist_dir):
    import symgraph.interop.models.mlp
    sg.random.seed(0)
    d = sg.datasets.mnist.load_data(mnist_dir)
    bs, steps = 256, 100
    x = d["train_data"].reshape(-1, 784)[:bs * steps]
    y = d["train_label"][:bs * steps]
    train = sg.io.NDArrayIter(x, y, bs, shuffle=True)
    test = sg.io.NDArrayIter(d["test_data"].reshape(-1, 784), d["test_label"], 1000)
    mod = sg.mod.Module(symgraph.interop.models.mlp.build())
    mod.fit(train, num_epoch=1, optimizer="sgd",
            optimizer_params={"learning_rate": 0.2, "momentum": 0.9},
            initializer=sg.init.Xavier(factor_type="in", magnitude=1.0))
    assert mod._optimizer.num_update == steps
    prob = mod.predict(test).asnumpy()
    acc = float((prob.argmax(1) == d["test_label"]).mean())
    print(f"MLP after {steps} steps: test accuracy {acc:.4f}")
    assert acc > 0.90, acc
    assert dict(mod.score(test, "acc"))["accuracy"] == acc
