"""Compiled imperative programs by structure, least recently used first, under a byte budget.

A key is one structure (ops, attributes, wiring, shapes, dtypes...; see ``compute``), so code
called with many shapes (a hybridized block fed 200 batch sizes) compiles one program per
shape. Each program keeps its memory (arena, workspace) for its next run; the cache keeps the
programs whose bytes fit ``SYMGRAPH_PROGRAM_CACHE_MB`` (and at most :attr:`max_count`),
dropping the least recently used past it. A dropped program is compiled again if its structure
comes back; the program just used is always kept.

Example::

    >>> cache = ProgramCache(max_count=2)
    >>> for k in "abc":
    ...     cache.put(k, Sized(10))
    >>> list(cache.keys())
    ['b', 'c']
"""
from __future__ import annotations

from collections import OrderedDict
from typing import Any, Iterator, Optional

from ...core import config

MB = 1 << 20


class Sized:
    """Anything with ``nbytes`` (what a program reports): for tests and examples."""

    def __init__(self, nbytes: int) -> None:
        self.nbytes = nbytes


class ProgramCache:
    """Key -> program (anything with an ``nbytes`` attribute), in least-recently-used order."""

    def __init__(self, max_count: int = 4096) -> None:
        self.max_count = max_count
        self._items: "OrderedDict[tuple, Any]" = OrderedDict()
        self._sizes: dict[Any, int] = {}  # key -> nbytes when kept (a size may grow later)
        self.bytes = 0  # the kept programs' nbytes, summed
        self.evicted = 0  # programs dropped so far

    def get(self, key: Any) -> Optional[Any]:
        """The program of ``key`` (now the most recently used), or None."""
        prog = self._items.get(key)
        if prog is not None:
            self._items.move_to_end(key)
        return prog

    def put(self, key: Any, prog: Any) -> Any:
        """Keep ``prog`` under ``key``; drop the least recently used past the budget."""
        sizes = self._sizes
        if self._items.pop(key, None) is not None:
            self.bytes -= sizes.pop(key)
        self._items[key] = prog
        sizes[key] = int(prog.nbytes)
        self.bytes += sizes[key]
        budget = config.get("SYMGRAPH_PROGRAM_CACHE_MB") * MB
        items = self._items
        while len(items) > 1 and (self.bytes > budget or len(items) > self.max_count):
            gone, _ = items.popitem(last=False)
            self.bytes -= sizes.pop(gone)
            self.evicted += 1
        return prog

    def clear(self) -> None:
        self._items.clear()
        self._sizes.clear()
        self.bytes = 0

    def keys(self) -> Iterator[Any]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: Any) -> bool:
        return key in self._items
