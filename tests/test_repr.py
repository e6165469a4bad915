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
    n = len(exe._train.schedule.steps)
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


def test_user_iterator_repr_never_raises():
    class Mine(sg.io.DataIter):  # describes no batches: provide_data raises NotImplementedError
        pass
    assert repr(Mine(3)) == "<Mine: batch_size 3>"

    class Described(sg.io.DataIter):
        provide_data = [("data", (3, 2))]  # MXNet also accepts plain (name, shape) pairs
    assert repr(Described(3)) == "<Described: batch_size 3; data (3, 2) float32>"


def test_gluon_data_reprs():
    data = sg.gluon.data
    ds = data.ArrayDataset(np.zeros((10, 2), np.float32), np.arange(10, dtype=np.int32))
    assert repr(ds) == "<ArrayDataset: 10 samples; (10, 2) float32, (10,) int32>"
    assert repr(data.SimpleDataset([1, 2, 3])) == "<SimpleDataset: 3 samples>"
    loader = data.DataLoader(ds, batch_size=4, shuffle=True, last_batch="discard")
    assert repr(loader) == ("<DataLoader: 2 batches of ArrayDataset of 10 samples; batch_size "
                            "4, last_batch='discard', RandomSampler; no workers>")
    assert len(loader) == 2 and len(list(loader)) == 2
    threads = data.DataLoader(ds, batch_size=3, num_workers=2, thread_pool=True)
    assert repr(threads).endswith("batch_size 3, last_batch='keep', SequentialSampler; "
                                  "2 threads>")

    class Endless(data.Dataset):  # no __len__: the repr still works
        pass
    assert repr(Endless()) == "<Endless: unknown length>"
