"""What NDArray asks of the imperative engine (``nd_methods`` plugs these in): compute pending
arrays when a value is read, written in place or bound to an executor run.

Example::

    >>> import symgraph as sg
    >>> y = sg.nd.ones((2,)) + 1       # pending
    >>> force([y]); y.is_pending
    False
"""
from __future__ import annotations

import weakref
from typing import Sequence

from ...runtime.ndarray import NDArray
from .compute import force_pending
from .engine import PENDING, THREAD
from .trace import settle, unsettled


def force(arrays: Sequence[NDArray]) -> None:
    """Compute pending ``arrays`` (and every live pending array of their subgraph)."""
    pending = [a for a in arrays if a._buf is None]
    if pending:
        force_pending(pending)


def flush() -> None:
    """Compute every live pending array."""
    settle()
    arrays = [a for refs in list(PENDING.values()) for r in refs
              for a in (r(),) if a is not None and a._buf is None]
    by_ctx: dict = {}
    for a in arrays:
        by_ctx.setdefault(a._ctx, []).append(a)
    for group in by_ctx.values():
        force(group)


def wait(a: NDArray) -> None:
    """``wait_to_read``: compute ``a`` and wait for its device."""
    force([a])
    if a._ctx.device_type == "gpu":
        import pycuda.driver as drv
        from ...runtime.cuda.runtime import activate
        with activate(a._ctx.device_id):
            drv.Context.synchronize()


def before_run() -> None:
    """An executor is about to overwrite its bound arrays: compute pending work that reads them
    (nothing inside one of our own runs)."""
    if not THREAD.state.running and (PENDING or unsettled()):  # (inside our own runs: nothing)
        flush()


def before_write(a: NDArray) -> None:
    """``a`` is about to be written in place: compute everything pending first (it may read
    ``a``), and cut ``a`` from the recorded graph unless it is a variable."""
    if THREAD.state.running:  # a custom op writing its outputs inside a run
        return
    if PENDING or unsettled():
        flush()
    if a._entry is not None and a._entry.node is not a._var:
        a._entry, a._recorded = None, False


def adopt(a: NDArray) -> None:
    """``a += v`` on a pending ``a``: ``a``, now standing for the pending result, is its
    node's one pending array."""
    settle()  # (the tape's node goes to PENDING, which now holds its one array)
    PENDING[a._entry.node] = [weakref.ref(a)]
