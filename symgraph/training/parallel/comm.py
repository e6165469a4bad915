"""Communicators: sum arrays across the replicas of this process and across processes.

A communicator offers ``allreduce(replicas)``: ``replicas[d]`` is a list of arrays (one bucket)
on local device ``d``; afterwards every array holds the sum over all devices of all processes.
Every replica ends with the *same* bits: the sum is formed once, in a fixed order (device 0, 1,
...; rank 0, 1, ...), and copied to all of them, so optimizer steps keep replicas identical.

- :class:`HostCommunicator` sums on the host: numpy arrays, or NDArrays on ``sg.cpu(i)``
  contexts (copied through the host when on a GPU), and across processes through a
  :class:`~.mpi.ProcessGroup` (MPI under mpirun or srun). It is the communicator of CPU
  training and of CI; it needs no GPU. Before its first collective the processes compare a
  manifest of the arrays (:mod:`.manifest`; trainers give one naming their parameters).
- ``nccl.NcclCommunicator`` does the same on GPUs through NCCL.

:func:`allreduce_grads` is the entry point for trainers (Module, Gluon's Trainer): it buckets
gradients (:mod:`.bucket`) and reduces bucket by bucket.
"""
from __future__ import annotations

from typing import Any, Optional, Protocol, Sequence

import numpy as np

from ...core.base import ShapeError
from . import manifest
from .bucket import DEFAULT_BUCKET_BYTES, make_buckets
from .mpi import ProcessGroup


class Communicator(Protocol):
    """What trainers need of a communicator."""

    num_replicas: int

    def allreduce(self, replicas: Sequence[Sequence[Any]]) -> None:
        """Sum ``replicas[d][i]`` over ``d`` (and over processes), in place, identically."""

    def broadcast(self, replicas: Sequence[Sequence[Any]], root: int = 0) -> None:
        """Copy the root replica (of rank 0) into every replica of every process."""


def _host(x: Any) -> np.ndarray:
    return x if isinstance(x, np.ndarray) else x.asnumpy()


class HostCommunicator:
    """Sums on the host (see the module docstring); ``group`` joins processes."""

    def __init__(self, num_replicas: int, group: Optional[ProcessGroup] = None) -> None:
        self.num_replicas = num_replicas
        self.group = group if group is not None and group.size > 1 else None
        self._verified = self.group is None

    @property
    def rank(self) -> int:
        return self.group.rank if self.group else 0

    @property
    def size(self) -> int:
        return self.group.size if self.group else 1

    def check_manifest(self, names: Sequence[str], arrays: Sequence[Any],
                       what: str = "allreduce") -> None:
        """Compare ``(name, shape, dtype)`` of ``arrays`` across the processes (a
        collective: every rank calls it); ShapeError naming the first difference."""
        if self.group is not None:
            manifest.check(manifest.manifest_of(names, arrays), self.group.allgather, what)
        self._verified = True

    def _verify(self, arrays: Sequence[Any], what: str) -> None:
        # without a caller's manifest, the first collective's arrays are compared: every
        # rank makes a first call, so every rank joins this check
        if not self._verified:
            self.check_manifest([f"array {i}" for i in range(len(arrays))], arrays, what)

    def allreduce(self, replicas: Sequence[Sequence[Any]]) -> None:
        _check_replicas(replicas, self.num_replicas)
        self._verify(replicas[0], "allreduce")
        for members in _by_dtype(replicas[0]):
            flat = [np.concatenate([_host(rep[i]).ravel() for i in members])
                    for rep in replicas]
            total = flat[0].copy()
            for part in flat[1:]:
                total += part
            if self.group is not None:
                total = self.group.allreduce(total)
            for rep in replicas:
                _scatter(total, [rep[i] for i in members])

    def broadcast(self, replicas: Sequence[Sequence[Any]], root: int = 0) -> None:
        _check_replicas(replicas, self.num_replicas)
        self._verify(replicas[root], "broadcast")
        for members in _by_dtype(replicas[0]):
            flat = np.concatenate([_host(replicas[root][i]).ravel() for i in members])
            if self.group is not None:
                flat = self.group.broadcast(flat)
            for rep in replicas:
                _scatter(flat, [rep[i] for i in members])


def _scatter(flat: np.ndarray, arrays: Sequence[Any]) -> None:
    start = 0
    for x in arrays:
        n = int(np.prod(x.shape))
        value = flat[start:start + n].reshape(x.shape)
        if isinstance(x, np.ndarray):
            x[...] = value
        else:
            x[:] = value
        start += n


def _by_dtype(arrays: Sequence[Any]) -> list[list[int]]:
    groups: dict[str, list[int]] = {}
    for i, x in enumerate(arrays):
        groups.setdefault(np.dtype(x.dtype).str, []).append(i)
    return list(groups.values())


def _check_replicas(replicas: Sequence[Sequence[Any]], want: int) -> None:
    if len(replicas) != want:
        raise ShapeError(f"allreduce: {len(replicas)} replicas given, the communicator joins "
                         f"{want}")
    first = replicas[0]
    for d, rep in enumerate(replicas):
        if len(rep) != len(first):
            raise ShapeError(f"allreduce: replica {d} has {len(rep)} arrays, replica 0 has "
                             f"{len(first)}")
        for i, (a, b) in enumerate(zip(first, rep)):
            if tuple(a.shape) != tuple(b.shape) or np.dtype(a.dtype) != np.dtype(b.dtype):
                raise ShapeError(f"allreduce: array {i} is {tuple(b.shape)} {b.dtype} on "
                                 f"replica {d}, {tuple(a.shape)} {a.dtype} on replica 0")


def allreduce_grads(grad_lists: Sequence[Sequence[Any]], comm: Optional[Any] = None,
                    limit_bytes: int = DEFAULT_BUCKET_BYTES) -> None:
    """Sum gradients across replicas (and processes), bucket by bucket, in place.

    ``grad_lists[d][i]`` is gradient ``i`` on local device ``d`` (parameters in forward order,
    so the last layers' gradients, written first by backward, form the first bucket).
    ``comm`` defaults to a :class:`HostCommunicator` over the given replicas. This is the call
    Gluon's ``Trainer(kvstore=...)`` makes before its update."""
    if not grad_lists or not grad_lists[0]:
        return
    comm = comm or HostCommunicator(len(grad_lists))
    sizes = [int(np.prod(g.shape)) * np.dtype(g.dtype).itemsize for g in grad_lists[0]]
    for bucket in make_buckets(sizes, limit_bytes):
        comm.allreduce([[rep[i] for i in bucket.indices] for rep in grad_lists])
