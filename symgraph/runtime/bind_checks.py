"""Checks the Executor makes on what it is given and how it is used.

* ``check_no_aliasing``: two bound roles (arguments, aux states, gradients) must not share
  memory, or a run would write one through the other.
* ``as_list``, ``grad_reqs``: MXNet's forms of per-argument arrays and gradient requests
  (list, dict, one string) as one list or dict over the argument names, each checked;
  ``bound_for``: the program (training or inference) those requests make a bind compile.
* ``alloc``: arrays ``simple_bind`` makes; memory that cannot be had is a BindError naming it.
* ``one_thread``: an executor's runs share its bound arrays, outputs and saved forward, so a run
  entered while another thread is inside one raises ExecutionError (docs/architecture.md,
  "Threads and aliasing"); serialising them would still let a second thread overwrite the
  first one's results before it read them.
"""
from __future__ import annotations

import functools
from typing import Any, Callable, Mapping, Optional, Sequence

import numpy as np

from ..core.base import BindError, ExecutionError
from ..core.context import Context
from .ndarray import NDArray, zeros


GRAD_REQS = ("write", "add", "null")


def as_list(kind: str, value: Any, names: Sequence[str], required: bool,
            extra_ok: bool = False) -> list:
    """Turn a list or dict of per-argument values into a list in ``names`` order.
    ``extra_ok``: a dict may hold names that are not arguments (they are left out)."""
    if isinstance(value, Mapping) and extra_ok:
        known = set(names)
        value = {k: v for k, v in value.items() if k in known}
    if value is None:
        if required and names:
            raise BindError(f"{kind}: missing arrays for {list(names)}")
        return [None] * len(names)
    if isinstance(value, Mapping):
        extra = sorted(k for k in set(value) - set(names) if value[k] is not None)
        if extra:
            raise BindError(f"{kind}: {extra} are not arguments of the symbol; expected {list(names)}")
        missing = [n for n in names if n not in value]
        if required and missing:
            raise BindError(f"{kind}: missing arrays for {missing}")
        return [value.get(n) for n in names]
    value = list(value)
    if len(value) != len(names):
        raise BindError(f"{kind}: {len(value)} arrays given for {len(names)} names {list(names)}")
    return value


def grad_reqs(grad_req: Any, names: Sequence[str]) -> dict[str, str]:
    """MXNet's forms of ``grad_req`` (one string, a list, a dict; missing or None: null) as
    one dict over the argument names, each checked."""
    if isinstance(grad_req, str):
        reqs = {n: grad_req for n in names}
    else:  # (MXNet ignores requests for other names)
        given = as_list("grad_req", grad_req, names, required=False, extra_ok=True)
        reqs = {n: r or "null" for n, r in zip(names, given)}
    for n, r in reqs.items():
        if r not in GRAD_REQS:
            raise BindError(f"grad_req for {n}: {r!r} is not one of {GRAD_REQS}")
    return reqs


def bound_for(reqs: Sequence[str]) -> tuple[bool, ...]:
    """The program a bind compiles now: training when some gradient is requested, else
    inference; the other is compiled on first use. Every error a bind must raise comes from
    either: the training graph holds the whole inference graph (all outputs are kept, and the
    same passes, lowering and backend run on it) plus autodiff's nodes, and without
    gradients the two graphs differ only by the aux-state updates a training forward writes
    back. Building one instead of both halves the work of a bind."""
    return (True,) if any(r != "null" for r in reqs) else (False,)


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
    """BindError when two bound roles (arguments, aux states, gradients) share memory and a
    run writes one of them: it would write through the other. Two arguments may share an
    array (a run only reads arguments; MXNet binds one weight as two arguments so)."""
    spans = sorted((*_byte_span(a), kind, f"{kind} {n}") for kind, names, arrays in groups
                   for n, a in zip(names, arrays) if a is not None and a.size)
    live: list[tuple[int, int, str, str]] = []  # spans that may still overlap the next ones
    for lo, hi, kind, who in spans:
        live = [s for s in live if s[1] > lo]
        clash = next((s for s in live if not kind == s[2] == "argument"), None)
        if clash is not None:
            raise BindError(f"bind: {who} and {clash[3]} are the same array (or share "
                            f"memory); bind a separate array to each")
        live.append((lo, hi, kind, who))


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
