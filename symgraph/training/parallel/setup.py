"""Choosing the data-parallel path: which module class, which communicator.

``Module(context=[...])`` with several contexts, or any Module in a process that a launcher
started as one of several ranks (``WORLD_SIZE > 1`` and friends), is a
:class:`~.group.DataParallelModule`. Its kvstore type then picks the communicator:

==================================  ==================================================
``kvstore``                         communicator
==================================  ==================================================
``local``, ``device``, ``nccl``     this process's devices: NCCL between GPUs, host
                                    sums between ``cpu(i)`` replicas
``dist_sync``, ``dist_device_sync``  the same, joined with the other ranks: NCCL over
``dist``, ``nccl`` under a launcher  ``ncclCommInitRank`` on GPUs (bootstrapped by the
                                    authenticated rendezvous at ``MASTER_ADDR:MASTER_PORT``),
                                    MPI on CPUs (under mpirun or srun, :mod:`.mpi`)
``None``                            as ``local`` (several devices are always summed)
==================================  ==================================================
"""
from __future__ import annotations

from typing import Any, Sequence

from ...core import config
from ...core.context import Context
from .launch import world_from_env

TIMEOUT_ENV = "SYMGRAPH_DIST_TIMEOUT"


def timeout() -> float:
    """Seconds a rendezvous or a collective may wait for a peer (``SYMGRAPH_DIST_TIMEOUT``,
    default 300; a value that is not a positive number of seconds is an AttrError)."""
    return config.get(TIMEOUT_ENV)


def wants_data_parallel(args: Sequence[Any], kwargs: dict) -> bool:
    """Whether ``Module(*args, **kwargs)`` needs the data-parallel module."""
    context = kwargs.get("context", args[3] if len(args) > 3 else None)
    if isinstance(context, (list, tuple)) and len(context) > 1:
        return True
    return world_from_env().size > 1


def make_communicator(kvstore: Any, contexts: Sequence[Context]) -> tuple[Any, int, str]:
    """``(communicator, number of processes, kvstore type)`` for ``kvstore`` over
    ``contexts``; an unknown type raises ``AttrError`` listing the choices."""
    from ..kvstore import KVStore, check_type, is_distributed, peers_for
    name = kvstore.type if isinstance(kvstore, KVStore) else \
        ("local" if kvstore is None else check_type(kvstore))
    world = world_from_env()
    joined = is_distributed(name, world) and world.size > 1
    workers = world.size if joined else 1
    if contexts[0].device_type == "gpu":
        from .nccl import NcclCommunicator
        peers = peers_for(world, timeout()) if joined else None
        return NcclCommunicator([c.device_id for c in contexts], peers, timeout()), workers, name
    from .comm import HostCommunicator
    from .mpi import mpi_group
    return HostCommunicator(len(contexts), mpi_group(world) if joined else None), workers, name
