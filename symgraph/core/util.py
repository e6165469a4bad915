"""``sg.util``: MXNet's small utilities: GPU queries, environment access, and the switch for
numpy shape semantics (``np_shape``).

With numpy shape semantics on, a shape is what numpy means by it: ``()`` is a 0-d (scalar)
array, a ``0`` dimension is an empty axis, and ``-1`` (or ``None`` for a whole shape) marks
what is unknown. Off (MXNet 1.x's legacy default), ``0`` marks an unknown dimension and ``()``
an unknown shape. The switch is per thread, as in MXNet.

Example::

    >>> import symgraph as sg
    >>> sg.is_np_shape()
    False
    >>> with sg.np_shape(True):
    ...     sg.is_np_shape()
    True
"""
from __future__ import annotations

import functools
import inspect
import os
import threading
from typing import Any, Callable, Optional

from .base import SymgraphError
from .context import num_gpus

__all__ = ["get_gpu_count", "get_gpu_memory", "getenv", "setenv", "is_np_shape",
           "set_np_shape", "np_shape", "use_np_shape", "is_np_array"]

_STATE = threading.local()


def get_gpu_count() -> int:
    """How many CUDA devices are visible (0 without a driver or pycuda)."""
    return num_gpus()


def get_gpu_memory(gpu_dev_id: int) -> tuple[int, int]:
    """``(free, total)`` bytes of GPU ``gpu_dev_id``; SymgraphError when it does not exist."""
    count = num_gpus()
    if not 0 <= int(gpu_dev_id) < count:
        raise SymgraphError(f"get_gpu_memory: no GPU {gpu_dev_id} ({count} visible)")
    import pycuda.driver as drv
    ctx = drv.Device(int(gpu_dev_id)).make_context()
    try:
        free, total = drv.mem_get_info()
    finally:
        ctx.pop()
    return int(free), int(total)


def getenv(name: str) -> Optional[str]:
    """The value of environment variable ``name``, or None when unset (MXNet's ``getenv``)."""
    return os.environ.get(name)


def setenv(name: str, value: Optional[str]) -> None:
    """Set environment variable ``name``; ``None`` unsets it. symgraph reads its settings at
    each use, so the change takes effect at once (sg.config)."""
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = str(value)


def is_np_shape() -> bool:
    """Whether numpy shape semantics are on in this thread."""
    return bool(getattr(_STATE, "np_shape", False))


def is_np_array() -> bool:
    """Whether MXNet's ``mx.np`` array semantics are on: never in symgraph, which has the
    classic ``nd``/``sym`` arrays only (code asking takes its ``nd`` branch).

    Example: ``sg.util.is_np_array()`` is False."""
    return False


def set_np_shape(active: bool) -> bool:
    """Turn numpy shape semantics on or off in this thread; returns the previous state."""
    previous = is_np_shape()
    _STATE.np_shape = bool(active)
    return previous


class np_shape:  # noqa: N801  (MXNet's name; used as `with sg.np_shape():`)
    """Scope in which numpy shape semantics are ``active`` (restored on exit)."""

    def __init__(self, active: bool = True) -> None:
        self._active = bool(active)
        self._previous: Optional[bool] = None

    def __enter__(self) -> "np_shape":
        self._previous = set_np_shape(self._active)
        return self

    def __exit__(self, *exc: object) -> None:
        set_np_shape(bool(self._previous))


def use_np_shape(func: Callable[..., Any]) -> Callable[..., Any]:
    """Decorator: run ``func`` (or every method of a class) with numpy shape semantics on."""
    if inspect.isclass(func):
        for name, method in list(vars(func).items()):
            if inspect.isfunction(method):
                setattr(func, name, use_np_shape(method))
        return func
    if not callable(func):
        raise TypeError(f"use_np_shape: expected a function or a class, got {func!r}")

    @functools.wraps(func)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        with np_shape(True):
            return func(*args, **kwargs)
    return wrapped
