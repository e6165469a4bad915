"""NCCL through ctypes, loaded on first use (``cuda/libs.py`` finds ``libnccl.so.2`` in the
``nvidia-nccl-cu12``/``-cu13`` wheel, on the loader's path or in the CUDA toolkit).

Only what data-parallel training needs: the unique id (``ncclUniqueId``, 128 bytes, passed by
value), ``ncclCommInitAll`` (one process, several GPUs), ``ncclCommInitRank`` (one rank of
several processes, inside a group so that a process driving several GPUs can init them all),
``ncclAllReduce``/``ncclBroadcast`` grouped with ``ncclGroupStart``/``End``, and
``ncclCommGetAsyncError``/``ncclCommAbort`` so that a dead peer ends the wait instead of
hanging it. :class:`NcclCommunicator` is the GPU communicator of :mod:`.comm`.
"""
from __future__ import annotations

import ctypes
import time
from typing import Any, Optional, Sequence

import numpy as np

from ...core.base import DTypeError, ExecutionError

UNIQUE_ID_BYTES = 128
SUCCESS, IN_PROGRESS = 0, 7
SUM = 0
# numpy dtype -> ncclDataType_t (nccl.h); bfloat16 (9) has no numpy dtype here.
DTYPES = {np.dtype(np.int8): 0, np.dtype(np.uint8): 1, np.dtype(np.int32): 2,
          np.dtype(np.uint32): 3, np.dtype(np.int64): 4, np.dtype(np.uint64): 5,
          np.dtype(np.float16): 6, np.dtype(np.float32): 7, np.dtype(np.float64): 8}


class UniqueId(ctypes.Structure):
    """``ncclUniqueId``: 128 opaque bytes made by rank 0 and sent to every rank."""

    _fields_ = [("internal", ctypes.c_char * UNIQUE_ID_BYTES)]


_Comm = ctypes.c_void_p
_Ptr, _Size, _Int = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int
# name: (argument types); every function returns ncclResult_t (int).
SIGNATURES: dict[str, tuple] = {
    "ncclGetVersion": (ctypes.POINTER(_Int),),
    "ncclGetUniqueId": (ctypes.POINTER(UniqueId),),
    "ncclCommInitAll": (ctypes.POINTER(_Comm), _Int, ctypes.POINTER(_Int)),
    "ncclCommInitRank": (ctypes.POINTER(_Comm), _Int, UniqueId, _Int),
    "ncclAllReduce": (_Ptr, _Ptr, _Size, _Int, _Int, _Comm, _Ptr),
    "ncclBroadcast": (_Ptr, _Ptr, _Size, _Int, _Int, _Comm, _Ptr),
    "ncclGroupStart": (),
    "ncclGroupEnd": (),
    "ncclCommGetAsyncError": (_Comm, ctypes.POINTER(_Int)),
    "ncclCommAbort": (_Comm,),
    "ncclCommDestroy": (_Comm,),
}

_LIB: list[Any] = []


def library() -> Any:
    """The loaded NCCL library with argument types set (loaded once, on first call)."""
    if not _LIB:
        from ...runtime.cuda.libs import load
        lib = load("nccl")
        for name, argtypes in SIGNATURES.items():
            fn = getattr(lib, name)
            fn.argtypes, fn.restype = list(argtypes), _Int
        lib.ncclGetErrorString.argtypes, lib.ncclGetErrorString.restype = [_Int], ctypes.c_char_p
        _LIB.append(lib)
    return _LIB[0]


def check(result: int, what: str) -> None:
    """Raise ``ExecutionError`` naming the call and NCCL's message when ``result`` failed."""
    if result not in (SUCCESS, IN_PROGRESS):
        text = library().ncclGetErrorString(result).decode(errors="replace")
        raise ExecutionError(f"NCCL {what} failed: {text} (ncclResult_t {result})")


def version() -> int:
    """NCCL's version code (e.g. 22703 for 2.27.3)."""
    out = _Int()
    check(library().ncclGetVersion(ctypes.byref(out)), "ncclGetVersion")
    return out.value


