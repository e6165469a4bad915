"""Samplers (MXNet 1.x ``gluon.data.sampler``): sequential, random (from ``sg.random``'s
generator, so ``sg.random.seed`` makes shuffling reproducible), filtered, at intervals
(MXNet's ``contrib.data.IntervalSampler``) and batches with MXNet's ``last_batch`` rules."""
from __future__ import annotations

from typing import Any, Callable, Iterable, Iterator

import numpy as np

from ...runtime import random as _random
from ...core.base import AttrError

LAST_BATCH = ("keep", "discard", "rollover")


class Sampler:
    """Yields sample indices.

    Examples
    --------
    >>> class Evens(sg.gluon.data.Sampler):
    ...     def __iter__(self):
    ...         return iter([0, 2, 4])
    ...     def __len__(self):
    ...         return 3
    >>> list(Evens())
    [0, 2, 4]
    """

    def __iter__(self) -> Iterator:
        raise NotImplementedError

    def __len__(self) -> int:
        raise NotImplementedError


class SequentialSampler(Sampler):
    """``start, start+1, ..., start+length-1``.

    Examples
    --------
    >>> list(sg.gluon.data.SequentialSampler(3))
    [0, 1, 2]
    """

    def __init__(self, length: int, start: int = 0) -> None:
        self._length, self._start = length, start

    def __iter__(self) -> Iterator[int]:
        return iter(range(self._start, self._start + self._length))

    def __len__(self) -> int:
        return self._length


class RandomSampler(Sampler):
    """A fresh permutation of ``range(length)`` each epoch.

    Examples
    --------
    >>> sorted(sg.gluon.data.RandomSampler(4))  # each index once, in a random order
    [0, 1, 2, 3]
    """

    def __init__(self, length: int) -> None:
        self._length = length

    def __iter__(self) -> Iterator[int]:
        return iter(_random.generator().permutation(self._length).tolist())

    def __len__(self) -> int:
        return self._length


class FilterSampler(Sampler):
    """The indices of the samples of ``dataset`` for which ``fn(sample)`` is true (decided
    once, when the sampler is made).

    Example: ``list(FilterSampler(lambda x: x % 2 == 0, SimpleDataset(range(6))))`` is
    ``[0, 2, 4]``.

    Examples
    --------
    >>> list(sg.gluon.data.FilterSampler(lambda x: x % 2 == 0, [5, 6, 7, 8]))  # indices
    [1, 3]
    """

    def __init__(self, fn: Callable[[Any], bool], dataset: Iterable) -> None:
        self._fn, self._dataset = fn, dataset
        self._indices = [i for i, sample in enumerate(dataset) if fn(sample)]

    def __iter__(self) -> Iterator[int]:
        return iter(self._indices)

    def __len__(self) -> int:
        return len(self._indices)


class IntervalSampler(Sampler):
    """Every ``interval``-th index of ``range(length)``, then (``rollover``) the same
    starting from 1, 2... until every index has been given once.

    Example: ``list(IntervalSampler(7, 3))`` is ``[0, 3, 6, 1, 4, 2, 5]``;
    with ``rollover=False`` it is ``[0, 3, 6]``.

    Examples
    --------
    >>> list(sg.gluon.data.IntervalSampler(6, interval=3))
    [0, 3, 1, 4, 2, 5]
    """

    def __init__(self, length: int, interval: int, rollover: bool = True) -> None:
        if not 0 < interval <= length:
            raise AttrError(f"IntervalSampler: interval must be in [1, length={length}], "
                            f"got {interval}")
        self._length, self._interval, self._rollover = length, interval, rollover

    def __iter__(self) -> Iterator[int]:
        for start in range(self._interval if self._rollover else 1):
            yield from range(start, self._length, self._interval)

    def __len__(self) -> int:
        # (MXNet's value, also without rollover, where fewer indices are given)
        return self._length


class BatchSampler(Sampler):
    """Groups a sampler's indices into lists of ``batch_size``. The last, short batch is kept,
    discarded, or rolled over into the next epoch (``last_batch``).

    Examples
    --------
    >>> list(sg.gluon.data.BatchSampler(sg.gluon.data.SequentialSampler(5), 2, 'keep'))
    [[0, 1], [2, 3], [4]]
    """

    def __init__(self, sampler: Iterable, batch_size: int, last_batch: str = "keep") -> None:
        if last_batch not in LAST_BATCH:
            raise AttrError(f"last_batch must be one of {LAST_BATCH}, but got {last_batch!r}")
        if not isinstance(batch_size, (int, np.integer)) or batch_size <= 0:
            raise AttrError(f"batch_size must be a positive int, got {batch_size!r}")
        self._sampler, self._batch_size, self._last_batch = sampler, int(batch_size), last_batch
        self._prev: list = []

    def __iter__(self) -> Iterator[list]:
        batch, self._prev = self._prev, []
        for i in self._sampler:
            batch.append(i)
            if len(batch) == self._batch_size:
                yield batch
                batch = []
        if batch:
            if self._last_batch == "keep":
                yield batch
            elif self._last_batch == "rollover":
                self._prev = batch

    def __len__(self) -> int:
        n = len(self._sampler)  # type: ignore[arg-type]
        if self._last_batch == "keep":
            return (n + self._batch_size - 1) // self._batch_size
        if self._last_batch == "discard":
            return n // self._batch_size
        return (len(self._prev) + n) // self._batch_size
