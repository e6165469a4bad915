"""``sg.io.ImageRecordIter``: MXNet's C++ image record iterator, as documented for 1.9.1.

Per record: decode (``data_shape[0]`` 1 = grey, 3 = colour, 4 = with alpha), ``resize`` the
shorter edge, ``pad`` with ``fill_value``, crop ``data_shape`` (centred, or random with
``rand_crop``; an image smaller than the crop is first scaled up), mirror (``mirror``, or a
coin flip with ``rand_mirror``), then ``(pixel - mean) * scale / std`` per channel in
float32. Samples are decoded on ``preprocess_threads`` threads (worker processes with
``SYMGRAPH_IO_PROCESSES=1``: see ``record_workers``), each into its row of a fresh batch
array that the batch's NDArray wraps without a copy. ``num_parts``/``part_index``
keep MXNet's split: by record count with an index, by byte offset of the ``.rec`` file without.
With ``round_batch`` the last batch is completed from the start of the data (``pad`` says
how many) and the next epoch starts after those samples, as MXNet's.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any, Optional, Sequence

import numpy as np

from ...core import config
from ...core.base import AttrError, DataError
from ..io.base import DataBatch, DataDesc
from ...core.context import cpu
from ...runtime.ndarray import NDArray, array
from .. import recordio
from .iter import DescribedIter, read_image_list
from .record_sample import Sample, SampleParams, finish, process
from .record_workers import ProcessPreparer

__all__ = ["ImageRecordIter"]

# Accepted at their MXNet defaults (or as performance hints); any other value is refused.
UNSUPPORTED = {"max_rotate_angle": 0, "max_aspect_ratio": 0.0, "max_shear_ratio": 0.0,
               "max_crop_size": -1, "min_crop_size": -1, "max_random_scale": 1.0,
               "min_random_scale": 1.0, "random_h": 0, "random_s": 0, "random_l": 0,
               "rotate": -1, "brightness": 0.0, "contrast": 0.0, "saturation": 0.0,
               "pca_noise": 0.0, "random_resized_crop": False, "mean_img": "",
               "max_random_contrast": 0.0, "max_random_illumination": 0.0,
               "shuffle_chunk_size": 0, "verbose": True, "prefetch_buffer": 4, "ctx": "gpu",
               "device_id": 0, "seed_aug": None, "min_img_size": 0.0, "max_img_size": 1e10}
HINTS = ("verbose", "prefetch_buffer", "ctx", "device_id", "shuffle_chunk_size")


def _record_offsets(path: str) -> list[int]:
    """The byte offset of every record of ``path`` (read once, sequentially)."""
    reader = recordio.MXRecordIO(path, "r")
    offsets = []
    try:
        while True:
            pos = reader.tell()
            if reader.read() is None:
                return offsets
            offsets.append(pos)
    finally:
        reader.close()


def _part(offsets: list[int], total: int, num_parts: int, part_index: int,
          indexed: bool) -> list[int]:
    """MXNet's (dmlc InputSplit's) partition: ceil(N / parts) records each with an index;
    without one, the records whose header starts in the part's 4-aligned byte range."""
    if num_parts == 1:
        return offsets
    if indexed:
        step = -(-len(offsets) // num_parts)
        return offsets[step * part_index:step * (part_index + 1)]
    step = -(-total // num_parts)
    step += -step % 4
    return [o for o in offsets if o // step == part_index]


class ImageRecordIter(DescribedIter):
    """Batches of decoded, augmented images from an image ``.rec`` file (MXNet's names).

    Example::

        >>> it = sg.io.ImageRecordIter(path_imgrec='data.rec', data_shape=(3, 28, 28),
        ...                            batch_size=32, mean_r=123.68, scale=1/58.)  # doctest: +SKIP
    """

    def __init__(self, path_imgrec: str, data_shape: Sequence[int], batch_size: int,
                 path_imgidx: str = "", path_imglist: str = "", label_width: int = 1,
                 shuffle: bool = False, seed: int = 0, preprocess_threads: int = 4,
                 num_parts: int = 1, part_index: int = 0, round_batch: bool = True,
                 data_name: str = "data", label_name: str = "softmax_label",
                 dtype: str = "float32", **kwargs: Any) -> None:
        super().__init__(int(batch_size))
        self.params = SampleParams.create(tuple(data_shape), label_width, dtype, kwargs)
        self._check_unsupported(kwargs)
        if self.batch_size <= 0 or preprocess_threads < 1:
            raise DataError(f"ImageRecordIter: batch_size={batch_size} and "
                            f"preprocess_threads={preprocess_threads} must be positive")
        if not (isinstance(num_parts, int) and 0 <= part_index < num_parts):
            raise DataError(f"ImageRecordIter: part_index={part_index} not in "
                            f"[0, num_parts={num_parts})")
        self._open_source(path_imgrec, path_imgidx, num_parts, part_index)
        self.label_map = None
        if path_imglist:
            table, _ = read_image_list(path_imglist)
            self.label_map = {k: v[0].astype(np.float32) for k, v in table.items()}
        self.shuffle, self.round_batch = shuffle, round_batch
        self.seed, self._rng = seed, np.random.default_rng(seed)
        self._pool = ThreadPoolExecutor(preprocess_threads) if preprocess_threads > 1 else None
        self._procs = (ProcessPreparer(preprocess_threads, self.params, self.label_map,
                                       path_imgrec)
                       if preprocess_threads > 1 and config.get("SYMGRAPH_IO_PROCESSES") else None)
        shape = (self.batch_size,) + self.params.data_shape
        label_shape = (self.batch_size,) + ((label_width,) if label_width > 1 else ())
        self._descs = ([DataDesc(data_name, shape, self.params.out_dtype)],
                       [DataDesc(label_name, label_shape)])
        self._start, self._epoch, self._overflow = 0, 0, False
        self.reset()

    def _check_unsupported(self, kwargs: dict) -> None:
        for name, value in kwargs.items():
            if name not in UNSUPPORTED:
                raise AttrError(f"ImageRecordIter: unknown argument {name!r}")
            if name not in HINTS and value != UNSUPPORTED[name]:
                raise AttrError(f"ImageRecordIter: {name}={value!r} is not implemented "
                                f"(only its default {UNSUPPORTED[name]!r})")

    def _open_source(self, path_imgrec: str, path_imgidx: str, num_parts: int,
                     part_index: int) -> None:
        self.path_imgrec = path_imgrec
        self._reader = recordio.MXRecordIO(path_imgrec, "r")
        total = self._reader._size
        if path_imgidx:
            index = recordio.MXIndexedRecordIO(path_imgidx, path_imgrec, "r")
            offsets = sorted(index.idx.values())
            index.close()
        else:
            offsets = _record_offsets(path_imgrec)
        self._offsets = _part(offsets, total, num_parts, part_index, bool(path_imgidx))
        if not self._offsets:
            raise DataError(f"ImageRecordIter: {path_imgrec} part {part_index} of {num_parts} "
                            f"holds no record")
        self.num_data = len(self._offsets)

    def reset(self) -> None:
        """Start a new epoch: reshuffle with ``shuffle``; after a rounded last batch, carry on
        from the samples that completed it (MXNet's ``round_batch``)."""
        if not self._overflow:
            self._new_order()
        self._overflow = False
        self._epoch += 1
        self._done = False

    def _new_order(self) -> None:
        self._order = (self._rng.permutation(self.num_data) if self.shuffle
                       else np.arange(self.num_data))
        self._cursor = 0

    def _take(self, count: int) -> list[int]:
        """Offsets of the next ``count`` samples of this epoch's order."""
        got = self._order[self._cursor:self._cursor + count]
        self._cursor += len(got)
        return [self._offsets[i] for i in got]

    def _read(self, offsets: Sequence[int]) -> list[tuple[int, bytes]]:
        out = []
        for offset in offsets:
            self._reader._handle().seek(offset)
            out.append((offset, self._reader.read()))
        return out

    def _decode(self, raws: list[tuple[int, bytes]], data: np.ndarray) -> list[Sample]:
        """Samples of ``raws``, each worker writing its pixels into its row of ``data``."""
        keys = [np.random.SeedSequence([self.seed, self._epoch, off]) for off, _ in raws]
        jobs = [(raw, key, data[i]) for i, ((_, raw), key) in enumerate(zip(raws, keys))]
        where = self.path_imgrec

        def one(job: tuple[bytes, Any, np.ndarray]) -> Sample:
            return process(job[0], self.params, self.label_map, np.random.default_rng(job[1]),
                           where, job[2])
        if self._procs is not None:
            prepared = self._procs.map([job[:2] for job in jobs])
            return list(self._pool.map(lambda s, out: finish(s, self.params, out), prepared,
                                       [job[2] for job in jobs]))
        return list(self._pool.map(one, jobs)) if self._pool else [one(j) for j in jobs]

    def next(self) -> DataBatch:
        if self._done:
            raise StopIteration
        n, bs = self.num_data, self.batch_size
        offsets = self._take(bs)
        if not offsets:
            self._done = True
            raise StopIteration
        pad = bs - len(offsets)
        if pad and self.round_batch:
            if bs > n:
                raise DataError(f"ImageRecordIter: {n} images, fewer than batch_size {bs}")
            # as MXNet: the batch is completed from the next epoch's order, which then
            # starts after those samples
            self._new_order()
            offsets += self._take(pad)
            self._overflow, self._done = True, True
        # a fresh buffer per batch: the NDArray handed out wraps it without a copy
        data = np.empty(self.provide_data[0].shape, self.params.out_dtype)
        data[len(offsets):] = 0
        samples = self._decode(self._read(offsets), data)
        label = np.zeros((bs, self.params.label_width), np.float32)
        for i, s in enumerate(samples):
            label[i] = s.label
        label = label.reshape(self.provide_label[0].shape)
        index = np.array([s.index for s in samples] + [0] * (bs - len(samples)), np.uint64)
        return DataBatch([NDArray(data, cpu())], [array(label)], pad=pad, index=index,
                         provide_data=self.provide_data, provide_label=self.provide_label)

    def __del__(self) -> None:
        if getattr(self, "_pool", None) is not None:
            self._pool.shutdown(wait=False)
        if getattr(self, "_procs", None) is not None:
            self._procs.shutdown()
