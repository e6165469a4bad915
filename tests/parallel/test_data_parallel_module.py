"""``Module(context=[cpu(0), cpu(1)])``: the whole data-parallel path on the numpy backend."""
from __future__ import annotations

import numpy as np
import pytest

import symgraph as sg
from symgraph.core.base import AttrError, BindError, ShapeError
from symgraph.interop.models import lenet, mlp
from symgraph.training.parallel.comm import HostCommunicator
from symgraph.training.parallel.group import DataParallelModule

from ._mpi import needs_mpi, run_mpi

OPT = {"learning_rate": 0.1, "momentum": 0.9, "wd": 1e-4}


def _data(n: int = 48, flat: bool = True) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.RandomState(7)
    x = rng.rand(n, 784 if flat else 1 * 28 * 28).astype(np.float32)
    x = x if flat else x.reshape(n, 1, 28, 28)
    return x, rng.randint(0, 10, n).astype(np.float32)


def _module(sym: sg.sym.Symbol, ctx, batch: int, x: np.ndarray, **kw) -> sg.mod.Module:
    sg.random.seed(3)
    mod = sg.mod.Module(sym, context=ctx, **kw)
    mod.bind([("data", (batch,) + x.shape[1:])], [("softmax_label", (batch,))])
    mod.init_params(sg.init.Xavier())
    mod.init_optimizer(optimizer="sgd", optimizer_params=OPT)
    return mod


@pytest.mark.parametrize("build,flat", [(mlp.build, True), (lenet.build, False)])
def test_summed_gradients_equal_whole_batch_gradient(build, flat: bool) -> None:
    x, y = _data(16, flat)
    sym = build()
    one = _module(sym, sg.cpu(), 16, x)
    two = _module(sym, [sg.cpu(0), sg.cpu(1)], 16, x)
    assert isinstance(two, DataParallelModule) and len(two.executors) == 2
    batch = sg.io.DataBatch([sg.nd.array(x)], [sg.nd.array(y)])
    one.forward_backward(batch)
    two.forward_backward(batch)
    two.allreduce()
    e0, e1 = two.executors
    for name, g in one._exec.grad_dict.items():
        ref = g.asnumpy().astype(np.float64)
        np.testing.assert_allclose(e0.grad_dict[name].asnumpy(), ref, rtol=2e-4,
                                   atol=1e-5 * np.abs(ref).max())
        assert e0.grad_dict[name].asnumpy().tobytes() == e1.grad_dict[name].asnumpy().tobytes()
    np.testing.assert_allclose(two.get_outputs()[0].asnumpy(), one.get_outputs()[0].asnumpy(),
                               rtol=1e-5, atol=1e-6)


def test_replicas_identical_after_steps_and_match_one_device() -> None:
    x, y = _data(48)
    sym = mlp.build()
    it = sg.io.NDArrayIter(x, y, batch_size=16)
    one = _module(sym, sg.cpu(), 16, x)
    three = _module(sym, [sg.cpu(0), sg.cpu(1), sg.cpu(2)], 16, x, work_load_list=[1, 2, 1])
    assert [e.arg_dict["data"].shape[0] for e in three.executors] == [4, 8, 4]
    for _ in range(4):  # 12 steps
        for mod in (one, three):
            it.reset()
            for batch in it:
                mod.forward_backward_update(batch)
    ref, _ = one.get_params()
    for name in ref:
        first = three.executors[0].arg_dict[name].asnumpy()
        for exe in three.executors[1:]:
            assert exe.arg_dict[name].asnumpy().tobytes() == first.tobytes(), name
        np.testing.assert_allclose(first, ref[name].asnumpy(), rtol=1e-4, atol=1e-5)


def test_fit_score_predict_on_two_devices() -> None:
    x, y = _data(64)
    it = sg.io.NDArrayIter(x, y, batch_size=32)
    mod = sg.mod.Module(mlp.build(), context=[sg.cpu(0), sg.cpu(1)])
    mod.fit(it, num_epoch=2, kvstore="device", optimizer_params=OPT, progress_bar=False,
            initializer=sg.init.Xavier())
    assert mod.predict(it).shape == (64, 10)
    acc = dict(mod.score(it, "acc"))["accuracy"]
    assert 0.0 <= acc <= 1.0
    assert mod.output_shapes == [("softmax_output", (32, 10))]


