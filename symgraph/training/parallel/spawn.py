"""``symgraph launch -n N COMMAND ...``: start N ranks of a job on this host, torchrun-style.

Each rank gets ``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``, ``MASTER_ADDR=127.0.0.1``,
``MASTER_PORT`` (a free port unless given) and the job key ``SYMGRAPH_JOB_KEY`` (the caller's,
or a fresh random one), so its rendezvous is authenticated without the user handling a secret.
The key reaches the children through their environment only, never their command line (which
other users of the host can read). When one rank fails, the others are stopped and its exit
status is returned. Several hosts: torchrun, mpirun or srun, with the key exported (see
docs/multi_gpu.md). CPU ranks sum over MPI, so CPU jobs start under mpirun instead.

Example::

    symgraph launch -n 2 python3 train.py --ctx gpu
"""
from __future__ import annotations

import os
import socket
import subprocess
import time
from typing import Sequence

from ...core import config
from . import auth

POLL_S = 0.1


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nobody listens on now (rank 0 takes it moments later)."""
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def rank_envs(nproc: int, port: int, key: str) -> list[dict[str, str]]:
    """The environment additions of ranks ``0 .. nproc - 1``."""
    return [{"RANK": str(r), "WORLD_SIZE": str(nproc), "LOCAL_RANK": str(r),
             "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port), auth.KEY_ENV: key}
            for r in range(nproc)]


def launch(nproc: int, command: Sequence[str], port: int = 0) -> int:
    """Run ``command`` as ``nproc`` ranks; 0 when all succeed, else the first failure's
    exit status (the other ranks are then terminated)."""
    key = config.get(auth.KEY_ENV) or auth.new_key()
    envs = rank_envs(nproc, port or free_port(), key)
    procs = [subprocess.Popen(list(command), env={**os.environ, **extra}) for extra in envs]
    try:
        while True:
            codes = [p.poll() for p in procs]
            failed = [c for c in codes if c not in (None, 0)]
            if failed or all(c == 0 for c in codes):
                return failed[0] if failed else 0
            time.sleep(POLL_S)
    finally:
        for p in procs:
            if p.poll() is None:
                p.terminate()
        for p in procs:
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
