"""``sg.io.ResizeIter`` and ``sg.io.PrefetchingIter``: MXNet's iterators over iterators.

``ResizeIter`` makes an epoch exactly ``size`` batches long (restarting the inner iterator
when it runs out). ``PrefetchingIter`` reads the next batch of each inner iterator on a
background thread while the current one is used, and joins the iterators' batches into one
(data lists, then label lists, concatenated; names renamed with ``rename_data``).

Example::

    >>> import numpy as np, symgraph as sg
    >>> inner = sg.io.NDArrayIter(np.zeros((10, 2)), batch_size=5)
    >>> len(list(sg.io.ResizeIter(inner, 3)))
    3
"""
from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Optional, Sequence, Union

from . import base as _io
from ...core.base import DataError
from .base import DataBatch, DataDesc, DataIter

__all__ = ["ResizeIter", "PrefetchingIter"]


class _Wrapper(DataIter):
    """An iterator whose ``iter_next`` sets ``current_batch``; ``get*`` read it."""

    current_batch: Optional[DataBatch] = None

    def next(self) -> DataBatch:
        if not self.iter_next():
            raise StopIteration
        return self.current_batch  # type: ignore[return-value]

    def getdata(self) -> Any:
        return self.current_batch.data if self.current_batch else None

    def getlabel(self) -> Any:
        return self.current_batch.label if self.current_batch else None

    def getindex(self) -> Any:
        return self.current_batch.index if self.current_batch else None

    def getpad(self) -> int:
        return self.current_batch.pad if self.current_batch else 0


class ResizeIter(_Wrapper):
    """``data_iter`` cut or stretched to ``size`` batches per epoch; ``reset_internal``:
    whether ``reset()`` also restarts ``data_iter`` (else the next epoch continues it)."""

    def __init__(self, data_iter: DataIter, size: int, reset_internal: bool = True) -> None:
        super().__init__(data_iter.batch_size)
        if int(size) <= 0:
            raise DataError(f"ResizeIter: size must be positive, got {size}")
        self.data_iter = data_iter
        self.size = int(size)
        self.reset_internal = reset_internal
        self.cur = 0
        self.current_batch: Optional[DataBatch] = None
        self.provide_data = data_iter.provide_data
        self.provide_label = data_iter.provide_label
        if hasattr(data_iter, "default_bucket_key"):
            self.default_bucket_key = data_iter.default_bucket_key

    def reset(self) -> None:
        self.cur = 0
        if self.reset_internal:
            self.data_iter.reset()

    def iter_next(self) -> bool:
        if self.cur == self.size:
            return False
        try:
            self.current_batch = self.data_iter.next()
        except StopIteration:
            self.data_iter.reset()
            self.current_batch = self.data_iter.next()
        self.cur += 1
        return True



Rename = Union[None, dict, Sequence[dict]]


def _renamed(descs: list, rename: Optional[dict]) -> list:
    if not rename:
        return list(descs)
    return [DataDesc(rename.get(d[0], d[0]), d[1], getattr(d, "dtype", "float32"),
                     getattr(d, "layout", "NCHW")) for d in descs]


def _next_or_none(it: DataIter) -> Optional[DataBatch]:
    try:
        return it.next()
    except StopIteration:
        return None


class PrefetchingIter(_Wrapper):
    """Batches of ``iters`` (one iterator or a list) joined, each read one batch ahead on a
    thread of its own. An epoch ends when any inner iterator ends."""

    def __init__(self, iters: Union[DataIter, list], rename_data: Rename = None,
                 rename_label: Rename = None) -> None:
        self.iters = list(iters) if isinstance(iters, (list, tuple)) else [iters]
        if not self.iters:
            raise DataError("PrefetchingIter: no iterators given")
        super().__init__(self.iters[0].batch_size)
        n = len(self.iters)
        for what, rename in (("rename_data", rename_data), ("rename_label", rename_label)):
            if rename is not None and len(self._per_iter(rename)) != n:
                raise DataError(f"PrefetchingIter: {what} needs one dict per iterator ({n})")
        self._rename = (self._per_iter(rename_data), self._per_iter(rename_label))
        self.provide_data = [d for it, r in zip(self.iters, self._rename[0])
                             for d in _renamed(it.provide_data, r)]
        self.provide_label = [d for it, r in zip(self.iters, self._rename[1])
                              for d in _renamed(it.provide_label, r)]
        self._pool = ThreadPoolExecutor(max_workers=n, thread_name_prefix="prefetch")
        self._pending: list[Future] = []
        self.current_batch: Optional[DataBatch] = None
        self._prefetch()

    def _per_iter(self, rename: Rename) -> list:
        if rename is None:
            return [None] * len(self.iters)
        return [rename] if isinstance(rename, dict) else list(rename)

    def _prefetch(self) -> None:
        self._pending = [self._pool.submit(_next_or_none, it) for it in self.iters]

    def reset(self) -> None:
        for f in self._pending:  # let the reads in flight finish before rewinding
            f.result()
        for it in self.iters:
            it.reset()
        self._prefetch()

    def iter_next(self) -> bool:
        batches = [f.result() for f in self._pending]  # re-raises a reader's error here
        if any(b is None for b in batches):
            self._pending = [_done(None) for _ in self.iters]
            return False
        first = batches[0]
        self.current_batch = DataBatch(
            [d for b in batches for d in b.data],
            [lb for b in batches for lb in (b.label or [])], first.pad, first.index,
            provide_data=self.provide_data, provide_label=self.provide_label)
        self._prefetch()
        return True

    def __del__(self) -> None:
        pool = getattr(self, "_pool", None)
        if pool is not None:
            pool.shutdown(wait=False)


def _done(value: Any) -> Future:
    f: Future = Future()
    f.set_result(value)
    return f