def test_bad_kvstore_and_contexts_raise() -> None:
    x, y = _data(32)
    it = sg.io.NDArrayIter(x, y, batch_size=16)
    for ctx in (sg.cpu(), [sg.cpu(0), sg.cpu(1)]):
        mod = sg.mod.Module(mlp.build(), context=ctx)
        with pytest.raises(AttrError, match=r"kvstore 'parameter_server' is not supported"):
            mod.fit(it, num_epoch=1, kvstore="parameter_server", progress_bar=False)
    mod = sg.mod.Module(mlp.build(), context=[sg.cpu(0), sg.cpu(1)])
    with pytest.raises(BindError, match=r"amp='bfloat16'.*one device"):  # never silently fp32
        mod.fit(it, num_epoch=1, amp="bfloat16", progress_bar=False)
    assert not mod.binded
    with pytest.raises(BindError, match="distinct devices of one kind"):
        sg.mod.Module(mlp.build(), context=[sg.cpu(0), sg.cpu(0)])
    with pytest.raises(BindError, match="3 entries for 2 contexts"):
        sg.mod.Module(mlp.build(), context=[sg.cpu(0), sg.cpu(1)], work_load_list=[1, 1, 1])


def _dist_train(rank: int, x: np.ndarray, y: np.ndarray) -> dict:
    it = sg.io.NDArrayIter(x, y, batch_size=8, num_parts=2, part_index=rank)
    mod = _module(mlp.build(), sg.cpu(), 8, x)
    if rank == 1:  # a different start: rank 0's parameters must win at init_optimizer
        mod.init_params(sg.init.Uniform(0.5), force_init=True)
    mod.init_optimizer(kvstore="dist_sync", optimizer="sgd", optimizer_params=OPT,
                       force_init=True)
    for _ in range(2):
        it.reset()
        for batch in it:
            mod.forward_backward_update(batch)
    return {k: v.asnumpy() for k, v in mod.get_params()[0].items()}


@needs_mpi
def test_two_processes_dist_sync_equals_one_process_global_batch(tmp_path) -> None:
    x, y = _data(64)
    res = run_mpi(_dist_train, 2, tmp_path, x, y, timeout=120)
    assert all(s == "ok" for s, _ in res.values()), res
    # one process, global batch 16: samples [i*8, i*8+8) of part 0 and of part 1
    order = np.concatenate([np.r_[i * 8:i * 8 + 8, 32 + i * 8:32 + i * 8 + 8]
                            for i in range(4)])
    it = sg.io.NDArrayIter(x[order], y[order], batch_size=16)
    one = _module(mlp.build(), sg.cpu(), 16, x)
    for _ in range(2):
        it.reset()
        for batch in it:
            one.forward_backward_update(batch)
    ref = one.get_params()[0]
    for name, value in res[0][1].items():
        assert value.tobytes() == res[1][1][name].tobytes(), name
        np.testing.assert_allclose(value, ref[name].asnumpy(), rtol=1e-4, atol=1e-5)


def test_num_parts_shards(tmp_path) -> None:
    x = np.arange(10, dtype=np.float32).reshape(10, 1)
    parts = [sg.io.NDArrayIter(x, x[:, 0], batch_size=3, num_parts=3, part_index=i)
             for i in range(3)]
    assert [p.num_data for p in parts] == [3, 3, 3]  # 10 // 3 each, the last sample dropped
    assert next(iter(parts[2])).data[0].asnumpy().ravel().tolist() == [6.0, 7.0, 8.0]
    with pytest.raises(sg.DataError, match=r"part_index=3 must be in \[0, num_parts=3\)"):
        sg.io.NDArrayIter(x, batch_size=2, num_parts=3, part_index=3)


def test_mnist_iter_parts(mnist_dir) -> None:
    kw = dict(image=str(mnist_dir / "t10k-images-idx3-ubyte.gz"),
              label=str(mnist_dir / "t10k-labels-idx1-ubyte.gz"), batch_size=100,
              shuffle=False, num_parts=2)
    a, b = sg.io.MNISTIter(part_index=0, **kw), sg.io.MNISTIter(part_index=1, **kw)
    whole = sg.io.MNISTIter(**{**kw, "num_parts": 1})
    assert a.num_data == b.num_data == 5000
    np.testing.assert_array_equal(b.label["softmax_label"], whole.label["softmax_label"][5000:])


def test_batchnorm_aux_states_are_averaged_over_devices() -> None:
    data = sg.sym.var("data")
    net = sg.sym.BatchNorm(sg.sym.FullyConnected(data, num_hidden=4, name="fc"), name="bn")
    sym = sg.sym.SoftmaxOutput(net, name="softmax")
    x, y = _data(16)
    mod = _module(sym, [sg.cpu(0), sg.cpu(1)], 16, x)
    mod.forward(sg.io.DataBatch([sg.nd.array(x)], [sg.nd.array(y)]), is_train=True)
    per = [exe.aux_dict["bn_moving_mean"].asnumpy() for exe in mod.executors]
    assert not np.array_equal(per[0], per[1])  # each device saw its own half
    got = mod.get_params()[1]["bn_moving_mean"].asnumpy()
    np.testing.assert_allclose(got, (per[0].astype(np.float64) + per[1]) / 2, rtol=1e-6)


