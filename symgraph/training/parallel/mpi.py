"""Sums across processes on MPI: the CPU data-parallel path under ``mpirun`` or ``srun``.

:class:`ProcessGroup` is what :class:`~.comm.HostCommunicator` needs of the other processes:
an in-place sum, a broadcast from rank 0 and an all-gather of bytes (the manifests).
:class:`MpiGroup` implements it on any object with mpi4py's ``Comm`` methods (``Allreduce``,
``Bcast``, ``allgather``, ``Get_rank``, ``Get_size``), so tests drive it with a fake one; the
real one is ``mpi4py.MPI.COMM_WORLD``, imported only when a job asks for it. MPI moves the
bytes, so gradients no longer pass through rank 0's sockets, and MPI's launcher, not a TCP
port, decides who belongs to the job.

Example (each process of ``mpirun -np 2 python train.py``)::

    group = mpi_group(world_from_env())
    total = group.allreduce(np.ones(3, np.float32))     # [2, 2, 2] on both ranks
"""
from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from ...core.base import AttrError
from .launch import WorldInfo

# launchers whose processes form one MPI world (torchrun's do not)
MPI_LAUNCHERS = ("mpirun", "slurm")
# MPI has no 16-bit float sum: such buckets travel, and are summed, as float32
_WIRE = {np.dtype(np.float16): np.dtype(np.float32)}


class ProcessGroup(Protocol):
    """The other processes of a job, as the host communicator uses them."""

    rank: int
    size: int

    def allreduce(self, flat: np.ndarray) -> np.ndarray:
        """The sum of every rank's ``flat`` (same shape and dtype), identical on all."""

    def broadcast(self, flat: np.ndarray) -> np.ndarray:
        """Rank 0's ``flat`` on every rank."""

    def allgather(self, payload: bytes) -> list[bytes]:
        """Every rank's ``payload``, in rank order."""


class MpiGroup:
    """A :class:`ProcessGroup` on an mpi4py-style communicator ``comm``."""

    def __init__(self, comm: Any) -> None:
        self.comm = comm
        self.rank = int(comm.Get_rank())
        self.size = int(comm.Get_size())

    def allreduce(self, flat: np.ndarray) -> np.ndarray:
        wire = _WIRE.get(flat.dtype, flat.dtype)
        send = np.ascontiguousarray(flat, dtype=wire)
        out = np.empty_like(send)
        self.comm.Allreduce(send, out)  # mpi4py's default op is SUM
        return out.astype(flat.dtype, copy=False)

    def broadcast(self, flat: np.ndarray) -> np.ndarray:
        buf = np.ascontiguousarray(flat).copy()
        self.comm.Bcast(buf.view(np.uint8), root=0)  # bytes: any dtype, bit for bit
        return buf

    def allgather(self, payload: bytes) -> list[bytes]:
        return [bytes(p) for p in self.comm.allgather(bytes(payload))]


def mpi_group(world: WorldInfo) -> MpiGroup:
    """The MPI world of this process, checked against what the launcher said.

    AttrError when the launcher is not an MPI one, mpi4py is missing, or MPI's rank and size
    differ from the launcher's variables."""
    if world.launcher not in MPI_LAUNCHERS:
        raise AttrError(
            f"CPU data parallelism across processes runs on MPI, but the ranks were started "
            f"by {world.launcher}; start them with mpirun -np {world.size} or srun -n "
            f"{world.size} (torchrun's ranks can train on GPUs, over NCCL)")
    try:
        from mpi4py import MPI
    except ImportError as exc:
        raise AttrError(f"CPU data parallelism across processes needs mpi4py ({exc}); "
                        f"pip install mpi4py (with an MPI such as OpenMPI)") from None
    group = MpiGroup(MPI.COMM_WORLD)
    if (group.rank, group.size) != (world.rank, world.size):
        raise AttrError(f"MPI says rank {group.rank} of {group.size}, the {world.launcher} "
                        f"environment rank {world.rank} of {world.size}; the process was "
                        f"not started by the MPI that mpi4py uses")
    return group
