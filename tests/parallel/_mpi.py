"""Helpers: run a test function as the ranks of ``mpirun -np N`` (each rank pickles its result
to a file the parent reads); a thread-backed fake of mpi4py's communicator for machines
without MPI."""
from __future__ import annotations

import importlib
import importlib.util
import os
import pickle
import shutil
import subprocess
import sys
import threading
import traceback
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
HAVE_MPI = shutil.which("mpirun") is not None and importlib.util.find_spec("mpi4py") is not None
needs_mpi = pytest.mark.skipif(not HAVE_MPI, reason="needs mpirun and mpi4py")

# OpenMPI refuses root without these; oversubscribe: more ranks than this machine's cores
MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
           "OMPI_MCA_rmaps_base_oversubscribe": "1"}


def mpirun_env(**extra: str) -> dict:
    """The environment for an ``mpirun`` child: this checkout first on the path."""
    path = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    return {**os.environ, **MPI_ENV, "PYTHONPATH": path, **extra}


def run_mpi(fn: Callable, n: int, tmp: Path, *args: Any, timeout: float = 120) -> dict:
    """``{rank: ('ok', result) | ('error', text)}`` of ``fn(rank, *args)`` under mpirun."""
    (tmp / "args.pkl").write_bytes(pickle.dumps(args))
    cmd = ["mpirun", "-np", str(n), sys.executable, "-m", "tests.parallel._mpi",
           f"{fn.__module__}:{fn.__name__}", str(tmp)]
    proc = subprocess.run(cmd, env=mpirun_env(), cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout)
    out = {}
    for rank in range(n):
        path = tmp / f"rank{rank}.pkl"
        out[rank] = pickle.loads(path.read_bytes()) if path.exists() else \
            ("missing", f"rc {proc.returncode}\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}")
    return out


def _main(target: str, tmp: str) -> None:
    from mpi4py import MPI
    rank = MPI.COMM_WORLD.Get_rank()
    module, name = target.split(":")
    fn = getattr(importlib.import_module(module), name)
    args = pickle.loads((Path(tmp) / "args.pkl").read_bytes())
    try:
        result: Any = ("ok", fn(rank, *args))
    except BaseException as exc:  # reported to the parent, which asserts on it
        result = ("error", f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}")
    (Path(tmp) / f"rank{rank}.pkl").write_bytes(pickle.dumps(result))


class FakeComm:
    """mpi4py's ``Comm`` subset that ``MpiGroup`` uses, for ``size`` threads of one process."""

    def __init__(self, rank: int, shared: "FakeWorld") -> None:
        self.rank, self.shared = rank, shared

    def Get_rank(self) -> int:
        return self.rank

    def Get_size(self) -> int:
        return self.shared.size

    def _exchange(self, value: Any) -> list:
        return self.shared.exchange(self.rank, value)

    def Allreduce(self, send: np.ndarray, out: np.ndarray) -> None:
        parts = self._exchange(np.array(send, copy=True))
        out[...] = sum(parts[1:], parts[0].copy())

    def Bcast(self, buf: np.ndarray, root: int = 0) -> None:
        buf[...] = self._exchange(np.array(buf, copy=True))[root]

    def allgather(self, obj: Any) -> list:
        return self._exchange(obj)


class FakeWorld:
    """The shared state of the fake communicators: one slot per rank, a barrier per call."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.slots: list = [None] * size
        self.barrier = threading.Barrier(size, timeout=10)

    def exchange(self, rank: int, value: Any) -> list:
        self.slots[rank] = value
        self.barrier.wait()
        got = list(self.slots)
        self.barrier.wait()  # nobody overwrites a slot before everyone read them
        return got


def run_threads(fn: Callable, size: int, *args: Any) -> dict:
    """``{rank: ('ok', result) | ('error', text)}`` of ``fn(FakeComm, *args)`` on threads."""
    world, out = FakeWorld(size), {}

    def one(rank: int) -> None:
        try:
            out[rank] = ("ok", fn(FakeComm(rank, world), *args))
        except BaseException as exc:
            out[rank] = ("error", f"{type(exc).__name__}: {exc}")
    threads = [threading.Thread(target=one, args=(r,)) for r in range(size)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    return out


if __name__ == "__main__":
    _main(sys.argv[1], sys.argv[2])
