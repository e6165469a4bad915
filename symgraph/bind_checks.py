"""Checks the Executor makes on what it is given and how it is used (issue 13).

* ``check_no_aliasing``: a role a run writes (a gradient, an aux state) must not share memory
  with another bound role, or the run would write one through the other.
* ``alloc``: arrays ``simple_bind`` makes; memory that cannot be had is a BindError naming it.
* ``one_thread``: an executor's runs share its bound arrays, outputs and saved forward, so a run
  entered while another thread is inside one raises ExecutionError (docs/architecture.md,
  "Threads and aliasing"); serialising them would still let a second thread overwrite the
  first one's results before it read them.
"""
from __future__ import annotations

import functools
from typing import Any, Callable, Optional, Sequence

import numpy as np

from .base import BindError, ExecutionError
from .context import Context
from .ndarray import NDArray, zeros


def _byte_span(a: NDArray) -> tuple[int, int]:
    """[first byte, last byte + 1) of an array's memory (host or device)."""
    if a.context.device_type == "cpu":
        d = a._data
        start = d.__array_interface__["data"][0]
        ends = [(n - 1) * st for n, st in zip(d.shape, d.strides)]
        return (start + sum(e for e in ends if e < 0),
                start + sum(e for e in ends if e > 0) + d.itemsize)
    start = int(a._data.gpudata)  # device arrays are contiguous (symgraph.cuda)
    return start, start + int(a._data.nbytes)


def check_no_aliasing(groups: list[tuple[str, Sequence[str], list]]) -> None:
    """BindError when a bound role that a run writes (a gradient, an aux state) shares memory
    with any other bound role: the run would write one through the other. Arguments are only
    read, so one array may be bound as several arguments, as MXNet allows (its
    test_deconvolution binds one weight to a convolution and a deconvolution)."""
    spans = sorted((*_byte_span(a), f"{kind} {n}", kind == "argument")
                   for kind, names, arrays in groups
                   for n, a in zip(names, arrays) if a is not None and a.size)
    # the span reaching furthest so far among the read-only arguments and among the written
    # roles: sorted by start, a span overlaps an earlier one iff it starts before that end.
    widest: dict[bool, tuple[int, str]] = {}
    for lo, hi, who, read_only in spans:
        against = [widest.get(False)] + ([] if read_only else [widest.get(True)])
        for end, other in (w for w in against if w is not None):
            if lo < end:
                raise BindError(f"bind: {who} and {other} are the same array (or share "
                                f"memory); bind a separate array to each")
        if read_only not in widest or hi > widest[read_only][0]:
            widest[read_only] = (hi, who)


def alloc(kind: str, name: str, shape: tuple, ctx: Context, dtype: Any) -> NDArray:
    """A zeroed array; BindError naming it when the memory cannot be had."""
    try:
        return zeros(shape, ctx, dtype)
    except MemoryError:
        size = int(np.prod(shape, dtype=np.float64) * np.dtype(dtype).itemsize)
        raise BindError(f"{kind} {name}: cannot allocate {tuple(shape)} {np.dtype(dtype).name} "
                        f"({size / 2**30:.1f} GiB) on {ctx}") from None


def one_thread(method: Callable) -> Callable:
    """Refuse a run entered while another thread is inside one of this executor's runs: the
    runs share the bound arrays, the outputs and the saved forward, so overlapping runs would
    hand each thread the other's results (docs/architecture.md, "Threads")."""
    @functools.wraps(method)
    def guarded(self: Any, *args: Any, **kwargs: Any) -> Any:
        if not self._busy.acquire(blocking=False):
            raise ExecutionError(f"Executor.{method.__name__}: this executor is running in "
                                 f"another thread; an executor serves one thread at a time "
                                 f"(bind one executor per thread)")
        try:
            return method(self, *args, **kwargs)
        finally:
            self._busy.release()
    return guarded
