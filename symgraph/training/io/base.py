"""MXNet 1.x's data iterator protocol and its in-memory iterators (``NDArrayIter``,
``MNISTIter``, ``DataBatch``, ``DataDesc``).

An iterator yields :class:`DataBatch` objects whose ``data``/``label`` are lists of CPU NDArrays
of a fixed batch shape; ``provide_data``/``provide_label`` describe them as :class:`DataDesc`.
"""
from __future__ import annotations

from collections import OrderedDict, namedtuple
from typing import Any, Iterator, Optional, Sequence, Union

import numpy as np

from ...runtime import random as _random
from ...core.base import DataError
from ...runtime.ndarray import NDArray, array

__all__ = ["DataDesc", "DataBatch", "DataIter", "NDArrayIter", "MNISTIter"]

LAST_BATCH_HANDLES = ("pad", "discard", "roll_over")


class DataDesc(namedtuple("DataDesc", ["name", "shape"])):
    """``(name, shape)`` of one input, with ``dtype`` and ``layout`` as attributes (MXNet)."""

    def __new__(cls, name: str, shape: Sequence[int], dtype: Any = np.float32,
                layout: str = "NCHW") -> "DataDesc":
        ret = super().__new__(cls, name, tuple(shape))
        ret.dtype = np.dtype(dtype)
        ret.layout = layout
        return ret

    def __repr__(self) -> str:
        return f"DataDesc[{self.name},{self.shape},{self.dtype},{self.layout}]"


class DataBatch:
    """One batch: ``data`` and ``label`` lists of NDArrays; ``pad`` = padded samples at the end."""

    def __init__(self, data: list, label: Optional[list] = None, pad: int = 0,
                 index: Optional[np.ndarray] = None, bucket_key: Any = None,
                 provide_data: Optional[list] = None,
                 provide_label: Optional[list] = None) -> None:
        self.data = data
        self.bucket_key = bucket_key  # which bucket of a BucketingModule runs it
        self.label = label
        self.pad = pad
        self.index = index
        self.provide_data = provide_data
        self.provide_label = provide_label

    def __repr__(self) -> str:
        shapes = [d.shape for d in self.data]
        lshapes = None if self.label is None else [lb.shape for lb in self.label]
        return f"DataBatch: data shapes: {shapes} label shapes: {lshapes}"


class DataIter:
    """Base class: iterate with ``for batch in it``; ``reset()`` starts a new epoch."""

    def __init__(self, batch_size: int = 0) -> None:
        self.batch_size = batch_size

    def __iter__(self) -> Iterator[DataBatch]:
        return self

    def __next__(self) -> DataBatch:
        return self.next()

    def next(self) -> DataBatch:
        """The next batch, built from :meth:`iter_next` and the ``get*`` methods (MXNet's
        protocol: a subclass implements either ``next`` or those)."""
        if not self.iter_next():
            raise StopIteration
        return DataBatch(self.getdata(), self.getlabel(), self.getpad(), self.getindex())

    def iter_next(self) -> bool:
        """Move to the next batch; False at the end of the epoch."""
        raise NotImplementedError(f"{type(self).__name__} implements neither next() nor "
                                  f"iter_next()")

    def getdata(self) -> Any:
        """The data of the current batch."""
        return None

    def getlabel(self) -> Any:
        """The labels of the current batch."""
        return None

    def getindex(self) -> Any:
        """The sample indices of the current batch (None when unknown)."""
        return None

    def getpad(self) -> int:
        """How many samples at the end of the current batch are padding."""
        return 0

    def reset(self) -> None:
        """Start a new epoch (MXNet's base class: nothing to rewind)."""

    def __repr__(self) -> str:
        try:
            descs = list(self.provide_data) + list(self.provide_label)
        except NotImplementedError:  # a user's iterator that does not describe its batches
            descs = []
        # DataDesc, or MXNet's plain (name, shape) pairs
        inputs = ", ".join(f"{d[0]} {tuple(d[1])} {np.dtype(getattr(d, 'dtype', np.float32))}"
                           for d in descs)
        num = getattr(self, "num_data", None)
        size = f"{num} samples, " if num is not None else ""
        opts = [f"{k}={getattr(self, k)!r}" for k in ("shuffle", "last_batch_handle")
                if hasattr(self, k)]
        return (f"<{type(self).__name__}: {size}batch_size {self.batch_size}"
                f"{', ' + ', '.join(opts) if opts else ''}{'; ' + inputs if inputs else ''}>")

    # MXNet's iterators often assign these in __init__; the base class stores what they set
    @property
    def provide_data(self) -> list:
        if "_provide_data" not in self.__dict__:
            raise NotImplementedError(f"{type(self).__name__} does not describe its data")
        return self.__dict__["_provide_data"]

    @provide_data.setter
    def provide_data(self, value: list) -> None:
        self.__dict__["_provide_data"] = value

    @property
    def provide_label(self) -> list:
        return self.__dict__.get("_provide_label", [])

    @provide_label.setter
    def provide_label(self, value: list) -> None:
        self.__dict__["_provide_label"] = value


