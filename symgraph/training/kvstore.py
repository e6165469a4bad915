"""``sg.kv``: MXNet's KVStore for users who drive gradient exchange by hand, and the choice of
the data-parallel path for ``Module.fit(kvstore=...)`` and Gluon's ``Trainer(kvstore=...)``.

Types (MXNet's names):

- ``'local'``, ``'device'``, ``'nccl'``: one process; values pushed from several devices are
  summed (on the host for CPU arrays and for ``local``; NCCL between GPUs in the training
  paths). ``'nccl'`` in a process started by a launcher with ``WORLD_SIZE > 1`` joins the
  other processes, as ``dist_device_sync`` does.
- ``'dist_sync'``, ``'dist_device_sync'``, ``'dist'``: several processes (rank and world size
  from torchrun, mpirun or SLURM, see :mod:`symgraph.training.parallel.launch`), meeting at
  ``MASTER_ADDR:MASTER_PORT`` on GPUs; the host store sums over MPI (mpirun or srun,
  :mod:`symgraph.training.parallel.mpi`). A push is summed over every worker before it is stored.

``dist_async`` is refused: there is no parameter server, and asynchronous updates would make the
replicas differ. With ``set_optimizer`` the store updates its values with the summed pushes
(``update_on_kvstore``); without, ``pull`` returns the sum of the last push.
"""
from __future__ import annotations

from typing import Any, Callable, Optional, Union

import numpy as np

from ..core.base import AttrError, BindError
from .kvstore_base import KVStoreBase, TestStore, registered
from .kvstore_compression import TwoBitCompression, parse_compression
from .parallel.comm import HostCommunicator
from .parallel.launch import WorldInfo, world_from_env
from .parallel.mpi import mpi_group
from .parallel.rendezvous import DEFAULT_TIMEOUT, Rendezvous

__all__ = ["KVStore", "KVStoreBase", "TestStore", "create"]

# MXNet's names for where one process sums and updates; all run the same host sum here
LOCAL_TYPES = ("local", "device", "nccl", "local_update_cpu", "local_allreduce_cpu",
               "local_allreduce_device")
DIST_TYPES = ("dist_sync", "dist_device_sync", "dist")
TYPES = LOCAL_TYPES + DIST_TYPES

Key = Union[int, str]
_PEERS: dict[tuple, Rendezvous] = {}


def check_type(name: Any) -> str:
    """``name`` if it is a kvstore type symgraph implements, else ``AttrError`` listing them."""
    if not isinstance(name, str) or name not in TYPES:
        raise AttrError(f"kvstore {name!r} is not supported; choose one of {list(TYPES)} (or "
                        f"None for no exchange)")
    return name


def is_distributed(name: str, world: Optional[WorldInfo] = None) -> bool:
    """Whether kvstore type ``name`` joins several processes in this environment."""
    world = world or world_from_env()
    return name in DIST_TYPES or (name == "nccl" and world.size > 1)


def peers_for(world: WorldInfo, timeout: float = DEFAULT_TIMEOUT) -> Rendezvous:
    """The rendezvous of this process (made and connected once per world)."""
    key = (world.rank, world.size, world.master_addr, world.master_port)
    if key not in _PEERS:
        _PEERS[key] = Rendezvous(world, timeout).connect()
    return _PEERS[key]


