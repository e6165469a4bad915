"""``sg.io.CSVIter`` and ``sg.io.LibSVMIter``: MXNet's text-file iterators.

Both read the whole file on construction (a typed DataError names the file, the line and what
is wrong) and then batch like :class:`~symgraph.training.io.NDArrayIter`: the last batch is completed
from the start of the data and ``pad`` says by how many samples (with ``round_batch`` the
next epoch then reads only the samples after those; ``prefetch_buffer`` has nothing to do:
the data is in memory).
``getdata()``/``getlabel()`` return the current batch's one array, as MXNet's C++ iterators.
LibSVM data comes out dense (symgraph has no sparse storage); feature indices are zero-based.

Example::

    >>> import symgraph as sg, tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "d.csv")
    >>> _ = open(path, "w").write("1,2\\n3,4\\n")
    >>> it = sg.io.CSVIter(data_csv=path, data_shape=(2,), batch_size=2)
    >>> next(it).data[0].asnumpy().tolist()
    [[1.0, 2.0], [3.0, 4.0]]
"""
from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np

from . import base as _io
from ...core.base import DataError
from ...runtime.ndarray import NDArray, array

__all__ = ["CSVIter", "LibSVMIter"]

DTYPES = ("float32", "int32", "int64")


def _lines(path: str, who: str) -> list[str]:
    try:
        with open(path) as fh:
            return [ln.strip() for ln in fh if ln.strip()]
    except OSError as exc:
        raise DataError(f"{who}: cannot read {path!r}: {exc.strerror}") from None


def _number(text: str, dtype: np.dtype, where: str) -> Any:
    try:
        return dtype.type(float(text)) if dtype.kind == "f" else dtype.type(int(float(text)))
    except (ValueError, OverflowError):
        raise DataError(f"{where}: {text!r} is not a {dtype.name} number") from None


def read_csv(path: str, shape: Sequence[int], dtype: np.dtype, who: str) -> np.ndarray:
    """Rows of ``path`` as an array ``(rows,) + shape``; every row must hold prod(shape)
    comma-separated numbers."""
    size = int(np.prod(shape))
    rows = []
    for n, line in enumerate(_lines(path, who), 1):
        cells = line.split(",")
        if len(cells) != size:
            raise DataError(f"{who}: {path}:{n} has {len(cells)} values, expected {size} "
                            f"(shape {tuple(shape)})")
        rows.append([_number(c, dtype, f"{who}: {path}:{n}") for c in cells])
    return np.asarray(rows, dtype).reshape((len(rows),) + tuple(shape))


def read_libsvm(path: str, shape: Sequence[int], who: str) -> tuple[np.ndarray, np.ndarray]:
    """``(labels, dense features)`` of a LibSVM file: ``label[,label...] index:value ...``
    per line, indices zero-based into the flattened ``shape``."""
    size = int(np.prod(shape))
    labels, rows = [], []
    for n, line in enumerate(_lines(path, who), 1):
        head, *pairs = line.split()
        where = f"{who}: {path}:{n}"
        labels.append([_number(x, np.dtype(np.float32), where) for x in head.split(",")])
        row = np.zeros(size, np.float32)
        for pair in pairs:
            index, sep, value = pair.partition(":")
            if not sep or not index.isdigit() or int(index) >= size:
                raise DataError(f"{where}: bad feature {pair!r}; expected index:value with "
                                f"index in [0, {size})")
            row[int(index)] = _number(value, np.dtype(np.float32), where)
        rows.append(row.reshape(shape))
    if len({len(lb) for lb in labels}) > 1:
        raise DataError(f"{who}: {path}: lines hold different numbers of labels")
    return np.asarray(labels, np.float32), np.asarray(rows, np.float32)