ArrayLike = Union[np.ndarray, NDArray]


def _named(value: Any, default: str) -> "OrderedDict[str, np.ndarray]":
    """Normalise data/label given as an array, a list of arrays or a dict to ``{name: array}``."""
    if value is None:
        return OrderedDict()
    if isinstance(value, dict):
        items = list(value.items())
    elif isinstance(value, (list, tuple)):
        items = [(default if i == 0 else f"_{i}_{default}", v) for i, v in enumerate(value)]
    else:
        items = [(default, value)]
    out = OrderedDict()
    for k, v in items:
        # MXNet: an NDArray keeps its dtype, anything else becomes float32 (``mx.nd.array``'s
        # default), so integer labels feed SoftmaxOutput as they do in MXNet
        out[k] = v.asnumpy() if isinstance(v, NDArray) else np.asarray(v, dtype=np.float32)
    return out


class NDArrayIter(DataIter):
    """Iterate over in-memory arrays in batches (MXNet's ``mx.io.NDArrayIter``).

    ``last_batch_handle``: ``'pad'`` fills the last batch from the start of the data (``pad``
    says how many), ``'discard'`` drops it, ``'roll_over'`` carries the leftover samples into the
    first batch of the next epoch. With ``shuffle`` the order is redrawn (from ``sg.random``) at
    construction and every ``reset()``. ``num_parts``/``part_index`` keep one shard for one
    worker of a data-parallel job (as MXNet's ``MNISTIter`` and ``ImageIter``; see
    :meth:`_keep_part`).
    """

    def __init__(self, data: Any, label: Any = None, batch_size: int = 1, shuffle: bool = False,
                 last_batch_handle: str = "pad", data_name: str = "data",
                 label_name: str = "softmax_label", num_parts: int = 1,
                 part_index: int = 0, layout: str = "NCHW") -> None:
        super().__init__(batch_size)
        self.layout = layout  # of the DataDescs (the batch axis is the first, as MXNet's)
        if last_batch_handle not in LAST_BATCH_HANDLES:
            raise DataError(f"NDArrayIter: last_batch_handle={last_batch_handle!r}, expected "
                            f"one of {LAST_BATCH_HANDLES}")
        if int(batch_size) <= 0:
            raise DataError(f"NDArrayIter: batch_size must be positive, got {batch_size}")
        self.data = _named(data, data_name)
        self.label = _named(label, label_name)
        if not self.data:
            raise DataError("NDArrayIter: no data given")
        sizes = {k: len(v) for k, v in list(self.data.items()) + list(self.label.items())}
        if len(set(sizes.values())) != 1:
            raise DataError(f"NDArrayIter: data and label have different numbers of samples "
                            f"{sizes}")
        self.num_data = next(iter(sizes.values()))
        if (num_parts, part_index) != (1, 0):
            self._keep_part(num_parts, part_index)
        if last_batch_handle == "discard" and self.num_data < batch_size:
            raise DataError(f"NDArrayIter: {self.num_data} samples, fewer than batch_size "
                            f"{batch_size}, and last_batch_handle='discard'")
        self.shuffle = shuffle
        self.last_batch_handle = last_batch_handle
        self._carry = np.zeros(0, np.int64)
        self._order = np.arange(self.num_data)
        self._current: Optional[DataBatch] = None
        self.reset()

    def _keep_part(self, num_parts: int, part_index: int) -> None:
        """Keep part ``part_index`` of ``num_parts`` equal contiguous parts (MXNet's ImageIter
        rule: ``N // num_parts`` samples each, the remainder dropped, so every worker of a
        synchronous job runs the same number of batches)."""
        if not (isinstance(num_parts, int) and num_parts >= 1) or \
                not (isinstance(part_index, int) and 0 <= part_index < num_parts):
            raise DataError(f"{type(self).__name__}: part_index={part_index!r} must be in "
                            f"[0, num_parts={num_parts!r})")
        size = self.num_data // num_parts
        if size == 0:
            raise DataError(f"{type(self).__name__}: {self.num_data} samples cannot be split "
                            f"into num_parts={num_parts}")
        part = slice(part_index * size, (part_index + 1) * size)
        for arrays in (self.data, self.label):
            for k in arrays:
                arrays[k] = arrays[k][part]
        self.num_data = size

    @property
    def idx(self) -> np.ndarray:
        """The sample order of this epoch (MXNet's ``idx``; shuffled with ``shuffle``)."""
        return self._order

    @property
    def provide_data(self) -> list:
        return [DataDesc(k, (self.batch_size,) + v.shape[1:], v.dtype, self.layout)
                for k, v in self.data.items()]

    @property
    def provide_label(self) -> list:
        return [DataDesc(k, (self.batch_size,) + v.shape[1:], v.dtype, self.layout)
                for k, v in self.label.items()]

    def iter_next(self) -> bool:
        try:
            self.next()  # (sets the current batch that the get* methods read)
        except StopIteration:
            self._current = None
            return False
        return True

    def getdata(self) -> Optional[list]:
        return None if self._current is None else self._current.data

    def getlabel(self) -> Optional[list]:
        return None if self._current is None else self._current.label

    def getindex(self) -> Optional[np.ndarray]:
        return None if self._current is None else self._current.index

    def reset(self) -> None:
        """Start a new epoch (reshuffling if ``shuffle``)."""
        order = np.arange(self.num_data)
        if self.shuffle:
            order = _random.generator().permutation(self.num_data)
        if self.last_batch_handle == "roll_over":
            order = np.concatenate([self._carry, order])
        self._order = order
        self._cursor = 0

    def _take(self, arrays: "OrderedDict[str, np.ndarray]", idx: np.ndarray) -> list[NDArray]:
        return [array(v[idx], dtype=v.dtype) for v in arrays.values()]

    def next(self) -> DataBatch:
        n, bs, start = len(self._order), self.batch_size, self._cursor
        if start >= n:
            raise StopIteration
        pad = 0
        if start + bs <= n:
            idx = self._order[start:start + bs]
        elif self.last_batch_handle == "discard":
            raise StopIteration
        elif self.last_batch_handle == "roll_over":
            self._carry = self._order[start:]
            self._cursor = n
            raise StopIteration
        else:
            pad = start + bs - n
            idx = np.concatenate([self._order[start:], np.resize(self._order, pad)])
        if self.last_batch_handle == "roll_over" and start + bs >= n:
            self._carry = np.zeros(0, np.int64)
        self._cursor = start + bs
        self._current = DataBatch(self._take(self.data, idx), self._take(self.label, idx), pad,
                                  idx, provide_data=self.provide_data,
                                  provide_label=self.provide_label)
        return self._current

    def getpad(self) -> int:
        return max(0, self._cursor - len(self._order))


class MNISTIter(NDArrayIter):
    """MNIST from IDX files (MXNet's ``mx.io.MNISTIter``): images scaled to [0, 1], shape
    ``(batch, 1, 28, 28)``, or ``(batch, 784)`` with ``flat=True``."""

    def __init__(self, image: str, label: str, batch_size: int = 128, shuffle: bool = True,
                 flat: bool = False, seed: Optional[int] = None,
                 last_batch_handle: str = "pad", num_parts: int = 1,
                 part_index: int = 0) -> None:
        from ..datasets.mnist import read_idx
        images = read_idx(image, 3)
        labels = read_idx(label, 1)
        if len(images) != len(labels):
            raise DataError(f"MNISTIter: {len(images)} images in {image} but {len(labels)} "
                            f"labels in {label}")
        shape = (-1, 784) if flat else (-1, 1, 28, 28)
        data = images.reshape(shape).astype(np.float32) / np.float32(255.0)
        if seed is not None:
            _random.seed(seed)
        super().__init__(data, labels.astype(np.float32), batch_size, shuffle, last_batch_handle,
                         num_parts=num_parts, part_index=part_index)
