"""Modules whose attributes are another namespace's (MXNet's ``mx.contrib.ndarray`` is
``sg.nd.contrib``): a module-level ``__getattr__`` and ``__dir__`` reading the namespace on
use, since the front ends fill their namespaces after these modules are imported."""
from __future__ import annotations

from typing import Any, Callable


def forwarding(namespace: Callable[[], Any], module: str) -> tuple[Callable, Callable]:
    """(``__getattr__``, ``__dir__``) of ``module`` answering from ``namespace()``."""
    def getattr_(name: str) -> Any:
        try:
            return vars(namespace())[name]
        except KeyError:
            raise AttributeError(f"{module} has no {name!r}") from None

    def dir_() -> list[str]:
        return sorted(vars(namespace()))
    return getattr_, dir_
