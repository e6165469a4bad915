"""The NCCL binding: call sequence checked against a recording stand-in on the CPU; the real
library and GPUs where present (``gpu`` / ``multigpu`` markers)."""
from __future__ import annotations

import ctypes
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import symgraph as sg
from symgraph.core.base import DTypeError
from symgraph.training.parallel import allreduce_grads, nccl
from symgraph.training.parallel.comm import HostCommunicator

ROOT = Path(__file__).resolve().parents[2]
# workers import this checkout first, then whatever the parent could import
PYTHONPATH = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])


class _Recorder:
    """Stands in for libnccl: records every call, returns ncclSuccess."""

    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def __getattr__(self, name: str):
        def call(*args):
            self.calls.append((name,) + args)
            return 0
        return call


class _Dev:
    def __init__(self, ptr: int) -> None:
        self.ptr = ptr


class _Arr:
    def __init__(self, ptr: int, shape: tuple, dtype=np.float32) -> None:
        self._data, self.shape, self.dtype = _Dev(ptr), shape, np.dtype(dtype)


class _Stream:
    def __init__(self, handle: int) -> None:
        self.handle = handle


def test_grouped_allreduce_call_sequence(monkeypatch: pytest.MonkeyPatch) -> None:
    rec = _Recorder()
    monkeypatch.setattr(nccl, "_LIB", [rec])
    comm = object.__new__(nccl.NcclCommunicator)
    comm.comms, comm.num_replicas = [111, 222], 2
    comm.streams = [_Stream(7), _Stream(8)]
    grads = [[_Arr(1000 * d + i, s) for i, s in enumerate([(4, 4), (4,), (10,)])]
             for d in range(2)]
    allreduce_grads(grads, comm, limit_bytes=64)  # buckets: [2, 1] (56 bytes), [0] (64)
    names = [c[0] for c in rec.calls]
    assert names == ["ncclGroupStart"] + ["ncclAllReduce"] * 4 + ["ncclGroupEnd",
                                                                  "ncclGroupStart"] + \
        ["ncclAllReduce"] * 2 + ["ncclGroupEnd"]
    first = [c[1:] for c in rec.calls[1:5]]
    # (send, recv, count, ncclFloat32=7, ncclSum=0, comm, stream): in place, per device
    assert first == [(2, 2, 10, 7, 0, 111, 7), (1002, 1002, 10, 7, 0, 222, 8),
                     (1, 1, 4, 7, 0, 111, 7), (1001, 1001, 4, 7, 0, 222, 8)]
    assert rec.calls[7][1:] == (0, 0, 16, 7, 0, 111, 7)


def test_cached_call_arguments_follow_buffers_and_streams(
        monkeypatch: pytest.MonkeyPatch) -> None:
    rec = _Recorder()
    monkeypatch.setattr(nccl, "_LIB", [rec])
    comm = object.__new__(nccl.NcclCommunicator)
    comm.comms, comm.num_replicas = [111, 222], 2
    comm.streams = [_Stream(7), _Stream(8)]
    bucket = [[_Arr(10 + d, (3,))] for d in range(2)]
    comm.allreduce(bucket)
    comm.allreduce([list(rep) for rep in bucket])  # new lists, same buffers: same calls
    calls = [c[1:] for c in rec.calls if c[0] == "ncclAllReduce"]
    assert calls == [(10, 10, 3, 7, 0, 111, 7), (11, 11, 3, 7, 0, 222, 8)] * 2
    del rec.calls[:]
    bucket[1][0] = _Arr(99, (3,))  # a new buffer on device 1 (same list object)
    comm.streams = [_Stream(5), _Stream(8)]
    comm.allreduce(bucket)
    calls = [c[1:] for c in rec.calls if c[0] == "ncclAllReduce"]
    assert calls == [(10, 10, 3, 7, 0, 111, 5), (99, 99, 3, 7, 0, 222, 8)]


def test_dtype_table_and_errors() -> None:
    assert nccl.nccl_dtype(np.float16, "w") == 6 and nccl.nccl_dtype(np.float64, "w") == 8
    with pytest.raises(DTypeError, match="fc1_weight has dtype bool"):
        nccl.nccl_dtype(np.bool_, "fc1_weight")
    assert ctypes.sizeof(nccl.UniqueId) == 128
    with pytest.raises(sg.ExecutionError, match="unique id has 5 bytes, expected 128"):
        nccl._uid(b"short")


