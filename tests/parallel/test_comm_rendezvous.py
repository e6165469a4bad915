"""Host communicator, TCP rendezvous between local processes, timeouts and dead ranks."""
from __future__ import annotations

import os
import time

import numpy as np
import pytest

import symgraph as sg
from symgraph.core.base import ShapeError
from symgraph.training.parallel import HostCommunicator, allreduce_grads, world_from_env
from symgraph.training.parallel.rendezvous import Rendezvous, RendezvousError

from ._procs import run_ranks


def test_host_allreduce_sums_in_place_identically(rng: np.random.Generator) -> None:
    reps = [[rng.standard_normal((3, 4)).astype(np.float32),
             rng.standard_normal(5).astype(np.float32),
             rng.integers(0, 9, 6).astype(np.int64)] for _ in range(3)]
    want = [sum(r[i].astype(np.float64) for r in reps) for i in range(3)]
    HostCommunicator(3).allreduce(reps)
    for i in range(3):
        np.testing.assert_allclose(reps[0][i], want[i], rtol=1e-6)
        assert reps[0][i].dtype == (np.int64 if i == 2 else np.float32)
        for r in reps[1:]:
            assert r[i].tobytes() == reps[0][i].tobytes()


def test_allreduce_grads_on_ndarrays_and_buckets(rng: np.random.Generator) -> None:
    host = [[rng.standard_normal(s).astype(np.float32) for s in [(8, 8), (8,), (2, 8)]]
            for _ in range(2)]
    grads = [[sg.nd.array(h, sg.cpu(d)) for h in rep] for d, rep in enumerate(host)]
    allreduce_grads(grads, limit_bytes=64)  # several buckets
    for i in range(3):
        np.testing.assert_allclose(grads[1][i].asnumpy(), host[0][i] + host[1][i], rtol=1e-6)
        assert grads[0][i].asnumpy().tobytes() == grads[1][i].asnumpy().tobytes()


def test_allreduce_refuses_mismatched_replicas() -> None:
    a = [np.zeros((2, 3), np.float32)]
    b = [np.zeros((3, 2), np.float32)]
    with pytest.raises(ShapeError, match=r"array 0 is \(3, 2\) float32 on replica 1"):
        HostCommunicator(2).allreduce([a, b])
    with pytest.raises(ShapeError, match="3 replicas given, the communicator joins 2"):
        HostCommunicator(2).allreduce([a, a, a])


def _exchange(rank: int) -> list:
    peers = Rendezvous(world_from_env(), timeout=20).connect()
    uid = peers.broadcast(b"unique-id-from-rank-0" if rank == 0 else None)
    parts = peers.allgather(f"rank {rank}".encode())
    peers.close()
    return [uid, parts]


def test_three_processes_rendezvous_broadcast_and_allgather() -> None:
    out = run_ranks(_exchange, 3)
    assert {r: s for r, (s, _) in out.items()} == {0: "ok", 1: "ok", 2: "ok"}, out
    for rank in (0, 1, 2):
        uid, parts = out[rank][1]
        assert uid == b"unique-id-from-rank-0"
        assert parts == [b"rank 0", b"rank 1", b"rank 2"]


def _alone(rank: int) -> str:
    tic = time.monotonic()
    try:
        Rendezvous(world_from_env(), timeout=1.5).connect()
    except RendezvousError as exc:
        return f"{exc.ranks}|{exc}|{time.monotonic() - tic:.2f}"
    return "no error"


def test_rank_that_never_arrives_is_named_within_timeout() -> None:
    out = run_ranks(_alone, 3, ranks=[0, 1])  # rank 2 never starts
    ranks, message, took = out[0][1].split("|")
    assert ranks == "(2,)" and "rank(s) [2] of world size 3 did not arrive within 1.5 s" \
        in message
    assert 1.4 < float(took) < 5.0


def test_missing_rank_zero_is_named_within_timeout() -> None:
    out = run_ranks(_alone, 2, ranks=[1])
    ranks, message, took = out[1][1].split("|")
    assert ranks == "(0,)" and "rank 1 could not reach rank 0" in message
    assert float(took) < 5.0


def _recv_error(peers) -> str:
    """``ranks|message|seconds`` of the RendezvousError that waiting for rank 1's next
    message ends with (``no error`` if one arrives)."""
    tic = time.monotonic()
    try:
        peers.recv(1)
    except RendezvousError as exc:
        return f"{exc.ranks}|{exc}|{time.monotonic() - tic:.2f}"
    return "no error"


def _one_dies(rank: int) -> str:
    peers = Rendezvous(world_from_env(), timeout=30).connect()
    if rank == 1:
        os._exit(0)  # dies without a word after the rendezvous
    return _recv_error(peers)


def test_dead_rank_ends_the_others_with_its_name() -> None:
    out = run_ranks(_one_dies, 2, ranks=[0, 1], timeout=30)
    ranks, message, took = out[0][1].split("|")
    assert ranks == "(1,)" and "rank 1 closed its connection" in message
    assert float(took) < 5.0  # not the 30 s timeout: the closed socket says it at once


def _one_hangs(rank: int) -> str:
    peers = Rendezvous(world_from_env(), timeout=1.0).connect()
    if rank == 1:
        time.sleep(6)  # alive, connected, but never joins the all-reduce
        return "slept"
    return _recv_error(peers)


def test_hanging_rank_is_named_within_timeout() -> None:
    out = run_ranks(_one_hangs, 2, timeout=30)
    ranks, message, took = out[0][1].split("|")
    assert ranks == "(1,)" and "rank 1 sent no whole message within 1 s" in message
    assert 0.9 < float(took) < 4.0
