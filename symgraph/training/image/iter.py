"""``sg.image.ImageIter``: MXNet's Python image iterator over a ``.rec`` file or an image list,
with the augmenters of :func:`~symgraph.training.image.CreateAugmenter`.

Batches are ``(batch, 3, H, W)`` float32 data and ``(batch,)`` (or ``(batch, label_width)``)
labels; ``last_batch_handle`` is ``'pad'``, ``'discard'`` or ``'roll_over'`` as in MXNet.
"""
from __future__ import annotations

import os
from typing import Any, Optional, Sequence

import numpy as np

from ...runtime import random as _random
from ...core.base import DataError
from ..io.base import DataBatch, DataDesc, DataIter, LAST_BATCH_HANDLES
from ...runtime.ndarray import array
from .. import recordio
from .augment import CreateAugmenter
from .image import host, imdecode, read_file

__all__ = ["ImageIter", "read_image_list", "DescribedIter"]

LABEL_DTYPES = ("int32", "float32", "int64", "float64")


def read_image_list(path: str) -> tuple[dict, list]:
    """``{key: (labels, relative path)}`` and the keys in file order, from a ``.lst`` file
    (``index<TAB>label...<TAB>path`` per line, as im2rec writes)."""
    items, keys = {}, []
    with open(path) as fin:
        for lineno, line in enumerate(fin, 1):
            fields = [f.strip() for f in line.strip().split("\t")]
            if fields == [""]:
                continue
            try:
                if len(fields) < 3:
                    raise ValueError
                key, labels = int(fields[0]), np.array(fields[1:-1], dtype=np.float64)
            except ValueError:
                raise DataError(f"{path}: line {lineno}: {line.strip()!r} is not "
                                f"'index<TAB>label...<TAB>path'") from None
            items[key] = (labels, fields[-1])
            keys.append(key)
    return items, keys


class DescribedIter(DataIter):
    """A DataIter whose batch descriptions are fixed at construction (``self._descs``)."""

    _descs: tuple[list, list]

    @property
    def provide_data(self) -> list:
        return self._descs[0]

    @property
    def provide_label(self) -> list:
        return self._descs[1]