def _have_nccl() -> bool:
    from symgraph.runtime.cuda.libs import load
    return load("nccl", required=False) is not None


@pytest.mark.gpu
def test_library_version_and_unique_id() -> None:
    if not _have_nccl():
        pytest.fail("NCCL not found: pip install 'symgraph[nccl]'")
    assert nccl.version() >= 21800
    uid = nccl.unique_id()
    assert len(uid) == 128 and uid != bytes(128)


@pytest.mark.gpu
@pytest.mark.multigpu
def test_nccl_allreduce_two_gpus(rng: np.random.Generator) -> None:
    host = [[rng.standard_normal(s).astype(np.float32) for s in [(33, 5), (7,)]]
            for _ in range(2)]
    grads = [[sg.nd.array(h, sg.gpu(d)) for h in rep] for d, rep in enumerate(host)]
    comm = nccl.NcclCommunicator([0, 1], timeout=60)
    allreduce_grads(grads, comm)
    comm.wait()
    ref = [[h.copy() for h in rep] for rep in host]
    HostCommunicator(2).allreduce(ref)
    for d in range(2):
        for i in range(2):
            np.testing.assert_allclose(grads[d][i].asnumpy(), ref[d][i], rtol=1e-6)
    assert grads[0][0].asnumpy().tobytes() == grads[1][0].asnumpy().tobytes()
    comm.close()


def _train(ctx, steps: int = 100, batch: int = 64):
    from symgraph.interop.models import simple_cnn
    rng = np.random.RandomState(0)
    x = rng.rand(batch * 4, 1, 28, 28).astype(np.float32)
    y = rng.randint(0, 10, batch * 4).astype(np.float32)
    it = sg.io.NDArrayIter(x, y, batch_size=batch)
    sg.random.seed(5)
    mod = sg.mod.Module(simple_cnn.build(), context=ctx)
    mod.bind(it.provide_data, it.provide_label)
    mod.init_params(sg.init.Xavier())
    mod.init_optimizer(kvstore="nccl", optimizer="sgd",  # joins the ranks under a launcher
                       optimizer_params={"learning_rate": 0.05, "momentum": 0.9})
    done = 0
    while done < steps:
        it.reset()
        for b in it:
            mod.forward_backward_update(b)
            done += 1
            if done == steps:
                break
    return mod


@pytest.mark.gpu
@pytest.mark.multigpu
def test_two_gpus_identical_and_close_to_one() -> None:
    # a few steps: over many, momentum SGD on random labels amplifies summation-order rounding
    two = _train([sg.gpu(0), sg.gpu(1)], steps=4)
    one = _train(sg.gpu(0), steps=4)
    ref = one.get_params()[0]
    for name in ref:
        a, b = (exe.arg_dict[name].asnumpy() for exe in two.executors)
        assert a.tobytes() == b.tobytes(), name
        np.testing.assert_allclose(a, ref[name].asnumpy(), rtol=2e-3, atol=2e-4)


SCRIPT = """
import numpy as np, symgraph as sg, sys
from tests.parallel.test_nccl import _train
mod = _train(sg.gpu(int(sys.argv[1])), steps=20)
arg = mod.get_params()[0]
np.savez(sys.argv[2], **{k: v.asnumpy() for k, v in arg.items()})
"""


@pytest.mark.gpu
@pytest.mark.multigpu
def test_two_processes_over_nccl(tmp_path: Path) -> None:
    from ._procs import free_port
    port, procs, key = free_port(), [], os.urandom(16).hex()
    for rank in (0, 1):
        env = {**os.environ, "RANK": str(rank), "WORLD_SIZE": "2", "LOCAL_RANK": str(rank),
               "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port), "SYMGRAPH_JOB_KEY": key,
               "SYMGRAPH_DIST_TIMEOUT": "120", "PYTHONPATH": PYTHONPATH}
        procs.append(subprocess.Popen([sys.executable, "-c", SCRIPT, str(rank),
                                       str(tmp_path / f"r{rank}.npz")], env=env, cwd=ROOT))
    assert [p.wait(timeout=300) for p in procs] == [0, 0]
    a, b = np.load(tmp_path / "r0.npz"), np.load(tmp_path / "r1.npz")
    for k in a.files:
        assert a[k].tobytes() == b[k].tobytes(), k
