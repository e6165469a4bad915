"""Automatic node names, as MXNet's ``mx.name``: ``fullyconnected0``, ``Prefix('net_')``."""
from __future__ import annotations

import threading
from typing import Optional

__all__ = ["NameManager", "Prefix"]


class NameManager:
    """Hands out ``<hint><counter>`` names; use as a context manager to scope them."""

    _local = threading.local()

    def __init__(self) -> None:
        self._counter: dict[str, int] = {}
        self._old: Optional["NameManager"] = None

    def get(self, name: Optional[str], hint: str) -> str:
        """``name`` if given, else a fresh name built from ``hint``."""
        if name:
            return name
        hint = hint.lower()
        n = self._counter.get(hint, 0)
        self._counter[hint] = n + 1
        return f"{hint}{n}"

    def __enter__(self) -> "NameManager":
        self._old = current()
        NameManager._local.current = self
        return self

    def __exit__(self, *exc: object) -> None:
        NameManager._local.current = self._old


class Prefix(NameManager):
    """Prefixes every name, given or automatic: ``with Prefix('net_'):``."""

    def __init__(self, prefix: str) -> None:
        super().__init__()
        self._prefix = prefix

    def get(self, name: Optional[str], hint: str) -> str:
        # (NameManager.get inlined: autodiff names most of its nodes through here)
        if name:
            return self._prefix + name
        hint = hint.lower()
        n = self._counter.get(hint, 0)
        self._counter[hint] = n + 1
        return f"{self._prefix}{hint}{n}"

    def restart(self, prefix: str) -> None:
        """Become a fresh ``Prefix(prefix)`` (counters from 0) while staying the current
        manager: autodiff names each node's backward nodes this way without entering and
        leaving a new manager per node."""
        self._prefix = prefix
        self._counter.clear()


def current() -> NameManager:
    """The active name manager (a process-wide default outside any ``with``)."""
    cur = getattr(NameManager._local, "current", None)
    if cur is None:
        cur = NameManager._local.current = NameManager()
    return cur
