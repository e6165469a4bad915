"""Datasets (MXNet 1.x ``gluon.data``): ``Dataset`` with ``transform``/``transform_first``,
``SimpleDataset`` and ``ArrayDataset``."""
from __future__ import annotations

from typing import Any, Callable, Iterable, Optional, Sequence

from ...core.base import DataError


class Dataset:
    """Anything with ``__getitem__`` and ``__len__``; subclasses override both.

    Examples
    --------
    >>> class Squares(sg.gluon.data.Dataset):
    ...     def __getitem__(self, i):
    ...         return i * i
    ...     def __len__(self):
    ...         return 4
    >>> ds = Squares()
    >>> [ds[i] for i in range(len(ds))]
    [0, 1, 4, 9]
    >>> ds.transform(lambda x: x + 1)[3]
    10
    """

    def __getitem__(self, idx: int) -> Any:
        raise NotImplementedError

    def __len__(self) -> int:
        raise NotImplementedError

    def __repr__(self) -> str:
        try:
            size = f"{len(self)} samples"
        except (TypeError, NotImplementedError):
            size = "unknown length"
        return f"<{type(self).__name__}: {size}>"

    def transform(self, fn: Callable, lazy: bool = True) -> "Dataset":
        """A dataset whose samples are ``fn(*sample)`` (``fn(sample)`` for single items)."""
        out = _LazyTransformDataset(self, fn)
        return out if lazy else SimpleDataset([out[i] for i in range(len(out))])

    def transform_first(self, fn: Callable, lazy: bool = True) -> "Dataset":
        """Apply ``fn`` to the first element of each sample only (the data, not the label)."""
        return self.transform(_TransformFirst(fn), lazy)

    def filter(self, fn: Callable[[Any], bool]) -> "Dataset":
        """The samples for which ``fn(sample)`` is true."""
        return SimpleDataset([s for s in (self[i] for i in range(len(self))) if fn(s)])

    def take(self, count: Optional[int]) -> "Dataset":
        """The first ``count`` samples (all of them when ``count`` is None or larger)."""
        count = len(self) if count is None else min(count, len(self))
        return _SampledDataset(self, range(count))

    def shard(self, num_shards: int, index: int) -> "Dataset":
        """The ``index``-th of ``num_shards`` contiguous parts, the first ``len % num_shards``
        parts one sample longer (MXNet's split for distributed workers).

        Example: ``SimpleDataset(list(range(9))).shard(4, 0)`` holds 0, 1, 2."""
        if num_shards < 1 or not 0 <= index < num_shards:
            raise DataError(f"shard: index {index} of {num_shards} shards is out of range "
                            f"(0 <= index < num_shards, num_shards >= 1)")
        size, rest = divmod(len(self), num_shards)
        start = size * index + min(index, rest)
        return _SampledDataset(self, range(start, start + size + (index < rest)))

    def sample(self, sampler: Iterable[int]) -> "Dataset":
        """The samples at the indices ``sampler`` yields, in that order."""
        return _SampledDataset(self, list(sampler))


class _SampledDataset(Dataset):
    """A view of ``data`` at ``indices``."""

    def __init__(self, data: Dataset, indices: Sequence[int]) -> None:
        self._data, self._indices = data, indices

    def __len__(self) -> int:
        return len(self._indices)

    def __getitem__(self, idx: int) -> Any:
        return self._data[self._indices[idx]]


class SimpleDataset(Dataset):
    """Wraps a list (or anything indexable with a length).

    Examples
    --------
    >>> ds = sg.gluon.data.SimpleDataset([1, 2, 3])
    >>> len(ds), ds[1], ds.transform(lambda x: x * 10)[1]
    (3, 2, 20)
    """

    def __init__(self, data: Any) -> None:
        self._data = data

    def __len__(self) -> int:
        return len(self._data)

    def __getitem__(self, idx: int) -> Any:
        return self._data[idx]


class _LazyTransformDataset(Dataset):
    def __init__(self, data: Dataset, fn: Callable) -> None:
        self._data, self._fn = data, fn

    def __len__(self) -> int:
        return len(self._data)

    def __getitem__(self, idx: int) -> Any:
        item = self._data[idx]
        return self._fn(*item) if isinstance(item, tuple) else self._fn(item)


class _TransformFirst:
    """Picklable (for worker processes) ``fn`` on the first element."""

    def __init__(self, fn: Callable) -> None:
        self._fn = fn

    def __call__(self, x: Any, *args: Any) -> Any:
        return (self._fn(x),) + args if args else self._fn(x)


class ArrayDataset(Dataset):
    """Sample ``i`` is ``(a[i], b[i], ...)`` of equally long arrays (one array: ``a[i]``).

    Examples
    --------
    >>> ds = sg.gluon.data.ArrayDataset([10, 20, 30], [0, 1, 0])  # samples and labels
    >>> len(ds), ds[1]
    (3, (20, 1))
    """

    def __init__(self, *args: Any) -> None:
        if not args:
            raise DataError("ArrayDataset needs at least 1 array")
        self._length = len(args[0])
        self._data = []
        for i, data in enumerate(args):
            if len(data) != self._length:
                raise DataError(f"ArrayDataset: all arrays must have the same length; "
                                f"array 0 has length {self._length} while array {i} has "
                                f"{len(data)}")
            if hasattr(data, "asnumpy"):
                data = data.asnumpy()  # sample access by numpy indexing: no graph per item
            self._data.append(data)

    def __getitem__(self, idx: int) -> Any:
        if len(self._data) == 1:
            return self._data[0][idx]
        return tuple(d[idx] for d in self._data)

    def __len__(self) -> int:
        return self._length

    def __repr__(self) -> str:
        parts = [f"{tuple(d.shape)} {d.dtype}" if hasattr(d, "shape") and hasattr(d, "dtype")
                 else type(d).__name__ for d in self._data]
        return f"<ArrayDataset: {self._length} samples; {', '.join(parts)}>"
