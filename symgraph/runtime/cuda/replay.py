"""CUDA graphs of a program's step ranges: a range is captured the second time it runs with the
same bound pointers (the first run may still be choosing convolution branches and loading
libraries, which must not be captured), then replayed with one launch.

The cache holds at most :data:`MAX_GRAPHS` ranges, counting those seen once; past that every
graph is destroyed and counting starts again (a program run with ever new bound arrays would
otherwise keep a graph per call).
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

from ...core.registry import RunCtx
from .graphs import CudaGraph

MAX_GRAPHS = 16


class GraphCache:
    """The captured graphs of one program, by range key (start, stop, pointers, mode...)."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream
        self.graphs: dict[tuple, CudaGraph] = {}
        self.seen: set[tuple] = set()  # ranges run once, eagerly: captured at their next run

    def replay(self, key: tuple, steps: Sequence[Sequence[Callable[[RunCtx], None]]],
               rc: RunCtx) -> bool:
        """Launch the graph of this range and return True; False when the range runs for the
        first time (the caller runs ``steps`` eagerly)."""
        g = self.graphs.get(key)
        if g is None:
            if key not in self.seen:
                if len(self.graphs) + len(self.seen) >= MAX_GRAPHS:
                    self.clear()
                self.seen.add(key)
                return False

            def record() -> None:
                for closures in steps:
                    for fn in closures:
                        fn(rc)
            self.seen.discard(key)
            g = self.graphs[key] = CudaGraph(self.stream.handle, record)
        g.launch()
        return True

    def clear(self) -> None:
        """Destroy every graph and forget the ranges seen."""
        for g in self.graphs.values():
            g.destroy()
        self.graphs.clear()
        self.seen.clear()
