"""CPU data parallelism across processes on MPI: the group on a fake communicator (threads),
then real ranks under ``mpirun`` (skipped without mpirun and mpi4py)."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import symgraph as sg
from symgraph.core.base import AttrError, ShapeError
from symgraph.interop.models import simple_cnn
from symgraph.training.parallel.comm import HostCommunicator
from symgraph.training.parallel.launch import WorldInfo
from symgraph.training.parallel.mpi import MpiGroup, mpi_group

from ._mpi import needs_mpi, run_mpi, run_threads
from ._procs import run_ranks


def _reduce(comm, seed: int) -> list:
    rank = comm.Get_rank()
    rng = np.random.default_rng(seed + rank)
    reps = [[rng.standard_normal((3, 4)).astype(np.float32),
             rng.integers(-9, 9, 5).astype(np.int64),
             rng.standard_normal(6).astype(np.float16)] for _ in range(2)]
    mine = [sum(r[i].astype(np.float64) for r in reps) for i in range(3)]
    HostCommunicator(2, MpiGroup(comm)).allreduce(reps)
    assert all(a.tobytes() == b.tobytes() for a, b in zip(reps[0], reps[1]))
    start = [np.full(3, rank + 0.1, np.float64)]
    HostCommunicator(1, MpiGroup(comm)).broadcast([start])
    return [mine, reps[0], start[0]]


def test_fake_mpi_sums_over_processes_and_devices() -> None:
    out = run_threads(_reduce, 3, 11)
    assert all(s == "ok" for s, _ in out.values()), out
    for i, tol in [(0, 1e-6), (1, 0), (2, 2e-3)]:
        want = sum(out[r][1][0][i] for r in range(3))
        for rank in range(3):
            np.testing.assert_allclose(out[rank][1][1][i].astype(np.float64), want, rtol=tol,
                                       atol=tol)
            assert out[rank][1][1][i].tobytes() == out[0][1][1][i].tobytes()
    for rank in range(3):  # rank 0's value, bit for bit
        assert out[rank][1][2].tobytes() == np.full(3, 0.1).tobytes()


def _same_bytes_other_layout(comm, shape: tuple, dtype: str) -> str:
    rank = comm.Get_rank()
    grad = np.ones((2, 3), np.float32) if rank == 0 else np.ones(shape, dtype)
    try:
        HostCommunicator(1, MpiGroup(comm)).allreduce([[grad]])
    except ShapeError as exc:
        return str(exc)
    return "summed"


@pytest.mark.parametrize("shape,dtype,want", [
    ((3, 2), "float32", "array 0 is (2, 3) float32 on rank 0 and (3, 2) float32 on rank 1"),
    ((2, 3), "int32", "array 0 is (2, 3) float32 on rank 0 and (2, 3) int32 on rank 1")])
def test_same_byte_count_other_shape_or_dtype_is_refused(shape: tuple, dtype: str,
                                                         want: str) -> None:
    out = run_threads(_same_bytes_other_layout, 2, shape, dtype)
    assert out[0] == out[1], out
    assert "allreduce: the ranks disagree before the first all-reduce" in out[0][1]
    assert want in out[0][1]


def test_group_refuses_non_mpi_launchers_and_missing_mpi4py(monkeypatch) -> None:
    with pytest.raises(AttrError, match="runs on MPI, but the ranks were started by torchrun; "
                                        "start them with mpirun -np 2 or srun -n 2"):
        mpi_group(WorldInfo(0, 2, 0, launcher="torchrun"))
    monkeypatch.setitem(sys.modules, "mpi4py", None)  # as if it were not installed
    with pytest.raises(AttrError, match="needs mpi4py .*pip install mpi4py"):
        mpi_group(WorldInfo(0, 2, 0, launcher="mpirun"))


def _dist_kv(rank: int) -> str:
    try:
        sg.kv.create("dist_sync")
    except AttrError as exc:
        return str(exc)
    return "created"


def test_cpu_ranks_from_torchrun_are_told_to_use_mpirun() -> None:
    out = run_ranks(_dist_kv, 2, timeout=30)
    assert "started by torchrun; start them with mpirun -np 2" in out[1][1], out


def _cnn(rank: int, size: int, x: np.ndarray, y: np.ndarray, sym: str = "cnn") -> dict:
    """Train the seed CNN on this rank's part of every global batch of 8 (2 steps)."""
    net = simple_cnn.build() if sym == "cnn" else _fc(rank)
    per = len(x) // 2 // size
    sg.random.seed(5)
    mod = sg.mod.Module(net, context=sg.cpu())
    mod.bind([("data", (per,) + x.shape[1:])], [("softmax_label", (per,))])
    mod.init_params(sg.init.Xavier())
    if rank == 1:  # another start: rank 0's parameters must win at init_optimizer
        mod.init_params(sg.init.Uniform(0.5), force_init=True)
    mod.init_optimizer(kvstore="dist_sync" if size > 1 else "local", optimizer="sgd",
                       optimizer_params={"learning_rate": 0.05, "momentum": 0.9})
    for step in range(2):
        start = step * per * size + rank * per  # this rank's part of global batch ``step``
        part = slice(start, start + per)
        mod.forward_backward_update(sg.io.DataBatch([sg.nd.array(x[part])],
                                                    [sg.nd.array(y[part])]))
    return {k: v.asnumpy() for k, v in mod.get_params()[0].items()}


def _fc(rank: int) -> sg.sym.Symbol:
    """A layer of 8 units on rank 0 and of 6 on rank 1."""
    fc = sg.sym.FullyConnected(sg.sym.var("data"), num_hidden=8 if rank == 0 else 6,
                               name="fc")
    return sg.sym.SoftmaxOutput(fc, name="softmax")


@needs_mpi
def test_two_mpi_ranks_train_the_seed_cnn_as_one_process_with_twice_the_batch(
        tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    x = rng.random((16, 1, 28, 28)).astype(np.float32)
    y = rng.integers(0, 10, 16).astype(np.float32)
    out = run_mpi(_cnn, 2, tmp_path, 2, x, y, timeout=240)
    assert all(s == "ok" for s, _ in out.values()), out
    one = _cnn(0, 1, x, y)  # batch 8 = both ranks' 4
    for name, want in one.items():
        assert out[0][1][name].tobytes() == out[1][1][name].tobytes(), name
        np.testing.assert_allclose(out[0][1][name], want, rtol=1e-6, atol=1e-6,
                                   err_msg=name)


@needs_mpi
def test_mpi_ranks_with_other_parameter_shapes_fail_naming_it(tmp_path: Path) -> None:
    out = run_mpi(_cnn, 2, tmp_path, 2, np.ones((8, 1), np.float32), np.zeros(8, np.float32),
                  "fc", timeout=120)
    for rank in (0, 1):
        status, text = out[rank]
        assert status == "error" and "ShapeError: Module.init_optimizer" in text, out
        assert "fc_weight is (8, 1) float32 on rank 0 and (6, 1) float32 on rank 1" in text
