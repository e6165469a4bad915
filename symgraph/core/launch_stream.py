"""The CUDA stream that user kernels (``sg.rtc``, aot ``Custom`` functions) launch on now.

The ``Custom`` op sets the executor's stream around a user operator's Python code, so the
kernels it launches are ordered with the executor's own; outside such a scope it is None (the
default stream). It sits in the core because the op (below the runtime) sets it and the
runtime's ``sg.rtc`` reads it.

Example::

    >>> from symgraph.core import launch_stream
    >>> with launch_stream.stream_scope("s"):
    ...     launch_stream.current()
    's'
    >>> launch_stream.current() is None
    True
"""
from __future__ import annotations

import contextlib
import contextvars
from typing import Any, Iterator

_STREAM: contextvars.ContextVar = contextvars.ContextVar("sg_rtc_stream", default=None)


@contextlib.contextmanager
def stream_scope(stream: Any) -> Iterator[None]:
    """Kernels launched inside run on ``stream`` (a pycuda Stream; None: the default stream)."""
    token = _STREAM.set(stream)
    try:
        yield
    finally:
        _STREAM.reset(token)


def current() -> Any:
    """The stream of the innermost :func:`stream_scope` (None outside any)."""
    return _STREAM.get()
