"""MXNet's user-annotation objects of the profiler (``Domain``, ``Task``, ``Frame``,
``Event``, ``Counter``, ``Marker``): while the profiler records, a task, frame or event
becomes a complete event (``"ph": "X"``) in the same trace as the schedule steps, a counter
a counter event (``"C"``) per change and a marker an instant event (``"i"``). When the
profiler is stopped they cost a check and record nothing.

Examples
--------
>>> dom = sg.profiler.Domain('data')
>>> task = dom.new_task('decode'); task.start(); task.stop()
>>> c = dom.new_counter('queued', 0); c += 3; c.value
3
"""
from __future__ import annotations

from typing import Any, Optional

from ...core.base import AttrError
from . import recorder as _prof

__all__ = ["Domain", "Task", "Frame", "Event", "Counter", "Marker"]

_SCOPES = {"global": "g", "process": "p", "thread": "t", "task": "t", "marker": "t"}


class Domain:
    """A named group of annotations (the trace's category)."""

    def __init__(self, name: str) -> None:
        self.name = str(name)

    def __str__(self) -> str:
        return self.name

    def new_task(self, name: str) -> "Task":
        return Task(self, name)

    def new_frame(self, name: str) -> "Frame":
        return Frame(self, name)

    def new_counter(self, name: str, value: Optional[int] = None) -> "Counter":
        return Counter(self, name, value)

    def new_marker(self, name: str) -> "Marker":
        return Marker(self, name)


class _Range:
    """``start()`` ... ``stop()`` recorded as one complete event (also a context manager)."""

    KIND = "event"

    def __init__(self, domain: Optional[Domain], name: str) -> None:
        self.domain, self.name = domain, str(name)
        self._t0: Optional[float] = None

    def start(self) -> None:
        self._t0 = _prof.now_us() if _prof.recording() else None

    def stop(self) -> None:
        t0, self._t0 = self._t0, None
        if t0 is None or not _prof.recording():
            return
        _prof.record({"name": self.name, "cat": str(self.domain or self.KIND), "ph": "X",
                      "ts": t0, "dur": _prof.now_us() - t0, "pid": "cpu/0", "tid": self.KIND,
                      "args": {"phase": self.KIND, "ops": f"{self.KIND} {self.name}",
                               "nodes": []}})

    def __enter__(self) -> "_Range":
        self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def __str__(self) -> str:
        return self.name


class Task(_Range):
    """A unit of work in ``domain``."""

    KIND = "task"


class Frame(_Range):
    """One iteration of a repeated piece of work (a batch) in ``domain``."""

    KIND = "frame"


class Event(_Range):
    """A range of work outside any domain."""

    def __init__(self, name: str) -> None:
        super().__init__(None, name)


class Counter:
    """An integer shown as a graph over time; every change is recorded."""

    def __init__(self, domain: Domain, name: str, value: Optional[int] = None) -> None:
        self.domain, self.name = domain, str(name)
        self.value = 0
        if value is not None:
            self.set_value(value)

    def set_value(self, value: int) -> None:
        if int(value) != value:
            raise AttrError(f"profiler counter {self.name!r}: value {value!r} is not an "
                            f"integer")
        self.value = int(value)
        if _prof.recording():
            _prof.record({"name": self.name, "cat": str(self.domain), "ph": "C",
                          "ts": _prof.now_us(), "pid": "cpu/0", "tid": "counter",
                          "args": {self.name: self.value}})

    def increment(self, delta: int = 1) -> None:
        self.set_value(self.value + delta)

    def decrement(self, delta: int = 1) -> None:
        self.set_value(self.value - delta)

    def __iadd__(self, delta: int) -> "Counter":
        self.increment(delta)
        return self

    def __isub__(self, delta: int) -> "Counter":
        self.decrement(delta)
        return self

    def __str__(self) -> str:
        return self.name


class Marker:
    """A point in time; ``mark(scope)`` with scope 'global', 'process', 'thread', 'task'
    or 'marker' (MXNet's names)."""

    def __init__(self, domain: Domain, name: str) -> None:
        self.domain, self.name = domain, str(name)

    def mark(self, scope: str = "process") -> None:
        if scope not in _SCOPES:
            raise AttrError(f"profiler marker {self.name!r}: scope={scope!r}, expected one "
                            f"of {sorted(_SCOPES)}")
        if _prof.recording():
            _prof.record({"name": self.name, "cat": str(self.domain), "ph": "i",
                          "ts": _prof.now_us(), "s": _SCOPES[scope], "pid": "cpu/0",
                          "tid": "marker", "args": {}})