class ImageIter(DescribedIter):
    """Iterate over images from ``path_imgrec`` (with ``path_imgidx`` for shuffling and
    parts), ``path_imglist`` + ``path_root``, or ``imglist`` ([label(s)..., path] items).

    Example::

        >>> it = sg.image.ImageIter(4, (3, 32, 32), path_imgrec='data.rec')   # doctest: +SKIP
        >>> next(it).data[0].shape                                           # doctest: +SKIP
        (4, 3, 32, 32)
    """

    def __init__(self, batch_size: int, data_shape: Sequence[int], label_width: int = 1,
                 path_imgrec: Optional[str] = None, path_imglist: Optional[str] = None,
                 path_root: Optional[str] = None, path_imgidx: Optional[str] = None,
                 shuffle: bool = False, part_index: int = 0, num_parts: int = 1,
                 aug_list: Optional[list] = None, imglist: Optional[list] = None,
                 data_name: str = "data", label_name: str = "softmax_label",
                 dtype: str = "float32", last_batch_handle: str = "pad", **kwargs: Any) -> None:
        super().__init__(batch_size)
        if not (path_imgrec or path_imglist or isinstance(imglist, list)):
            raise DataError("ImageIter: give path_imgrec, path_imglist or imglist")
        if dtype not in LABEL_DTYPES or last_batch_handle not in LAST_BATCH_HANDLES:
            raise DataError(f"ImageIter: dtype={dtype!r} (one of {LABEL_DTYPES}), "
                            f"last_batch_handle={last_batch_handle!r} (one of "
                            f"{LAST_BATCH_HANDLES})")
        data_shape = tuple(data_shape)
        if len(data_shape) != 3 or data_shape[0] != 3:
            raise DataError(f"ImageIter: data_shape must be (3, H, W), got {data_shape}")
        self.imgrec: Any = None
        self.imgidx: Optional[list] = None
        if path_imgrec and path_imgidx:
            self.imgrec = recordio.MXIndexedRecordIO(path_imgidx, path_imgrec, "r")
            self.imgidx = list(self.imgrec.keys)
        elif path_imgrec:
            self.imgrec = recordio.MXRecordIO(path_imgrec, "r")
        self.imglist, keys = self._labels(path_imglist, imglist, dtype)
        self.path_root = path_root or ""
        self.data_shape, self.label_width, self.dtype = data_shape, label_width, dtype
        self.shuffle, self.last_batch_handle = shuffle, last_batch_handle
        label_shape = (batch_size, label_width) if label_width > 1 else (batch_size,)
        self._descs = ([DataDesc(data_name, (batch_size,) + data_shape)],
                       [DataDesc(label_name, label_shape)])
        if self.imgrec is None:
            self.seq: Optional[list] = keys
        elif shuffle or num_parts > 1 or path_imgidx:
            if self.imgidx is None:
                raise DataError("ImageIter: shuffle and num_parts over a .rec file need "
                                "path_imgidx")
            self.seq = self.imgidx
        else:
            self.seq = None
        if num_parts > 1:
            if not 0 <= part_index < num_parts:
                raise DataError(f"ImageIter: part_index={part_index} not in [0, {num_parts})")
            size = len(self.seq) // num_parts
            self.seq = self.seq[part_index * size:(part_index + 1) * size]
        self.auglist = CreateAugmenter(data_shape, **kwargs) if aug_list is None else aug_list
        self.num_image = len(self.seq) if self.seq is not None else None
        self.cur, self._allow_read = 0, True
        self._cache: Optional[tuple] = None
        self.reset()

    @staticmethod
    def _labels(path: Optional[str], items: Optional[list], dtype: str) -> tuple[Any, list]:
        if path:
            table, keys = read_image_list(path)
            return {k: (v[0].astype(dtype), v[1]) for k, v in table.items()}, keys
        if isinstance(items, list):
            table = {}
            for i, item in enumerate(items, 1):
                label = item[:-1] if len(item) > 2 else item[0]
                table[str(i)] = (np.atleast_1d(np.asarray(label, dtype=dtype)), item[-1])
            return table, list(table)
        return None, []

    def reset(self) -> None:
        """Start a new epoch (rolled-over samples, if any, stay at the front)."""
        if self.seq is not None and self.shuffle:
            self.seq = [self.seq[i] for i in _random.generator().permutation(len(self.seq))]
        if self.last_batch_handle != "roll_over" or self._cache is None:
            if self.imgrec is not None:
                self.imgrec.reset()
            self.cur, self._allow_read = 0, True

    def hard_reset(self) -> None:
        """Start a new epoch, dropping rolled-over samples."""
        self._cache = None
        self.reset()

    def next_sample(self) -> tuple[Any, bytes]:
        """The next ``(label, encoded image)``; StopIteration at the end of the epoch."""
        if not self._allow_read:
            raise StopIteration
        if self.seq is None:
            s = self.imgrec.read()
            if s is None:
                if self.last_batch_handle != "discard":
                    self.imgrec.reset()
                raise StopIteration
            header, img = recordio.unpack(s)
            return header.label, img
        if self.cur >= self.num_image:
            if self.last_batch_handle != "discard":
                self.cur = 0
            raise StopIteration
        idx = self.seq[self.cur]
        self.cur += 1
        if self.imgrec is not None:
            header, img = recordio.unpack(self.imgrec.read_idx(idx))
            return (header.label if self.imglist is None else self.imglist[idx][0]), img
        label, fname = self.imglist[idx]
        return label, self.read_image(fname)

    def read_image(self, fname: str) -> bytes:
        """The encoded bytes of ``fname`` under ``path_root``."""
        return read_file(os.path.join(self.path_root, fname), "ImageIter")

    def imdecode(self, s: bytes) -> Any:
        """Decode one image (DataError naming the sample when it is broken)."""
        try:
            return imdecode(s)
        except DataError as exc:
            raise DataError(f"ImageIter: broken image at position {self.cur}: {exc}") from None

    def augmentation_transform(self, data: Any) -> Any:
        for aug in self.auglist:
            data = aug(data)
        return data

    def postprocess_data(self, datum: Any) -> np.ndarray:
        """HWC -> CHW."""
        return host(datum).transpose(2, 0, 1)

    def _batchify(self, data: np.ndarray, label: np.ndarray, start: int = 0) -> int:
        i = start
        try:
            while i < self.batch_size:
                lab, s = self.next_sample()
                data[i] = self.postprocess_data(self.augmentation_transform(self.imdecode(s)))
                label[i] = np.reshape(host(lab), label.shape[1:])
                i += 1
        except StopIteration:
            if not i:
                raise
        return i

    def next(self) -> DataBatch:
        if self._cache is not None:
            data, label, i = self._cache
        else:
            data = np.zeros((self.batch_size,) + self.data_shape, np.float32)
            label = np.zeros(self.provide_label[0].shape, np.float32)
            i = self._batchify(data, label)
        pad = self.batch_size - i
        if pad:
            if self.last_batch_handle == "discard":
                raise StopIteration
            if self.last_batch_handle == "roll_over" and self._cache is None:
                self._cache = (data, label, i)
                raise StopIteration
            self._batchify(data, label, i)
            if self.last_batch_handle == "pad":
                self._allow_read = False
            else:
                self._cache = None
        return DataBatch([array(data)], [array(label)], pad=pad,
                         provide_data=self.provide_data, provide_label=self.provide_label)
