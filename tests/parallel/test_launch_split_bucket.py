"""Launcher environments, MXNet's batch slicing and gradient buckets (no GPU needed)."""
from __future__ import annotations

import pytest

from symgraph.core.base import AttrError, BindError
from symgraph.training.parallel import make_buckets, split_batch, world_from_env


@pytest.mark.parametrize("env,want", [
    ({}, (0, 1, 0, "none")),
    ({"RANK": "3", "WORLD_SIZE": "4", "LOCAL_RANK": "1"}, (3, 4, 1, "torchrun")),
    ({"OMPI_COMM_WORLD_RANK": "1", "OMPI_COMM_WORLD_SIZE": "2",
      "OMPI_COMM_WORLD_LOCAL_RANK": "0"}, (1, 2, 0, "mpirun")),
    ({"SLURM_PROCID": "5", "SLURM_NTASKS": "8", "SLURM_LOCALID": "1"}, (5, 8, 1, "slurm")),
    # torchrun wins over an outer SLURM allocation; the local rank defaults to the rank
    ({"RANK": "1", "WORLD_SIZE": "2", "SLURM_PROCID": "0", "SLURM_NTASKS": "1"},
     (1, 2, 1, "torchrun")),
])
def test_world_from_env(env: dict, want: tuple) -> None:
    w = world_from_env(env)
    assert (w.rank, w.size, w.local_rank, w.launcher) == want
    assert (w.master_addr, w.master_port) == ("127.0.0.1", 29500)


def test_master_address_and_errors() -> None:
    w = world_from_env({"RANK": "0", "WORLD_SIZE": "2", "MASTER_ADDR": "node7",
                        "MASTER_PORT": "1234"})
    assert (w.master_addr, w.master_port, w.is_distributed) == ("node7", 1234, True)
    with pytest.raises(AttrError, match=r"RANK=2 is not in \[0, WORLD_SIZE=2\)"):
        world_from_env({"RANK": "2", "WORLD_SIZE": "2"})
    with pytest.raises(AttrError, match="WORLD_SIZE is not set"):
        world_from_env({"RANK": "0"})
    with pytest.raises(AttrError, match="MASTER_PORT='x'"):
        world_from_env({"MASTER_PORT": "x"})
    with pytest.raises(AttrError, match="SLURM_NTASKS='two'"):
        world_from_env({"SLURM_PROCID": "0", "SLURM_NTASKS": "two"})


def _mxnet_rule(batch: int, loads: list) -> list:
    """MXNet's executor_manager._split_input_slice, restated from its documentation:
    round(load * batch / total) each, the shortfall to the last device."""
    counts = [round(w * batch / sum(loads)) for w in loads]
    counts[-1] += batch - sum(counts) if sum(counts) < batch else 0
    out, start = [], 0
    for c in counts:
        stop = min(start + c, batch)
        out.append((start, stop))
        start = stop
    return out


@pytest.mark.parametrize("batch,loads", [(64, [1, 1]), (10, [1, 1, 1]), (7, [1, 2, 1]),
                                         (100, [0.5, 0.25, 0.25]), (5, [1, 1, 1, 1, 1])])
def test_split_batch_as_mxnet(batch: int, loads: list) -> None:
    got = [(s.start, s.stop) for s in split_batch(batch, loads)]
    assert got == _mxnet_rule(batch, loads)
    assert got[0][0] == 0 and got[-1][1] == batch


def test_split_batch_hand_values_and_errors() -> None:
    assert split_batch(10, None, 3) == [slice(0, 3), slice(3, 6), slice(6, 10)]
    assert split_batch(8, [3, 1]) == [slice(0, 6), slice(6, 8)]
    with pytest.raises(BindError, match="leaves device 2 no samples"):
        split_batch(2, [1, 1, 1])
    with pytest.raises(BindError, match="3 entries for 2 devices"):
        split_batch(8, [1, 1, 1], 2)
    with pytest.raises(BindError, match="positive"):
        split_batch(8, [1, 0])


def test_buckets_reverse_order_and_limit() -> None:
    sizes = [400, 40, 4000, 40, 100, 4]   # fc1_w, fc1_b, fc2_w, fc2_b, fc3_w, fc3_b
    buckets = make_buckets(sizes, limit_bytes=150)
    # 4 + 100 + 40 fit in 150; the 4000-byte gradient is alone; 40 + 400 do not fit
    assert [b.indices for b in buckets] == [(5, 4, 3), (2,), (1,), (0,)]
    assert [b.nbytes for b in buckets] == [144, 4000, 40, 400]
    every = [i for b in buckets for i in b.indices]
    assert sorted(every) == list(range(len(sizes)))
    one = make_buckets(sizes, limit_bytes=1 << 30)
    assert [b.indices for b in one] == [(5, 4, 3, 2, 1, 0)]
    custom = make_buckets([10, 10, 10], 15, production_order=[1, 0, 2])
    assert [b.indices for b in custom] == [(1,), (0,), (2,)]
    with pytest.raises(AttrError, match="not a permutation"):
        make_buckets([1, 2], 10, production_order=[0, 0])
    with pytest.raises(AttrError, match="positive"):
        make_buckets([1], 0)
