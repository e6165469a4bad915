"""Initializers by name: MXNet's registry (case-insensitive) and its ``dumps()`` JSON.

``sg.init`` (training layer) registers its classes here; the JSON reader of the front end checks
a variable's ``__init__`` attribute through :func:`from_spec` when a file is loaded, naming the
variable, without importing the training layer above it.

Example::

    >>> from symgraph.core import init_registry
    >>> import symgraph as sg
    >>> init_registry.from_spec('["constant", {"value": 2.0}]')
    Constant({'value': 2.0})
"""
from __future__ import annotations

import json
from typing import Any

from .base import AttrError

_REGISTRY: dict[str, type] = {}


def register(klass: type, *aliases: str) -> type:
    """Make ``klass`` creatable by its lower-cased class name and by ``aliases``."""
    for name in (klass.__name__.lower(), *aliases):
        _REGISTRY[name] = klass
    return klass


def names() -> list[str]:
    """The names :func:`from_spec` knows, e.g. ``'xavier'``."""
    return sorted(_REGISTRY)


def from_spec(spec: str) -> Any:
    """An initializer from a name (``'xavier'``) or ``dumps()`` JSON (``'["constant",
    {"value": 2}]'``); ``AttrError`` naming the known ones for an unknown name."""
    name, kwargs = spec.lower(), {}
    if spec.lstrip().startswith("["):
        try:
            name, kwargs = json.loads(spec)
        except ValueError as exc:
            raise AttrError(f"initializer JSON {spec!r}: {exc}") from None
    name = str(name).lower()  # MXNet writes class names ("Constant"); its registry ignores case
    if name not in _REGISTRY:
        raise AttrError(f"unknown initializer {name!r}; known: {sorted(_REGISTRY)}")
    try:
        return _REGISTRY[name](**kwargs)
    except TypeError as exc:
        raise AttrError(f"initializer {spec!r}: {exc}") from None