def unique_id() -> bytes:
    """A fresh unique id (rank 0 makes it; the rendezvous carries it to the others)."""
    uid = UniqueId()
    check(library().ncclGetUniqueId(ctypes.byref(uid)), "ncclGetUniqueId")
    # (not uid.internal: a c_char array's value stops at the first zero byte)
    return ctypes.string_at(ctypes.addressof(uid), UNIQUE_ID_BYTES)


def _uid(data: bytes) -> UniqueId:
    if len(data) != UNIQUE_ID_BYTES:
        raise ExecutionError(f"NCCL unique id has {len(data)} bytes, expected "
                             f"{UNIQUE_ID_BYTES}; the rendezvous delivered something else")
    uid = UniqueId()
    ctypes.memmove(ctypes.byref(uid), data, UNIQUE_ID_BYTES)
    return uid


def nccl_dtype(dtype: Any, name: str) -> int:
    """The ``ncclDataType_t`` of ``dtype``; unsupported ones raise naming the array."""
    try:
        return DTYPES[np.dtype(dtype)]
    except KeyError:
        raise DTypeError(f"NCCL all-reduce: {name} has dtype {np.dtype(dtype)}, NCCL takes "
                         f"{sorted(str(d) for d in DTYPES)}") from None


def init_comms(device_ids: Sequence[int], rank0: int = 0, world: int = 0,
               uid: Optional[bytes] = None) -> list[int]:
    """One communicator per local device. Alone (``uid`` None): ``ncclCommInitAll``. Else the
    local devices are ranks ``rank0 .. rank0+len-1`` of ``world``, initialised in a group."""
    lib = library()
    comms = (_Comm * len(device_ids))()
    if uid is None:
        devs = (_Int * len(device_ids))(*device_ids)
        check(lib.ncclCommInitAll(comms, len(device_ids), devs), "ncclCommInitAll")
        return [int(c or 0) for c in comms]
    from ...runtime.cuda.runtime import activate
    ident = _uid(uid)
    check(lib.ncclGroupStart(), "ncclGroupStart")
    handles = [_Comm() for _ in device_ids]  # NCCL may fill them in at ncclGroupEnd
    for k, dev in enumerate(device_ids):
        with activate(dev):
            check(lib.ncclCommInitRank(ctypes.byref(handles[k]), world, ident, rank0 + k),
                  f"ncclCommInitRank(rank {rank0 + k})")
    check(lib.ncclGroupEnd(), "ncclGroupEnd")
    return [int(c.value or 0) for c in handles]


