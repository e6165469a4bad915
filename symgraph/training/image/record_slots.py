"""Batch arrays in shared memory, which ``ImageRecordIter``'s worker processes write into.

A slot is one batch's data array in a ``multiprocessing.shared_memory`` block. The parent
hands the array out in the batch (no copy: the workers wrote the final values there) and the
slot comes back to the pool when the last reference to that array (or to a view of it) is
gone, so a batch a user keeps is never overwritten. Slots past ``keep`` free ones are
unlinked, and closed at the next ``take`` (a mapping cannot be closed while numpy still
exports it, which it does during the finaliser that hands the slot back). A batch may
outlive its iterator: its slot is unlinked at shutdown and unmapped when the batch goes.
Workers attach to slots by name and keep their latest mappings (``Attached``).
"""
from __future__ import annotations

import os
import threading
import weakref
from collections import OrderedDict
from multiprocessing import shared_memory
import numpy as np

from ...core.base import DataError

__all__ = ["SlotPool", "Attached"]

SHM_DIR = "/dev/shm"
# Unlinked slots whose batch array was being freed when they came back: closed at the next
# ``take`` of any pool (module-level: the pool that retired them may be gone by then).
_RETIRED: list = []
_RETIRED_LOCK = threading.Lock()


class Block(shared_memory.SharedMemory):
    """A shared-memory block whose garbage collection never complains: a batch array may
    still map it then (at interpreter exit, say), and the mapping goes with that array."""

    def __del__(self) -> None:
        try:
            self.close()
        except (BufferError, OSError):
            pass


def _view(shm: Block, shape: tuple, dtype: str) -> np.ndarray:
    count = int(np.prod(shape))
    return np.frombuffer(shm.buf, np.dtype(dtype), count).reshape(shape)


def _unlink(shm: Block) -> None:
    try:
        shm.unlink()
    except FileNotFoundError:  # unlinked already (at shutdown, or by the resource tracker)
        pass


def _destroy(shm: Block, unlink: bool = True) -> None:
    try:
        shm.close()
    except BufferError:  # still exported: the mapping goes when its last array does
        pass
    if unlink:
        _unlink(shm)


def _create(nbytes: int) -> Block:
    """A new block; on Linux, first a check that /dev/shm has room (a worker writing past a
    full tmpfs dies of SIGBUS instead of getting an error)."""
    if os.path.isdir(SHM_DIR):
        stat = os.statvfs(SHM_DIR)
        if stat.f_bavail * stat.f_frsize < nbytes:
            raise DataError(f"ImageRecordIter: {SHM_DIR} has "
                            f"{stat.f_bavail * stat.f_frsize / 2**20:.0f} MiB free, a batch "
                            f"needs {nbytes / 2**20:.0f} MiB (worker processes write batches "
                            f"there): enlarge it (docker --shm-size) or set "
                            f"SYMGRAPH_IO_PROCESSES=0")
    return Block(create=True, size=nbytes)


class SlotPool:
    """Shared-memory arrays of ``shape`` and ``dtype``, reused once their batch is dropped.

    Example::

        >>> pool = SlotPool((64, 3, 224, 224), 'float32', keep=4)  # doctest: +SKIP
        >>> name, data = pool.take()           # workers attach to ``name``  # doctest: +SKIP
    """

    def __init__(self, shape: tuple, dtype: str, keep: int) -> None:
        self.shape, self.dtype, self.keep = tuple(shape), str(dtype), int(keep)
        self.nbytes = max(1, int(np.prod(shape)) * np.dtype(dtype).itemsize)
        self._free: list[Block] = []
        self._live: dict[str, Block] = {}
        self._lock = threading.Lock()  # finalisers run on whichever thread drops a batch
        self._open = True

    def take(self) -> tuple[str, np.ndarray]:
        """A free slot's name and its array (a new slot when none is free)."""
        with _RETIRED_LOCK:
            retired = _RETIRED[:]
            del _RETIRED[:]
        for old in retired:
            _destroy(old, unlink=False)
        with self._lock:
            shm = self._free.pop() if self._free else None
        if shm is None:
            shm = _create(self.nbytes)
        self._live[shm.name] = shm
        data = _view(shm, self.shape, self.dtype)
        weakref.finalize(data, self._give_back, shm).atexit = False
        return shm.name, data

    def _give_back(self, shm: Block) -> None:
        with self._lock:
            if self._open and len(self._free) < self.keep:
                self._free.append(shm)
                return
            self._live.pop(shm.name, None)
        with _RETIRED_LOCK:
            _RETIRED.append(shm)
        _unlink(shm)

    def shutdown(self) -> None:
        """Unlink every slot; mappings still held by batches stay valid until dropped."""
        with self._lock:
            self._open = False
            free, self._free = self._free, []
            live, self._live = list(self._live.values()), {}
        for shm in live:
            if any(shm is f for f in free):
                _destroy(shm)
            else:  # still held by a batch: unlinked now, closed once it comes back
                _unlink(shm)


class Attached:
    """A worker's mappings of slots by name, the ``size`` most recently used kept open."""

    def __init__(self, size: int = 16) -> None:
        self.size = int(size)
        self._maps: "OrderedDict[str, tuple]" = OrderedDict()

    def array(self, name: str, shape: tuple, dtype: str) -> np.ndarray:
        """The array of slot ``name`` (attached at its first use)."""
        if name in self._maps:
            self._maps.move_to_end(name)
            return self._maps[name][1]
        shm = Block(name=name)
        self._maps[name] = (shm, _view(shm, shape, dtype))
        while len(self._maps) > self.size:
            old = self._maps.popitem(last=False)[1][0]  # its array goes with the entry
            _destroy(old, unlink=False)
        return self._maps[name][1]
