"""The compiled CPU backend's allocator policy: freed memory stays in the process for reuse.

Every step of a CPU program returns fresh arrays. glibc serves a block larger than its mmap
threshold (dynamic, at most 32 MiB by default) with a fresh mapping and unmaps it when freed,
and hands the top of its heap back to the system past its trim threshold; each run then faults
its large arrays in page by page again. ResNet-18's inference at batch 32 took about 14,000
page faults and 80 ms of system time per run (of 1,105 ms); with the thresholds raised, none
(1,035 ms). MXNet's CPU storage and PyTorch's caching allocators keep freed memory the same way.

:func:`keep_freed` raises both thresholds once per process (``SYMGRAPH_CPU_KEEP_FREED=0``
leaves glibc's defaults); where the C library has no ``mallopt`` (not glibc) it does nothing
and says so in :func:`why_not`.

Example::

    >>> from symgraph.runtime.cpu import memory
    >>> memory.keep_freed() in (True, False)
    True
"""
from __future__ import annotations

import ctypes
import ctypes.util

from ...core import config

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameters
MMAP_THRESHOLD = 1 << 30
"""Blocks larger than this still get their own mapping (given back when freed)."""
TRIM_THRESHOLD = (1 << 31) - 1

_STATE: dict[str, str] = {}  # "why": "" once applied, else why not


def keep_freed() -> bool:
    """Raise glibc's mmap and trim thresholds for this process (once); whether they are."""
    if "why" not in _STATE:
        _STATE["why"] = _apply()
    return _STATE["why"] == ""


def why_not() -> str:
    """Why freed memory is handed back as glibc decides ('' when it is kept)."""
    keep_freed()
    return _STATE["why"]


def _apply() -> str:
    if not config.get("SYMGRAPH_CPU_KEEP_FREED"):
        return "SYMGRAPH_CPU_KEEP_FREED=0"
    name = ctypes.util.find_library("c")
    try:
        mallopt = ctypes.CDLL(name).mallopt if name else None
    except (OSError, AttributeError):
        mallopt = None
    if mallopt is None:
        return f"the C library ({name or 'none found'}) has no mallopt (glibc's)"
    if not (mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD) and
            mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD)):
        return "mallopt refused the thresholds"
    return ""
