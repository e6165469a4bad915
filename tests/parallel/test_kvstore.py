"""``sg.kv``: MXNet's KVStore API on CPU arrays, one process and two."""
from __future__ import annotations

import numpy as np
import pytest

import symgraph as sg
from symgraph.core.base import AttrError, BindError

from ._mpi import needs_mpi, run_mpi


def test_types_and_unknown_name() -> None:
    kv = sg.kv.create("device")
    assert (kv.type, kv.rank, kv.num_workers) == ("device", 0, 1)
    assert sg.kvstore.create is sg.kv.create
    with pytest.raises(AttrError, match=r"kvstore 'dist_async' is not supported; choose one of"):
        sg.kv.create("dist_async")
    with pytest.raises(AttrError, match="'bogus'"):
        sg.kv.create("bogus")


def test_init_push_pull_sums_device_values(rng: np.random.Generator) -> None:
    kv = sg.kv.create("local")
    w = rng.standard_normal((2, 3)).astype(np.float32)
    kv.init(3, sg.nd.array(w))
    out = sg.nd.zeros((2, 3))
    kv.pull(3, out=out)
    np.testing.assert_array_equal(out.asnumpy(), w)
    grads = [rng.standard_normal((2, 3)).astype(np.float32) for _ in range(3)]
    kv.push(3, [sg.nd.array(g, sg.cpu(i)) for i, g in enumerate(grads)])
    outs = [sg.nd.zeros((2, 3), sg.cpu(i)) for i in range(2)]
    kv.pull(3, out=outs)
    want = grads[0].astype(np.float64) + grads[1] + grads[2]
    for o in outs:
        np.testing.assert_allclose(o.asnumpy(), want, rtol=1e-6)
    # string keys and lists of keys, pushpull into the value itself
    kv.init(["a", "b"], [sg.nd.ones(2), sg.nd.zeros(2)])
    vals = [sg.nd.array([1.0, 2.0]), sg.nd.array([3.0, 4.0])]
    kv.pushpull(["a", "b"], vals)
    np.testing.assert_array_equal(vals[1].asnumpy(), [3.0, 4.0])


def test_set_optimizer_updates_on_the_store() -> None:
    kv = sg.kv.create("local")
    kv.set_optimizer(sg.optimizer.SGD(learning_rate=0.5))
    kv.init(0, sg.nd.array([1.0, 2.0]))
    kv.push(0, [sg.nd.array([1.0, 1.0]), sg.nd.array([1.0, 3.0])])  # summed: [2, 4]
    out = sg.nd.zeros(2)
    kv.pull(0, out=out)
    np.testing.assert_allclose(out.asnumpy(), [1.0 - 0.5 * 2, 2.0 - 0.5 * 4])


def test_errors_name_key_and_shapes() -> None:
    kv = sg.kv.create("local")
    with pytest.raises(AttrError, match="key 7 was not initialised"):
        kv.pull(7, out=sg.nd.zeros(1))
    kv.init(7, sg.nd.zeros((2, 2)))
    with pytest.raises(AttrError, match="key 7 is already initialised"):
        kv.init(7, sg.nd.zeros((2, 2)))
    with pytest.raises(BindError, match=r"key 7 has shape \(2, 2\), pushed \(3,\)"):
        kv.push(7, sg.nd.zeros(3))
    before = sg.nd.ones(3)
    with pytest.raises(BindError, match=r"out has \(3,\)"):
        kv.pull(7, out=before)
    np.testing.assert_array_equal(before.asnumpy(), 1.0)


def _dist_kv(rank: int) -> list:
    kv = sg.kv.create("dist_sync")
    kv.init("w", sg.nd.array([10.0 * (rank + 1)] * 2))  # rank 0's value wins
    start = sg.nd.zeros(2)
    kv.pull("w", out=start)
    kv.push("w", [sg.nd.array([rank + 1.0, 1.0]), sg.nd.array([1.0, 0.0])])
    out = sg.nd.zeros(2)
    kv.pull("w", out=out)
    return [kv.rank, kv.num_workers, start.asnumpy().tolist(), out.asnumpy().tolist()]


@needs_mpi
def test_dist_sync_two_processes(tmp_path) -> None:
    res = run_mpi(_dist_kv, 2, tmp_path)
    assert all(s == "ok" for s, _ in res.values()), res
    for rank in (0, 1):
        r, n, start, out = res[rank][1]
        assert (r, n) == (rank, 2)
        assert start == [10.0, 10.0]
        assert out == [(1 + 1) + (2 + 1), 2.0]  # both devices of both workers
