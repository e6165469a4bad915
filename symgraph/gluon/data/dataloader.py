"""``DataLoader``: batches of a Dataset as NDArrays, optionally made by worker processes.

Workers (``num_workers > 0``) are forked processes, each holding the dataset; a worker builds a
whole batch as host (numpy) arrays and sends it back through a pipe, and the main process wraps
it as NDArrays. ``prefetch`` batches (default ``2 * num_workers``) are in flight at once and
come back in order. ``thread_pool=True`` uses threads instead of processes. A dead worker or a
worker's exception is reported at once (``worker_pool``).
"""
from __future__ import annotations

from typing import Any, Callable, Iterator, Optional

import numpy as np

from ...runtime import ndarray as nd
from ...core.base import AttrError
from .sampler import BatchSampler, RandomSampler, SequentialSampler
from .worker_pool import Pool, stack_host


def _to_nd(data: Any) -> Any:
    """numpy arrays (also nested) as CPU NDArrays of the same dtype."""
    if isinstance(data, np.ndarray):
        return nd.array(data, dtype=data.dtype)
    if isinstance(data, (list, tuple)):
        return type(data)(_to_nd(d) for d in data)
    return data


def default_batchify_fn(data: list) -> Any:
    """Stack samples into NDArrays (MXNet's default: NDArrays stacked, numbers and numpy
    arrays as an NDArray of their numpy dtype; tuples element-wise).

    Examples
    --------
    >>> sg.gluon.data.default_batchify_fn([sg.nd.array([1, 2]), sg.nd.array([3, 4])])
    [[1. 2.]
     [3. 4.]]
    <NDArray 2x2 @cpu(0)>
    """
    return _to_nd(stack_host(data))


def _length(obj: Any) -> str:
    try:
        return str(len(obj))
    except (TypeError, NotImplementedError):
        return "?"


def _describe(dataset: Any) -> str:
    """``ArrayDataset of 100 samples`` (a repr must not fail on user datasets)."""
    return f"{type(dataset).__name__} of {_length(dataset)} samples"


class DataLoader:
    """MXNet's ``gluon.data.DataLoader(dataset, batch_size, shuffle, sampler, last_batch,
    batch_sampler, batchify_fn, num_workers, pin_memory, pin_device_id, prefetch,
    thread_pool, timeout, auto_reload)``; ``auto_reload=True`` starts the workers at
    construction rather than at the first epoch.

    Examples
    --------
    >>> ds = sg.gluon.data.ArrayDataset(sg.nd.ones((3, 2)), sg.nd.array([0, 1, 0]))
    >>> for x, y in sg.gluon.data.DataLoader(ds, batch_size=2):
    ...     print(x.shape, y.shape)
    (2, 2) (2,)
    (1, 2) (1,)
    """

    def __init__(self, dataset: Any, batch_size: Optional[int] = None, shuffle: bool = False,
                 sampler: Any = None, last_batch: Optional[str] = None,
                 batch_sampler: Any = None, batchify_fn: Optional[Callable] = None,
                 num_workers: int = 0, pin_memory: bool = False, pin_device_id: int = 0,
                 prefetch: Optional[int] = None, thread_pool: bool = False,
                 timeout: int = 120, auto_reload: bool = False) -> None:
        self._dataset = dataset
        if batch_sampler is None:
            if batch_size is None:
                raise AttrError("DataLoader: batch_size must be specified unless "
                                "batch_sampler is specified")
            if sampler is None:
                sampler = RandomSampler(len(dataset)) if shuffle else \
                    SequentialSampler(len(dataset))
            elif shuffle:
                raise AttrError("DataLoader: shuffle must not be specified if sampler is")
            batch_sampler = BatchSampler(sampler, batch_size, last_batch or "keep")
        elif batch_size is not None or shuffle or sampler is not None or last_batch:
            raise AttrError("DataLoader: batch_size, shuffle, sampler and last_batch must "
                            "not be specified if batch_sampler is specified")
        if not isinstance(num_workers, int) or num_workers < 0:
            raise AttrError(f"DataLoader: num_workers must be a non-negative int, got "
                            f"{num_workers!r}")
        self._batch_sampler = batch_sampler
        self._batchify_fn = batchify_fn
        self._num_workers = num_workers
        self._prefetch = max(0, int(prefetch) if prefetch is not None else 2 * num_workers)
        self._thread_pool, self._timeout = thread_pool, timeout
        self._pool: Any = None
        if auto_reload and num_workers:  # (MXNet also starts its workers then)
            self._pool = self._new_pool()

    def __len__(self) -> int:
        return len(self._batch_sampler)

    def __repr__(self) -> str:
        bs = self._batch_sampler
        size = getattr(bs, "_batch_size", None)
        batching = (f"batch_size {size}, last_batch={bs._last_batch!r}, "
                    f"{type(bs._sampler).__name__}" if size is not None
                    else f"batch_sampler {type(bs).__name__}")
        workers = f"{self._num_workers} {'threads' if self._thread_pool else 'workers'}" \
            if self._num_workers else "no workers"
        return (f"<DataLoader: {_length(self)} batches of {_describe(self._dataset)}; "
                f"{batching}; {workers}>")

    def _batchify(self, samples: list) -> Any:
        if self._batchify_fn is None:
            return default_batchify_fn(samples)
        return self._batchify_fn(samples)

    def __iter__(self) -> Iterator[Any]:
        if self._num_workers == 0:
            for batch in self._batch_sampler:
                yield self._batchify([self._dataset[i] for i in batch])
            return
        yield from self._iter_workers()

    def _new_pool(self) -> Pool:
        return Pool(self._dataset, self._batchify_fn, self._num_workers, self._thread_pool)

    def _iter_workers(self) -> Iterator[Any]:
        if self._pool is None:
            self._pool = self._new_pool()
        pending: list = []
        batches = iter(self._batch_sampler)
        for _ in range(max(1, self._prefetch)):
            nxt = next(batches, None)
            if nxt is None:
                break
            pending.append(self._pool.submit(nxt))
        while pending:
            result = self._pool.wait(pending.pop(0), self._timeout)
            nxt = next(batches, None)
            if nxt is not None:
                pending.append(self._pool.submit(nxt))
            yield _to_nd(result)

    def __del__(self) -> None:
        if getattr(self, "_pool", None) is not None:
            self._pool.terminate()
