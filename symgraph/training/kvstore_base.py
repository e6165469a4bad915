"""MXNet's ``KVStoreBase``: the interface a gradient-exchange backend implements, and the
registry through which ``sg.kv.create(name)`` finds one written in Python (as Horovod and
BytePS plugged into MXNet). ``TestStore`` is MXNet's example of such a store: it sums the
values of one process's devices and keeps no optimizer.

A registered store is created by the lower-cased class name:

>>> @KVStoreBase.register
... class MyStore(TestStore):
...     pass
>>> type(sg.kv.create('mystore')).__name__
'MyStore'
"""
from __future__ import annotations

import warnings
from typing import Any, Optional

from ..core.base import AttrError

__all__ = ["KVStoreBase", "TestStore", "registered"]


class KVStoreBase:
    """An abstract key-value store for data-parallel training (MXNet's ``KVStoreBase``)."""

    OPTIMIZER = "optimizer"
    kv_registry: dict[str, type] = {}

    def broadcast(self, key: Any, value: Any, out: Any, priority: int = 0) -> None:
        """Write ``value`` (rank 0's) into ``out`` (an array or a list of arrays)."""
        raise NotImplementedError(f"{type(self).__name__}.broadcast")

    def pushpull(self, key: Any, value: Any, out: Any = None, priority: int = 0) -> None:
        """Sum ``value`` (a list: one per device) and write the sum into ``out`` (or into
        ``value`` itself when ``out`` is None)."""
        raise NotImplementedError(f"{type(self).__name__}.pushpull")

    def set_optimizer(self, optimizer: Any) -> None:
        """Apply ``optimizer`` to the stored values on every push."""
        raise NotImplementedError(f"{type(self).__name__}.set_optimizer")

    def is_capable(self, capability: str) -> bool:
        """Whether the store supports ``capability`` (``KVStoreBase.OPTIMIZER``)."""
        raise NotImplementedError(f"{type(self).__name__}.is_capable")

    def save_optimizer_states(self, fname: str, dump_optimizer: bool = False) -> None:
        raise NotImplementedError(f"{type(self).__name__}.save_optimizer_states")

    def load_optimizer_states(self, fname: str) -> None:
        raise NotImplementedError(f"{type(self).__name__}.load_optimizer_states")

    @property
    def type(self) -> str:
        raise NotImplementedError(f"{type(self).__name__}.type")

    @property
    def rank(self) -> int:
        raise NotImplementedError(f"{type(self).__name__}.rank")

    @property
    def num_workers(self) -> int:
        raise NotImplementedError(f"{type(self).__name__}.num_workers")

    @staticmethod
    def register(klass: type) -> type:
        """Make ``klass`` creatable by ``sg.kv.create(klass.__name__.lower())``."""
        if not isinstance(klass, type):
            raise AttrError(f"KVStoreBase.register takes a class, got {type(klass).__name__}")
        name = klass.__name__.lower()
        old = KVStoreBase.kv_registry.get(name)
        if old is not None and old is not klass:
            warnings.warn(f"kvstore {klass.__module__}.{klass.__name__} replaces "
                          f"{old.__module__}.{old.__name__} as {name!r}", stacklevel=2)
        KVStoreBase.kv_registry[name] = klass
        return klass


def registered(name: str) -> Optional[type]:
    """The store class registered under ``name`` (any case), or None."""
    return KVStoreBase.kv_registry.get(name.lower()) if isinstance(name, str) else None


@KVStoreBase.register
class TestStore(KVStoreBase):
    """MXNet's store for testing: sums one process's device values, keeps no optimizer.

    Examples
    --------
    >>> kv = sg.kv.create('teststore')
    >>> a, b = sg.nd.ones((2,)), sg.nd.ones((2,)) * 2
    >>> kv.pushpull(0, [a, b])
    >>> a
    [3. 3.]
    <NDArray 2 @cpu(0)>
    """

    def broadcast(self, key: Any, value: Any, out: Any, priority: int = 0) -> None:
        for o in out if isinstance(out, list) else [out]:
            o[:] = value

    def pushpull(self, key: Any, value: Any, out: Any = None, priority: int = 0) -> None:
        values = value if isinstance(value, (list, tuple)) else [value]
        total = values[0].copy()
        for v in values[1:]:
            total += v.as_in_context(total.context)
        outs = values if out is None else (out if isinstance(out, list) else [out])
        for o in outs:
            o[:] = total

    def is_capable(self, capability: str) -> bool:
        if capability.lower() == KVStoreBase.OPTIMIZER:
            return False
        raise AttrError(f"TestStore.is_capable: unknown capability {capability!r}; known: "
                        f"{[KVStoreBase.OPTIMIZER]!r}")

    @property
    def type(self) -> str:
        return "teststore"

    @property
    def rank(self) -> int:
        return 0

    @property
    def num_workers(self) -> int:
        return 1
