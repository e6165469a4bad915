"""Informative reprs of Executor, Module and data iterators (as Symbol and NDArray have)."""
from __future__ import annotations

import numpy as np

import symgraph as sg


def _net():
    x = sg.sym.FullyConnected(sg.sym.var("data"), num_hidden=3, name="fc")
    return sg.sym.SoftmaxOutput(x, name="softmax")


def test_executor_repr():
    exe = _net().simple_bind(sg.cpu(), data=(5, 7))
    text = repr(exe)
    assert text.startswith("<Executor softmax on cpu(0): 4 arguments (4 with gradients)")
    assert "softmax_output (5, 3)" in text
    n = len(exe._train["schedule"].steps)
    assert f"training schedule {n} steps" in text
    frozen = _net().simple_bind(sg.cpu(), grad_req="null", data=(5, 7))
    assert "(0 with gradients)" in repr(frozen)


def test_iterator_repr():
    it = sg.io.NDArrayIter(np.zeros((10, 7)), np.zeros(10), 4, last_batch_handle="discard")
    assert repr(it) == ("<NDArrayIter: 10 samples, batch_size 4, shuffle=False, "
                        "last_batch_handle='discard'; data (4, 7) float32, "
                        "softmax_label (4,) float32>")


def test_module_repr_follows_its_state():
    mod = sg.mod.Module(_net())
    assert repr(mod) == ("<Module softmax on cpu(0): inputs data, softmax_label; 2 parameters, "
                         "0 aux states; not bound>")
    mod.bind([("data", (5, 7))], [("softmax_label", (5,))])
    assert "inputs data (5, 7), softmax_label (5,)" in repr(mod)
    assert repr(mod).endswith("bound for training>")
    mod.init_params()
    mod.init_optimizer(optimizer="adam")
    assert repr(mod).endswith("bound for training, optimizer Adam>")
