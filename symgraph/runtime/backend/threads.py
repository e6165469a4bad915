"""The CPU backends' thread budget: ``SYMGRAPH_CPU_THREADS`` BLAS threads while a program runs.

numpy's OpenBLAS keeps a pool of worker threads that spin for a while after each call. With
another library's OpenMP pool alive in the same process (PyTorch after a few ops) or a busy
process beside it, the pools fight over the same cores and a step can take many times longer.
So the backend owns one budget: :func:`blas_threads` sets every loaded BLAS library to it when a
run starts and gives each its previous count back when the run ends. The limit is not
process-wide: code outside symgraph keeps whatever thread count it chose.

Example::

    >>> from symgraph.runtime.backend.threads import blas_threads
    >>> with blas_threads(1) as n:     # what NumpyProgram.run does with cpu_threads()
    ...     n
    1
"""
from __future__ import annotations

import os
import sys
import threading
from contextlib import contextmanager
from typing import Any, Iterator, Optional

from ...core import config

_LOCK = threading.Lock()
_active = 0  # runs in progress, all threads together: the first sets, the last restores
_saved: list[tuple[Any, int]] = []  # (library controller, thread count before the first run)
_libraries: Optional[list[Any]] = None
_scanned_at = -1  # len(sys.modules) at the last scan


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity), or the machine's where the
    platform has no affinity call."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1


def cpu_threads() -> int:
    """The CPU backend's thread budget: ``SYMGRAPH_CPU_THREADS``, else one less than
    :func:`usable_cores` (at least 1).

    The core left over is for everything else: OpenBLAS's threads wait for each other by
    spinning, so one core shared with a busy process or another library's pool stalls every
    GEMM. On the 2-core box a seed-CNN step took 5.2 s with two threads and a busy loop
    beside, 0.35 s with one (docs/performance.md, "CPU thread budget").

    Raises AttrError (naming the variable and the value) for a value that is not an integer
    >= 1."""
    value = config.get("SYMGRAPH_CPU_THREADS")
    return max(1, usable_cores() - 1) if value is None else int(value)


def _blas() -> list[Any]:
    """threadpoolctl's controllers of the BLAS libraries loaded now. Scanning the process's
    libraries costs about a millisecond, reading one library's count a microsecond, so the
    scan is redone only when modules were imported since the last one: a BLAS arrives with
    the extension module that links it (numpy's with numpy, scipy's when numba or the user
    imports scipy, PyTorch's with torch)."""
    global _libraries, _scanned_at
    if _libraries is None or _scanned_at != len(sys.modules):
        from threadpoolctl import ThreadpoolController
        _libraries = list(ThreadpoolController().select(user_api="blas").lib_controllers)
        _scanned_at = len(sys.modules)
    return _libraries


@contextmanager
def blas_threads(threads: Optional[int] = None) -> Iterator[int]:
    """Run the body with every BLAS library at ``threads`` threads (default
    :func:`cpu_threads`); yields the count. Runs that overlap (several Python threads, or a
    program run from inside another's op) share the first one's setting, and the counts
    are restored when the last of them ends."""
    global _active
    n = cpu_threads() if threads is None else threads
    with _LOCK:
        if _active == 0:
            _saved[:] = [(lib, lib.get_num_threads()) for lib in _blas()]
            for lib, before in _saved:
                if before != n:  # setting OpenBLAS's count also costs when it is unchanged
                    lib.set_num_threads(n)
        _active += 1
    try:
        yield n
    finally:
        with _LOCK:
            _active -= 1
            if _active == 0:
                for lib, before in _saved:
                    if lib.get_num_threads() != before:
                        lib.set_num_threads(before)
