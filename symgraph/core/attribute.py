"""``sg.AttrScope``: user attributes given to every symbol created inside a ``with`` block.

As MXNet's: variables take any key; op nodes take ``__key__`` ones. MXNet's hidden keys
(``ctx_group``, ``lr_mult``, ``wd_mult``, ``force_mirroring``, ``mirror_stage``) are stored as
``__key__`` and read back under both spellings. Attributes given at creation win over the
scope's; inner scopes add to (and override) outer ones. The scope is per thread;
``AttrScope.current`` reads or replaces it (MXNet's class property).

Example::

    >>> import symgraph as sg
    >>> with sg.AttrScope(ctx_group="dev1", __mood__="calm"):
    ...     x = sg.sym.var("x")
    ...     y = sg.sym.relu(x)
    >>> x.attr("ctx_group"), y.attr("__mood__")
    ('dev1', 'calm')
"""
from __future__ import annotations

import threading
from collections import defaultdict
from typing import Any, Mapping, Optional

__all__ = ["AttrScope", "HIDDEN_KEYS", "hidden_key", "current_attrs"]

HIDDEN_KEYS = ("ctx_group", "lr_mult", "wd_mult", "force_mirroring", "mirror_stage")
"""Keys MXNet stores as ``__key__`` (its ``kHiddenKeys``)."""

_LOCAL = threading.local()


def hidden_key(key: str) -> str:
    """``__key__`` for one of :data:`HIDDEN_KEYS`, any other key unchanged."""
    return f"__{key}__" if key in HIDDEN_KEYS else key


class _ScopeClass(type):
    """Gives the class MXNet's ``AttrScope.current``: the thread's scope, settable."""

    @property
    def current(cls) -> "AttrScope":
        scope = getattr(_LOCAL, "current", None)
        if scope is None:
            scope = _LOCAL.current = AttrScope()
        return scope

    @current.setter
    def current(cls, scope: "AttrScope") -> None:
        _LOCAL.current = scope


class AttrScope(metaclass=_ScopeClass):
    """Attributes (string values) attached to the symbols created in the ``with`` block."""

    # Names MXNet's control-flow operators give their subgraphs, counted per prefix
    _subgraph_names: "defaultdict[str, int]" = defaultdict(int)

    def __init__(self, **kwargs: Any) -> None:
        for k, v in kwargs.items():
            if not isinstance(v, str):
                raise ValueError(f"AttrScope: attribute {k}={v!r} must be a string "
                                 f"(MXNet's rule: attributes are strings)")
        self._attr = {hidden_key(k): v for k, v in kwargs.items()}
        self._old: Optional[AttrScope] = None

    @classmethod
    def subgraph_name(cls, name: str) -> str:
        """A unique name for a control-flow subgraph (MXNet's ``_get_unique_subgraph_name``):
        ``name`` under the enclosing subgraph's (``outer$name``), numbered per name."""
        outer = cls.current._attr.get("__subgraph_name__", "")
        full = f"{outer}${name}" if outer else name
        cls._subgraph_names[full] += 1
        return f"{full}{cls._subgraph_names[full] - 1}"

    def get(self, attr: Optional[Mapping[str, Any]]) -> dict[str, str]:
        """The scope's attributes updated with ``attr`` (the ones given at creation win)."""
        out = dict(self._attr)
        out.update({hidden_key(k): str(v) for k, v in (attr or {}).items()})
        return out

    def __enter__(self) -> "AttrScope":
        self._old = AttrScope.current
        self._attr = {**self._old._attr, **self._attr}  # nested scopes accumulate
        _LOCAL.current = self
        return self

    def __exit__(self, *exc: object) -> None:
        _LOCAL.current = self._old


def current_attrs() -> Optional[dict[str, str]]:
    """The active scope's attributes, or None outside any scope (the cheap common case:
    op functions call this for every node they make, autodiff's included)."""
    scope = getattr(_LOCAL, "current", None)
    return dict(scope._attr) if scope is not None and scope._attr else None