class KVStore(KVStoreBase):
    """A key-value store of arrays (MXNet's ``mx.kv.KVStore``)."""

    def __init__(self, kvtype: str = "local", timeout: float = DEFAULT_TIMEOUT) -> None:
        self._type = check_type(kvtype)
        self._world = world_from_env() if is_distributed(kvtype) else WorldInfo()
        self._comm = HostCommunicator(1, mpi_group(self._world)
                                      if self._world.size > 1 else None)
        self._store: dict[Key, np.ndarray] = {}
        self._ctx: dict[Key, Any] = {}
        self._updater: Optional[Callable] = None
        self._compression: Optional[TwoBitCompression] = None

    def __repr__(self) -> str:
        return (f"<KVStore {self._type}: rank {self.rank} of {self.num_workers}, "
                f"{len(self._store)} keys>")

    @property
    def type(self) -> str:
        return self._type

    @property
    def rank(self) -> int:
        return self._world.rank

    @property
    def num_workers(self) -> int:
        return self._world.size

    @property
    def communicator(self) -> HostCommunicator:
        """The host communicator over this store's processes (one local replica)."""
        return self._comm

    # -- values --------------------------------------------------------------------------------
    def init(self, key: Any, value: Any) -> None:
        """Set initial values (rank 0's, on every worker). Keys may be ints or strings."""
        for k, v in _pairs(key, value, "init"):
            if k in self._store:
                raise AttrError(f"kvstore init: key {k!r} is already initialised")
            host = _host(v[0] if isinstance(v, (list, tuple)) else v).copy()
            self._comm.check_manifest([f"key {k!r}"], [host], "kvstore init")
            self._comm.broadcast([[host]])
            self._store[k] = host
            self._ctx[k] = getattr(v, "context", None)

    def push(self, key: Any, value: Any, priority: int = 0) -> None:
        """Sum the value(s) of each key (a list: one per device) over devices and workers,
        then store it, or apply the optimizer to the stored value with it."""
        for k, vals in _pairs(key, value, "push"):
            stored = self._stored(k, "push")
            vals = [_host(v) for v in (vals if isinstance(vals, (list, tuple)) else [vals])]
            for v in vals:
                if v.shape != stored.shape:
                    raise BindError(f"kvstore push: key {k!r} has shape {stored.shape}, "
                                    f"pushed {v.shape}")
            if self._compression is not None:  # what each device sends (residuals kept)
                vals = [self._compression.compress(k, i, v.astype(stored.dtype))
                        for i, v in enumerate(vals)]
            total = vals[0].astype(stored.dtype, copy=True)
            for v in vals[1:]:
                total += v
            self._comm.allreduce([[total]])
            if self._updater is not None:
                from ..runtime.ndarray import array
                weight, grad = array(stored), array(total)
                self._updater(k, grad, weight)
                stored[...] = weight.asnumpy()
            else:
                stored[...] = total

    def pull(self, key: Any, out: Any = None, priority: int = 0,
             ignore_sparse: bool = True) -> None:
        """Copy the stored value of each key into ``out`` (an array or a list of arrays)."""
        if out is None:
            raise AttrError("kvstore pull: out must be given")
        for k, outs in _pairs(key, out, "pull"):
            stored = self._stored(k, "pull")
            for o in (outs if isinstance(outs, (list, tuple)) else [outs]):
                if tuple(o.shape) != stored.shape:
                    raise BindError(f"kvstore pull: key {k!r} has shape {stored.shape}, out "
                                    f"has {tuple(o.shape)}")
                o[:] = stored

    def pushpull(self, key: Any, value: Any, out: Any = None, priority: int = 0) -> None:
        """``push`` then ``pull`` (into ``value`` itself when ``out`` is None)."""
        self.push(key, value, priority)
        self.pull(key, value if out is None else out, priority)

    def broadcast(self, key: Any, value: Any, out: Any, priority: int = 0) -> None:
        """``init`` with ``value`` then ``pull`` into ``out``."""
        self.init(key, value)
        self.pull(key, out, priority)

    def _stored(self, k: Key, what: str) -> np.ndarray:
        if k not in self._store:
            raise AttrError(f"kvstore {what}: key {k!r} was not initialised; keys: "
                            f"{sorted(map(str, self._store))}")
        return self._store[k]

    # -- optimizer -----------------------------------------------------------------------------
    def set_optimizer(self, optimizer: Any) -> None:
        """Update stored values with ``optimizer`` on every push (update on kvstore)."""
        from .optimizer import get_updater
        self._updater = get_updater(optimizer)

    def _set_updater(self, updater: Callable) -> None:
        self._updater = updater

    def save_optimizer_states(self, fname: str, dump_optimizer: bool = False) -> None:
        """Write the states of the optimizer given to :meth:`set_optimizer` (named arrays in
        the ``.params`` format, as ``Module.save_optimizer_states``; no pickle, so
        ``dump_optimizer=True``, which would store the optimizer object too, is refused)."""
        from .checkpoint import save_arrays
        updater = self._optimizer_updater("save_optimizer_states")
        if dump_optimizer:
            raise AttrError("kvstore save_optimizer_states: dump_optimizer=True is not "
                            "supported (states only; create the optimizer again on load)")
        save_arrays(fname, updater.get_states())

    def load_optimizer_states(self, fname: str) -> None:
        """Restore :meth:`save_optimizer_states`'s file into the optimizer given to
        :meth:`set_optimizer`; DataError names a bad file (the states are unchanged)."""
        from .checkpoint import load_optimizer_states
        load_optimizer_states(fname, self._optimizer_updater("load_optimizer_states"))

    def _optimizer_updater(self, what: str) -> Any:
        if self._updater is None or not hasattr(self._updater, "get_states"):
            raise AttrError(f"kvstore {what}: call set_optimizer() first")
        return self._updater

    def set_gradient_compression(self, compression_params: dict) -> None:
        """Compress every later push as MXNet's 2-bit scheme does (see
        :mod:`symgraph.training.kvstore_compression`): ``{'type': '2bit', 'threshold': 0.5}``.
        As in MXNet, only ``device`` and ``dist`` types compress; other types refuse it.

        >>> kv = sg.kv.create("device")
        >>> kv.set_gradient_compression({"type": "2bit", "threshold": 0.5})
        """
        if "device" not in self._type and "dist" not in self._type:
            raise AttrError(f"kvstore {self._type!r}: gradient compression is not supported "
                            f"for this type (only 'device' and 'dist' types compress)")
        self._compression = parse_compression(compression_params)

    def is_capable(self, capability: str) -> bool:
        return capability == "optimizer"

    def barrier(self) -> None:
        """Wait until every worker reached this call."""
        self._comm.allreduce([[np.zeros(1, np.float32)]])


def _host(x: Any) -> np.ndarray:
    return np.asarray(x.asnumpy() if hasattr(x, "asnumpy") else x)


def _pairs(key: Any, value: Any, what: str) -> list[tuple[Key, Any]]:
    if isinstance(key, (list, tuple)):
        if not isinstance(value, (list, tuple)) or len(value) != len(key):
            raise AttrError(f"kvstore {what}: {len(key)} keys need a list of {len(key)} values")
        return list(zip(key, value))
    return [(key, value)]


def create(name: str = "local", timeout: float = DEFAULT_TIMEOUT) -> KVStoreBase:
    """A :class:`KVStore` of type ``name`` (MXNet's ``mx.kv.create``), or a store registered
    with ``KVStoreBase.register`` under that name."""
    klass = registered(name)
    return klass() if klass is not None else KVStore(name, timeout)


