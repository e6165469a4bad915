"""Batch arrays in shared memory, which ``ImageRecordIter``'s worker processes write into.

A slot is one batch's data array in a ``multiprocessing.shared_memory`` block. The parent
hands the array out in the batch (no copy: the workers wrote the final values there) and the
slot comes back to the pool when the last reference to that array (or to a view of it) is
gone, so a batch a user keeps is never overwritten. Slots past ``keep`` free ones are
unlinked and dropped: the memory goes with the last array on it, as it does for a batch that
outlives its iterator. Where /dev/shm lacks room for a slot (a container's 64 MiB, say), the
slot is a file of the temp folder instead, mapped the same way, with a warning.
Workers attach to slots by name and keep their latest mappings (``Attached``).
"""
from __future__ import annotations

import mmap
import os
import tempfile
import threading
import warnings
import weakref
from collections import OrderedDict
from multiprocessing import shared_memory
from typing import Any, Union

import numpy as np

from ...core.base import DataError

__all__ = ["SlotPool", "Attached", "Block", "FileBlock"]

SHM_DIR = "/dev/shm"


class Block(shared_memory.SharedMemory):
    """A POSIX shared-memory block whose garbage collection never complains: a batch array
    may still map it then, and the mapping goes with that array."""

    def __del__(self) -> None:
        try:
            self.close()
        except (BufferError, OSError):
            pass


class FileBlock:
    """A slot in a file (``name`` is its absolute path), for where /dev/shm lacks room.

    Example::

        >>> block = FileBlock.create(1024)                       # doctest: +SKIP
        >>> FileBlock(block.name).buf[:4] = b'abcd'             # another process  # doctest: +SKIP
    """

    def __init__(self, name: str, size: int = 0) -> None:
        fd = os.open(name, os.O_RDWR)
        try:
            if size:
                os.ftruncate(fd, size)
            self.buf = mmap.mmap(fd, size or os.fstat(fd).st_size)
        finally:
            os.close(fd)
        self.name = name

    @classmethod
    def create(cls, size: int) -> "FileBlock":
        fd, path = tempfile.mkstemp(prefix="symgraph-batch-")
        os.close(fd)
        return cls(path, size)

    def close(self) -> None:
        """Nothing to do: the mapping goes with the last array on it."""

    def unlink(self) -> None:
        os.unlink(self.name)


AnyBlock = Union[Block, FileBlock]


def attach(name: str) -> AnyBlock:
    """The block called ``name`` (a file path for a ``FileBlock``)."""
    return FileBlock(name) if os.path.isabs(name) else Block(name=name)


def _view(block: AnyBlock, shape: tuple, dtype: str) -> np.ndarray:
    count = int(np.prod(shape))
    return np.frombuffer(block.buf, np.dtype(dtype), count).reshape(shape)


def _unlink(block: AnyBlock) -> None:
    try:
        block.unlink()
    except FileNotFoundError:  # unlinked already (at shutdown, or by the resource tracker)
        pass


def _room(folder: str) -> int:
    stat = os.statvfs(folder)
    return stat.f_bavail * stat.f_frsize


def _create(nbytes: int) -> AnyBlock:
    """A new block in /dev/shm where it has room (a worker writing past a full tmpfs dies of
    SIGBUS instead of getting an error), else in a file of the temp folder."""
    if not os.path.isdir(SHM_DIR) or _room(SHM_DIR) >= nbytes:
        return Block(create=True, size=nbytes)
    folder = tempfile.gettempdir()
    if _room(folder) < nbytes:
        raise DataError(f"ImageRecordIter: a batch needs {nbytes / 2**20:.0f} MiB and neither "
                        f"{SHM_DIR} ({_room(SHM_DIR) / 2**20:.0f} MiB free) nor {folder} "
                        f"({_room(folder) / 2**20:.0f} MiB free) has room for worker "
                        f"processes to write it: free some, or set SYMGRAPH_IO_PROCESSES=0")
    warnings.warn(f"ImageRecordIter: {SHM_DIR} has {_room(SHM_DIR) / 2**20:.0f} MiB free, "
                  f"a batch needs {nbytes / 2**20:.0f} MiB: worker processes write batches "
                  f"into files of {folder} instead (enlarge {SHM_DIR}, e.g. docker "
                  f"--shm-size, to keep them in memory)", ResourceWarning, stacklevel=3)
    return FileBlock.create(nbytes)


def _unlink_all(live: dict) -> None:
    for block in list(live.values()):
        _unlink(block)
    live.clear()


class SlotPool:
    """Shared-memory arrays of ``shape`` and ``dtype``, reused once their batch is dropped.

    Example::

        >>> pool = SlotPool((64, 3, 224, 224), 'float32', keep=4)  # doctest: +SKIP
        >>> name, data = pool.take()           # workers attach to ``name``  # doctest: +SKIP
    """

    def __init__(self, shape: tuple, dtype: str, keep: int) -> None:
        self.shape, self.dtype, self.keep = tuple(shape), str(dtype), int(keep)
        self.nbytes = max(1, int(np.prod(shape)) * np.dtype(dtype).itemsize)
        self._free: list[AnyBlock] = []
        self._live: dict[str, AnyBlock] = {}
        self._lock = threading.RLock()  # finalisers run on whichever thread drops a batch
        # unlinked at exit too: a file block has no resource tracker to do it
        self._exit = weakref.finalize(self, _unlink_all, self._live)

    def take(self) -> tuple[str, np.ndarray]:
        """A free slot's name and its array (a new slot when none is free)."""
        with self._lock:
            block = self._free.pop() if self._free else None
        if block is None:
            block = _create(self.nbytes)
            with self._lock:
                self._live[block.name] = block
        data = _view(block, self.shape, self.dtype)
        weakref.finalize(data, self._give_back, block).atexit = False
        return block.name, data

    def _give_back(self, block: AnyBlock) -> None:
        with self._lock:
            if self._exit.alive and len(self._free) < self.keep:
                self._free.append(block)
                return
            self._live.pop(block.name, None)
        _unlink(block)

    def shutdown(self) -> None:
        """Unlink every slot; mappings still held by batches stay valid until dropped."""
        with self._lock:
            self._free.clear()
            self._exit()


class Attached:
    """A worker's mappings of slots by name, the ``size`` most recently used kept open."""

    def __init__(self, size: int = 16) -> None:
        self.size = int(size)
        self._maps: "OrderedDict[str, tuple[Any, np.ndarray]]" = OrderedDict()

    def array(self, name: str, shape: tuple, dtype: str) -> np.ndarray:
        """The array of slot ``name`` (attached at its first use)."""
        if name in self._maps:
            self._maps.move_to_end(name)
            return self._maps[name][1]
        block = attach(name)
        self._maps[name] = (block, _view(block, shape, dtype))
        while len(self._maps) > self.size:
            self._maps.popitem(last=False)  # the mapping goes with its array
        return self._maps[name][1]