class NcclCommunicator:
    """Sums GPU arrays across local devices and processes with grouped ``ncclAllReduce``.

    ``streams[d]`` is the pycuda stream the reduction of device ``d`` is ordered on (the
    training program's, so it follows backward and precedes the fused update). ``wait()``
    polls the streams, NCCL's async error and the rendezvous connections; past ``timeout`` or
    on a dead peer it aborts the communicators and raises naming the rank."""

    def __init__(self, device_ids: Sequence[int], peers: Any = None,
                 timeout: float = 300.0) -> None:
        self.device_ids = list(device_ids)
        self.num_replicas = len(self.device_ids)
        self.peers = peers
        self.timeout = timeout
        self.streams: list[Any] = [None] * self.num_replicas
        world = peers.world if peers is not None else None
        if world is None or world.size == 1:
            self.comms = init_comms(self.device_ids)
        else:
            uid = peers.broadcast(unique_id() if world.rank == 0 else None)
            n = self.num_replicas
            self.comms = init_comms(self.device_ids, world.rank * n, world.size * n, uid)

    def check_manifest(self, names: Sequence[str], arrays: Sequence[Any],
                       what: str = "allreduce") -> None:
        """Compare ``(name, shape, dtype)`` of ``arrays`` across the processes through the
        rendezvous connections; ShapeError naming the first difference and the rank."""
        if self.peers is not None and self.peers.world.size > 1:
            from . import manifest
            manifest.check(manifest.manifest_of(names, arrays), self.peers.allgather, what)

    def _arguments(self, replicas: Sequence[Sequence[Any]]) -> list[tuple]:
        """``(buffer, count, dtype, comm, stream)`` of every call, array by array and device
        by device; cached per (device buffers, streams), since a trainer reduces the same
        gradient buffers every step (the cache holds the buffers: their ids stay unique)."""
        cache = self.__dict__.setdefault("_args", {})
        streams = tuple(s.handle if s is not None else None for s in self.streams)
        bufs = [rep[i]._data for i in range(len(replicas[0])) for rep in replicas]
        key = (tuple(map(id, bufs)), streams)
        got = cache.get(key)
        if got is not None:
            return got[1]
        args = []
        for i in range(len(replicas[0])):
            for d, comm in enumerate(self.comms):
                x = replicas[d][i]
                args.append((x._data.ptr, int(np.prod(x.shape)),
                             nccl_dtype(x.dtype, f"array {i}"), comm, streams[d]))
        if len(cache) >= 256:  # keep it bounded for callers with ever new buffers
            cache.clear()
        cache[key] = (bufs, args)
        return args

    def _collective(self, replicas: Sequence[Sequence[Any]], call: str, root: int) -> None:
        lib = library()
        args = self._arguments(replicas)
        check(lib.ncclGroupStart(), "ncclGroupStart")
        try:
            if call == "ncclAllReduce":
                for buf, n, kind, comm, stream in args:
                    check(lib.ncclAllReduce(buf, buf, n, kind, SUM, comm, stream), call)
            else:
                for buf, n, kind, comm, stream in args:
                    check(lib.ncclBroadcast(buf, buf, n, kind, root, comm, stream), call)
        finally:
            check(lib.ncclGroupEnd(), "ncclGroupEnd")

    def allreduce(self, replicas: Sequence[Sequence[Any]]) -> None:
        """Enqueue the sum of every bucket array (in place) on each device's stream."""
        self._collective(replicas, "ncclAllReduce", 0)

    def broadcast(self, replicas: Sequence[Sequence[Any]], root: int = 0) -> None:
        """Enqueue a broadcast from global rank ``root`` (device ``root`` of rank 0)."""
        self._collective(replicas, "ncclBroadcast", root)

    def mark(self) -> list[Any]:
        """An event recorded on every device's stream: the work queued so far."""
        import pycuda.driver as drv
        from ...runtime.cuda.runtime import activate
        events = []
        for dev, stream in zip(self.device_ids, self.streams):
            with activate(dev):
                events.append(drv.Event(drv.event_flags.DISABLE_TIMING).record(stream))
        return events

    def wait(self, events: Optional[Sequence[Any]] = None) -> None:
        """Block until ``events`` (default: all queued work) completed, or fail within
        ``timeout``: a dead peer or an NCCL error aborts the communicators and raises."""
        deadline = time.monotonic() + self.timeout
        lib = library()
        marks = list(events) if events is not None else self.mark()  # stream None: legacy
        while not all(e.query() for e in marks):
            for comm in self.comms:
                err = _Int()
                check(lib.ncclCommGetAsyncError(comm, ctypes.byref(err)),
                      "ncclCommGetAsyncError")
                if err.value not in (SUCCESS, IN_PROGRESS):
                    self.abort()
                    check(err.value, "all-reduce (asynchronous error)")
            dead = self.peers.dead_peers() if self.peers is not None else ()
            if dead or time.monotonic() > deadline:
                self.abort()
                from .rendezvous import RendezvousError
                who = f"rank(s) {list(dead)} died" if dead else \
                    f"no progress within {self.timeout:g} s"
                raise RendezvousError(f"NCCL all-reduce: {who}; communicators aborted", dead)
            time.sleep(0.0002)

    def abort(self) -> None:
        self.__dict__.pop("_args", None)  # the cached calls name these communicators
        for comm in self.comms:
            library().ncclCommAbort(comm)
        self.comms = []

    def close(self) -> None:
        self.__dict__.pop("_args", None)
        for comm in self.comms:
            library().ncclCommDestroy(comm)
        self.comms = []