class _FileIter(_io.NDArrayIter):
    """An NDArrayIter over arrays read from files; getdata/getlabel give single arrays.

    With ``round_batch`` the samples that completed the last batch count as read: the next
    epoch reads only the samples after them (MXNet's C++ iterators)."""

    _offset = 0  # where the next epoch starts (round_batch)

    def __init__(self, data: np.ndarray, label: np.ndarray, batch_size: int,
                 round_batch: bool, data_name: str, label_name: str, num_parts: int = 1,
                 part_index: int = 0) -> None:
        self.round_batch = round_batch
        if label.ndim == 2 and label.shape[1] == 1:  # label_shape (1,): one label per sample
            label = label[:, 0]
        # NDArrays keep their dtype through NDArrayIter (numpy input would become float32)
        super().__init__({data_name: array(data, dtype=data.dtype)},
                         {label_name: array(label, dtype=label.dtype)}, batch_size,
                         last_batch_handle="pad",
                         num_parts=num_parts, part_index=part_index)

    def next(self) -> _io.DataBatch:
        batch = super().next()
        if self.round_batch and batch.pad:
            self._offset = (self._offset + batch.pad) % self.num_data
        return batch

    def reset(self) -> None:
        super().reset()
        self._order, self._offset = self._order[self._offset:], 0

    def getdata(self) -> Optional[NDArray]:  # type: ignore[override]
        data = super().getdata()
        return data[0] if data else None

    def getlabel(self) -> Optional[NDArray]:  # type: ignore[override]
        label = super().getlabel()
        return label[0] if label else None

    get_data = getdata  # a spelling some MXNet scripts use


class CSVIter(_FileIter):
    """Batches of the rows of a CSV file (MXNet's ``mx.io.CSVIter``). ``label_csv`` absent:
    labels are zeros of ``label_shape``. ``dtype``: float32, int32 or int64."""

    def __init__(self, data_csv: str, data_shape: Sequence[int], label_csv: Optional[str] = None,
                 label_shape: Sequence[int] = (1,), batch_size: int = 1,
                 round_batch: bool = True, dtype: str = "float32", data_name: str = "data",
                 label_name: str = "softmax_label", prefetch_buffer: int = 4) -> None:
        if str(dtype) not in DTYPES:
            raise DataError(f"CSVIter: dtype={dtype!r}, expected one of {DTYPES}")
        dt = np.dtype(str(dtype))
        data = read_csv(data_csv, data_shape, dt, "CSVIter")
        label = read_csv(label_csv, label_shape, dt, "CSVIter") if label_csv else \
            np.zeros((len(data),) + tuple(label_shape), dt)
        if len(label) != len(data):
            raise DataError(f"CSVIter: {data_csv} has {len(data)} rows but {label_csv} has "
                            f"{len(label)}")
        super().__init__(data, label, batch_size, round_batch, data_name, label_name)


class LibSVMIter(_FileIter):
    """Batches of a LibSVM file as dense float32 (MXNet's ``mx.io.LibSVMIter``, which gives
    CSR). Labels: the first column, or the features of ``label_libsvm`` (``label_shape``)."""

    def __init__(self, data_libsvm: str, data_shape: Sequence[int],
                 label_libsvm: Optional[str] = None, label_shape: Sequence[int] = (1,),
                 batch_size: int = 1, round_batch: bool = True, num_parts: int = 1,
                 part_index: int = 0, data_name: str = "data",
                 label_name: str = "softmax_label", prefetch_buffer: int = 4) -> None:
        head, data = read_libsvm(data_libsvm, data_shape, "LibSVMIter")
        if label_libsvm:
            label = read_libsvm(label_libsvm, label_shape, "LibSVMIter")[1]
        elif int(np.prod(label_shape)) == head.shape[1]:
            label = head.reshape((len(head),) + tuple(label_shape))
        else:
            raise DataError(f"LibSVMIter: {data_libsvm} has {head.shape[1]} label(s) per line, "
                            f"label_shape {tuple(label_shape)} needs {int(np.prod(label_shape))}")
        if len(label) != len(data):
            raise DataError(f"LibSVMIter: {data_libsvm} has {len(data)} lines but "
                            f"{label_libsvm} has {len(label)}")
        super().__init__(data, label, batch_size, round_batch, data_name, label_name,
                         num_parts, part_index)
