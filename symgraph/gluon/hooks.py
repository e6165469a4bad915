"""``HookHandle``: what ``Block.register_forward_hook`` and friends return; ``detach()``
(or leaving its ``with`` block) removes the hook again."""
from __future__ import annotations

import weakref
from collections import OrderedDict
from typing import Any, Callable, Optional

from ..core.base import GraphError


class HookHandle:
    """A handle on one hook in a block's hook table.

    Example::

        >>> import symgraph as sg
        >>> net = sg.gluon.nn.Dense(2)
        >>> calls = []
        >>> h = net.register_forward_pre_hook(lambda blk, inputs: calls.append(1))
        >>> h.detach()
    """

    def __init__(self) -> None:
        self._table: Optional[weakref.ReferenceType] = None
        self._id: Optional[int] = None

    def attach(self, table: "OrderedDict[int, Callable]", hook: Callable) -> None:
        """Put ``hook`` into ``table`` (once per handle)."""
        if self._table is not None:
            raise GraphError("HookHandle: the same handle cannot be attached twice")
        self._id = id(hook)
        table[self._id] = hook
        self._table = weakref.ref(table)

    def detach(self) -> None:
        """Remove the hook (a no-op when it is gone already)."""
        table = self._table() if self._table is not None else None
        if table is not None and self._id in table:
            del table[self._id]

    def __enter__(self) -> "HookHandle":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.detach()

