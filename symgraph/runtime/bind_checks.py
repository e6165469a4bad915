"""Checks the Executor makes on what it is given and how it is used.

* ``check_no_aliasing``: two bound roles (arguments, aux states, gradients) must not share
  memory, or a run would write one through the other.
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

from ..core.base import BindError, ExecutionError
from ..core.context import Context
from .ndarray import NDArray, zeros


def _byte_span(a: NDArray) -> tuple[int, int]:
    """[first byte, last byte + 1) of an array's memory (host or device)."""
    if a.context.device_type == "cpu":
        d = a._data
        start = d.__array_interface__["data"][0]
        ends = [(n - 1) * st for n, st in zip(d.shape, d.strides)]
        return (start + sum(e for e in ends if e < 0),
                start + sum(e for e in ends if e > 0) + d.itemsize)
    start = int(a._data.gpudata)  # device arrays are contiguous (symgraph.runtime.cuda)
    return start, start + int(a._data.nbytes)


def check_no_aliasing(groups: list[tuple[str, Sequence[str], list]]) -> None:
    """BindError when two bound roles (arguments, aux states, gradients) share memory: a run
    would write one through the other (MXNet refuses such binds too)."""
    spans = sorted((*_byte_span(a), f"{kind} {n}") for kind, names, arrays in groups
                   for n, a in zip(names, arrays) if a is not None and a.size)
    widest: Optional[tuple[int, int, str]] = None
    for lo, hi, who in spans:
        if widest is not None and lo < widest[1]:
            raise BindError(f"bind: {who} and {widest[2]} are the same array (or share "
                            f"memory); bind a separate array to each")
        if widest is None or hi > widest[1]:
            widest = (lo, hi, who)


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
