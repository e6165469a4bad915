"""How a Gluon ``Trainer`` exchanges gradients: the choice of kvstore and of
``update_on_kvstore`` (MXNet 1.9.1's rules), and per-context update counts.

- One context and a kvstore given by name: no store (nothing to exchange), as MXNet.
- Several contexts: a ``'device'``/``'local'`` :class:`~symgraph.training.kvstore.KVStore`
  sums the gradients. With ``update_on_kvstore`` (MXNet's default for such a store) the store
  keeps the weights and applies the optimizer once to the summed gradient, then every context
  pulls the new weights: one set of optimizer states, one update count per step. symgraph's
  store updates on the host, so with GPU contexts the default is per-device updates instead
  (``update_on_kvstore=False``: every context applies the same update to its own copy).
- A store object (``sg.kv.create(...)`` or a class registered with ``KVStoreBase.register``)
  is used as given; a store that is not capable of optimizers never updates.
"""
from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np

from ..core.base import AttrError, SymgraphError
from ..training import kvstore as _kv
from ..training.kvstore_base import KVStoreBase

# 'local' updates on the host unless a parameter is this large (MXNet's rule)
BIG_PARAMETER = 1024 * 1024 * 16
NAMED_STORES = ("device", "local")


class KVStoreConfigError(SymgraphError, ValueError):
    """A kvstore and ``update_on_kvstore`` that cannot go together (a ValueError, as MXNet)."""


class UpdateOnKVStoreError(SymgraphError, AssertionError):
    """``allreduce_grads``/``update`` called while the store updates the parameters (an
    AssertionError, as MXNet)."""


def check_spec(kvstore: Any) -> None:
    """Refuse, by name, a kvstore the Trainer cannot use (at construction)."""
    if kvstore is None or kvstore is False or isinstance(kvstore, KVStoreBase):
        return
    if kvstore not in NAMED_STORES:
        raise AttrError(f"Trainer: kvstore {kvstore!r} is not supported; symgraph sums "
                        f"gradients across the local contexts ('device' or 'local', or a "
                        f"store object from sg.kv.create)")


def create_store(kvstore: Any, update_on_kvstore: Optional[bool], ctxs: Sequence[Any],
                 shapes: Sequence[tuple]) -> tuple[Optional[KVStoreBase], Optional[bool]]:
    """``(store or None, update_on_kvstore or None)`` for a Trainer over ``ctxs`` whose
    parameters have ``shapes`` (MXNet's ``_create_kvstore`` and ``Trainer._init_kvstore``)."""
    if isinstance(kvstore, KVStoreBase):
        store = kvstore
    elif kvstore in NAMED_STORES and len(ctxs) > 1:
        store = _kv.create(kvstore)
    else:
        return None, None
    own = isinstance(store, _kv.KVStore)
    capable = own and store.is_capable(KVStoreBase.OPTIMIZER)
    if update_on_kvstore and not capable:
        raise KVStoreConfigError(
            f"Trainer: update_on_kvstore=True needs a store that applies the optimizer; "
            f"{type(store).__name__} ({store.type!r}) does not: set update_on_kvstore=False")
    if update_on_kvstore is not None:
        return store, bool(update_on_kvstore)
    on_host = all(c.device_type != "gpu" for c in ctxs)
    small = kvstore != "local" or max((int(np.prod(s)) for s in shapes), default=0) \
        <= BIG_PARAMETER
    return store, capable and on_host and small


class ContextCounts:
    """One update count per parameter and context, as MXNet's optimizer keeps them
    (``_set_current_context``): k contexts updating the same parameter in one step count one
    update, not k, so a learning-rate schedule advances once per step."""

    def __init__(self) -> None:
        self.by_ctx: dict[Any, dict] = {}

    def select(self, optimizer: Any, ctx: Any, first: dict) -> None:
        """Make ``ctx``'s counts the optimizer's current ones (a new context starts from
        ``first``, the counts before this step)."""
        optimizer._index_update_count = self.by_ctx.setdefault(ctx, dict(first))

    def forget(self) -> None:
        """Drop the per-context counts (loaded states bring their own)."""
        self.by_ctx.clear()
