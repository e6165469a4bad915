"""The scope of a Gluon block's ``name_scope()``: prefixes for the children made inside it.

``with block.name_scope():`` makes the block the current scope of its thread; a child block
created there is named ``<parent prefix><hint><n>_`` and its parameters live in the parent's
parameter dict under that prefix (MXNet 1.x's naming).
"""
from __future__ import annotations

import threading
from typing import Any, Optional

from ..core import name as _name
from .parameter_dict import ParameterDict


class BlockScope:
    """The scope of a block's ``name_scope()``: hands out child prefixes."""

    _current = threading.local()

    def __init__(self, block: Any) -> None:  # a gluon Block (which imports this module)
        self._block = block
        self._counter: dict[str, int] = {}
        self._old: Optional["BlockScope"] = None
        self._names: Optional[_name.Prefix] = None

    @staticmethod
    def create(prefix: Optional[str], params: Optional[ParameterDict],
               hint: str) -> tuple[str, ParameterDict]:
        """The prefix and parameter dict of a new block with alias ``hint``."""
        current = getattr(BlockScope._current, "value", None)
        if current is None:
            if prefix is None:
                prefix = _name.current().get(None, hint) + "_"
            params = ParameterDict(prefix) if params is None else \
                ParameterDict(params.prefix, params)
            return prefix, params
        if prefix is None:
            count = current._counter.get(hint, 0)
            prefix = f"{hint}{count}_"
            current._counter[hint] = count + 1
        if params is None:
            parent = current._block.params
            params = ParameterDict(parent.prefix + prefix, parent._shared)
        else:
            params = ParameterDict(params.prefix, params)
        return current._block.prefix + prefix, params

    def __enter__(self) -> "BlockScope":
        if self._block._empty_prefix:
            return self
        self._old = getattr(BlockScope._current, "value", None)
        BlockScope._current.value = self
        self._names = _name.Prefix(self._block.prefix)
        self._names.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._block._empty_prefix:
            return
        assert self._names is not None
        self._names.__exit__(*exc)
        self._names = None
        BlockScope._current.value = self._old