class _MarkingComm(HostCommunicator):
    """A host communicator that records the GPU path's step marks and waits."""

    def __init__(self, n: int) -> None:
        super().__init__(n)
        self.log: list[str] = []
        self.steps = 0

    def allreduce(self, replicas) -> None:
        self.log.append(f"reduce{self.steps}")
        super().allreduce(replicas)

    def mark(self) -> int:
        self.steps += 1
        return self.steps - 1

    def wait(self, mark: int) -> None:
        self.log.append(f"wait{mark}")


def test_host_runs_at_most_one_step_ahead() -> None:
    x, y = _data(16)
    mod = _module(mlp.build(), [sg.cpu(0), sg.cpu(1)], 8, x)
    mod._comm = comm = _MarkingComm(2)
    batch = sg.io.DataBatch([sg.nd.array(x[:8])], [sg.nd.array(y[:8])])
    for _ in range(4):
        mod.forward_backward_update(batch)
    # before step k (k >= 2) the host waits for step k - 2 to have completed
    assert comm.log == ["reduce0", "reduce1", "wait0", "reduce2", "wait1", "reduce3"]


def test_optimizer_states_move_between_one_and_two_devices(tmp_path) -> None:
    x, y = _data(32)
    batch = sg.io.DataBatch([sg.nd.array(x[:16])], [sg.nd.array(y[:16])])
    two = _module(mlp.build(), [sg.cpu(0), sg.cpu(1)], 16, x)
    one = _module(mlp.build(), sg.cpu(), 16, x)
    for mod in (two, one):
        for _ in range(3):
            mod.forward_backward_update(batch)
    two.save_checkpoint(str(tmp_path / "two"), 1, save_optimizer_states=True)
    one.save_checkpoint(str(tmp_path / "one"), 1, save_optimizer_states=True)
    saved_two = sg.model.load_arrays(str(tmp_path / "two-0001.states"), "t")
    saved_one = sg.model.load_arrays(str(tmp_path / "one-0001.states"), "t")
    assert sorted(saved_two) == sorted(saved_one)  # plain parameter indices
    for key, value in saved_one.items():
        np.testing.assert_allclose(saved_two[key], value, rtol=1e-4, atol=1e-6)
    # the one-device states loaded onto two devices: both continue like the one device
    fresh = _module(mlp.build(), [sg.cpu(0), sg.cpu(1)], 16, x)
    fresh.set_params(*one.get_params())
    fresh.load_optimizer_states(str(tmp_path / "one-0001.states"))
    fresh.forward_backward_update(batch)
    one.forward_backward_update(batch)
    for name, ref in one.get_params()[0].items():
        a, b = (exe.arg_dict[name].asnumpy() for exe in fresh.executors)
        assert a.tobytes() == b.tobytes()
        np.testing.assert_allclose(a, ref.asnumpy(), rtol=1e-4, atol=1e-6)


class _Recorder:
    """A monitor stand-in that records the executors it is installed on."""

    def __init__(self) -> None:
        self.execs: list = []

    def install(self, exe) -> None:
        self.execs.append(exe)


def test_rebind_for_a_new_batch_keeps_params_and_monitors_on_every_device() -> None:
    x, y = _data(16)
    sym = mlp.build()
    one = _module(sym, sg.cpu(), 16, x)
    two = _module(sym, [sg.cpu(0), sg.cpu(1)], 16, x)
    two.set_params(*one.get_params())
    mon = _Recorder()
    two.install_monitor(mon)
    assert mon.execs == two.executors
    small = sg.io.DataBatch([sg.nd.array(x[:6])], [sg.nd.array(y[:6])])
    for mod in (one, two):
        mod.forward(small, is_train=False)  # a batch of 6: rebinds, 3 rows per device
    assert [e.arg_dict["data"].shape[0] for e in two.executors] == [3, 3]
    assert mon.execs[2:] == two.executors
    for exe in two.executors:
        for name, value in one.get_params()[0].items():
            np.testing.assert_array_equal(exe.arg_dict[name].asnumpy(), value.asnumpy())
    np.testing.assert_allclose(two.get_outputs()[0].asnumpy(), one.get_outputs()[0].asnumpy(),
                               rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("ctx", [sg.cpu(), [sg.cpu(0), sg.cpu(1)]])
def test_failed_rebind_keeps_the_bound_executors(ctx) -> None:
    mod = sg.mod.Module(lenet.build(), context=ctx)
    mod.bind([("data", (16, 1, 28, 28))], [("softmax_label", (16,))])
    execs = list(mod._execs)
    with pytest.raises(BindError, match=r"label shapes for \['lbl'\].*\['softmax_label'\]"):
        mod.bind([("data", (8, 1, 28, 28))], [("lbl", (8,))], force_rebind=True)
    with pytest.raises(ShapeError, match=r"conv1 \(Convolution\): kernel \(5, 5\)"):
        mod.bind([("data", (8, 1, 3, 3))], [("softmax_label", (8,))], force_rebind=True)
    assert mod._execs == execs and mod._exec is execs[0]
    assert [d.shape for d in mod.data_shapes + mod.label_shapes] == [(16, 1, 28, 28), (16,)]
