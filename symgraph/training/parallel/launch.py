"""Rank, world size and rendezvous address from the environment launchers set.

Looked up in this order (the first launcher whose rank variable is set wins):

- torchrun / ``torch.distributed.launch``: ``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``;
- OpenMPI's ``mpirun``: ``OMPI_COMM_WORLD_RANK``, ``OMPI_COMM_WORLD_SIZE``,
  ``OMPI_COMM_WORLD_LOCAL_RANK``;
- SLURM's ``srun``: ``SLURM_PROCID``, ``SLURM_NTASKS``, ``SLURM_LOCALID``.

The rendezvous address is ``MASTER_ADDR``/``MASTER_PORT`` for all of them (defaults
``127.0.0.1:29500``, torchrun's port), so ``mpirun -x MASTER_ADDR=host0`` or an ``sbatch``
script exporting it selects rank 0's host. Without any launcher the process is rank 0 of 1.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Mapping, Optional

from ...core.base import AttrError

DEFAULT_ADDR = "127.0.0.1"
DEFAULT_PORT = 29500

# launcher: (rank variable, size variable, local rank variable)
LAUNCHERS: dict[str, tuple[str, str, str]] = {
    "torchrun": ("RANK", "WORLD_SIZE", "LOCAL_RANK"),
    "mpirun": ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"),
    "slurm": ("SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"),
}


@dataclass(frozen=True)
class WorldInfo:
    """Where this process stands: ``rank`` of ``size``, ``local_rank`` on its host (the GPU it
    drives), the rendezvous address, and which launcher said so (``'none'`` when alone)."""

    rank: int = 0
    size: int = 1
    local_rank: int = 0
    master_addr: str = DEFAULT_ADDR
    master_port: int = DEFAULT_PORT
    launcher: str = "none"

    @property
    def is_distributed(self) -> bool:
        return self.size > 1


def _int(env: Mapping[str, str], name: str, default: Optional[int]) -> int:
    text = env.get(name)
    if text is None or text == "":
        if default is None:
            raise AttrError(f"environment: {name} is not set")
        return default
    try:
        return int(text)
    except ValueError:
        raise AttrError(f"environment: {name}={text!r} is not an integer") from None


def world_from_env(env: Optional[Mapping[str, str]] = None) -> WorldInfo:
    """The :class:`WorldInfo` described by ``env`` (``os.environ`` by default); inconsistent
    values (a rank outside ``[0, size)``, a port outside 1..65535) raise ``AttrError`` naming
    the variables."""
    env = os.environ if env is None else env
    addr = env.get("MASTER_ADDR") or DEFAULT_ADDR
    port = _int(env, "MASTER_PORT", DEFAULT_PORT)
    if not 0 < port < 65536:
        raise AttrError(f"environment: MASTER_PORT={port} is not a TCP port (1..65535)")
    for launcher, (rank_var, size_var, local_var) in LAUNCHERS.items():
        if env.get(rank_var, "") == "":
            continue
        rank = _int(env, rank_var, None)
        size = _int(env, size_var, None)
        local = _int(env, local_var, rank)
        if size < 1 or not 0 <= rank < size:
            raise AttrError(f"environment ({launcher}): {rank_var}={rank} is not in "
                            f"[0, {size_var}={size})")
        if local < 0:
            raise AttrError(f"environment ({launcher}): {local_var}={local} is negative")
        return WorldInfo(rank, size, local, addr, port, launcher)
    return WorldInfo(0, 1, 0, addr, port, "none")
