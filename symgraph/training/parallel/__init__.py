"""Data-parallel training: several devices in one process, several processes over NCCL.

- :mod:`.launch` reads rank and world size from the launchers people use (torchrun, OpenMPI,
  SLURM);
- :mod:`.rendezvous` exchanges bytes (the NCCL unique id) at ``MASTER_ADDR:MASTER_PORT``
  among ranks that prove the job key (:mod:`.auth`), with a timeout whose error names the
  rank that did not arrive;
- :mod:`.comm` is the communicator protocol and the host implementation (in-process
  replicas, MPI between processes: :mod:`.mpi`) that lets CI run the whole path without a GPU;
- :mod:`.nccl` is the ctypes binding of NCCL, loaded on first use;
- :mod:`.bucket` groups gradients into size-limited buckets, in reverse order of production;
- :mod:`.split` slices a batch over devices as MXNet's executor group does;
- :mod:`.group` is the multi-device module behind ``Module(context=[...])``.
"""
from __future__ import annotations

from .bucket import Bucket, make_buckets
from .comm import Communicator, HostCommunicator, allreduce_grads
from .launch import WorldInfo, world_from_env
from .split import split_batch

__all__ = ["Bucket", "make_buckets", "Communicator", "HostCommunicator", "allreduce_grads",
           "WorldInfo", "world_from_env", "split_batch"]
