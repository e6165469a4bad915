"""The compiled CPU backend's one thread pool: kernels split their outermost axis over it.

The kernels are ``nogil`` numba functions of ``(lo, hi, arrays...)``; each thread runs one
slice of the outer range, the calling thread the first. This pool is the backend's own
(``SYMGRAPH_CPU_THREADS`` threads, the budget ``backend.threads`` also gives BLAS) rather than
numba's ``prange`` pool: ``prange`` kernels take about three times as long to compile, and
numba's OpenMP/TBB layer would be one more pool competing with BLAS's and another library's
for the cores.
"""
from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Optional, Sequence

from ..backend.threads import cpu_threads

GRAIN = 1 << 15
"""Elements below which a kernel runs on the calling thread alone (a hand-off costs more)."""

_POOL: Optional[ThreadPoolExecutor] = None
_POOL_KEY = (0, 0)  # (threads, process id): a forked child has none of its parent's threads
_LOCK = threading.Lock()


def _pool(size: int) -> ThreadPoolExecutor:
    global _POOL, _POOL_KEY
    with _LOCK:
        key = (size, os.getpid())
        if _POOL is None or _POOL_KEY != key:
            if _POOL is not None and _POOL_KEY[1] == key[1]:
                _POOL.shutdown(wait=False)
            _POOL = ThreadPoolExecutor(size, thread_name_prefix="symgraph-cpu")
            _POOL_KEY = key
        return _POOL


def slices(n_outer: int, parts: int) -> list[tuple[int, int]]:
    """``parts`` contiguous ranges covering ``0..n_outer`` as evenly as possible."""
    step, extra = divmod(n_outer, parts)
    out, lo = [], 0
    for k in range(parts):
        hi = lo + step + (1 if k < extra else 0)
        out.append((lo, hi))
        lo = hi
    return out


def run_split(kernel: Callable, n_outer: int, n_total: int, args: Sequence[Any]) -> None:
    """``kernel(lo, hi, *args)`` over ``0..n_outer`` (``n_total`` elements in all), split
    over the pool when there is enough work for more than one thread."""
    size = cpu_threads()
    parts = min(size, n_outer, max(1, n_total // GRAIN))
    if parts <= 1:
        kernel(0, n_outer, *args)
        return
    ranges = slices(n_outer, parts)
    pool = _pool(size - 1)
    pending = [pool.submit(kernel, lo, hi, *args) for lo, hi in ranges[1:]]
    kernel(ranges[0][0], ranges[0][1], *args)
    for p in pending:
        p.result()
