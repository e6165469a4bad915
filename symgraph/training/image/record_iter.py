"""``sg.io.ImageRecordIter``: MXNet's C++ image record iterator, as documented for 1.9.1.

Per record: decode (``data_shape[0]`` 1 = grey, 3 = colour, 4 = with alpha), ``resize`` the
shorter edge, ``pad`` with ``fill_value``, crop ``data_shape`` (centred, or random with
``rand_crop``; an image smaller than the crop is first scaled up), mirror (``mirror``, or a
coin flip with ``rand_mirror``), then ``(pixel - mean) * scale / std`` per channel in
float32. Samples are decoded on ``preprocess_threads`` threads (worker processes with
``SYMGRAPH_IO_PROCESSES=1``: see ``record_workers``), each into its row of the batch array
that the batch's NDArray wraps without a copy (a fresh array on threads, a shared-memory slot
with processes). With more than one thread, up to ``prefetch_buffer`` batches after the one
asked for are prepared ahead, as MXNet's iterator does; ``reset`` drops them and rewinds to
where the consumer is, so the batches are those of one thread. ``num_parts``/``part_index``
keep MXNet's split: by record count with an index, by byte offset of the ``.rec`` file without.
With ``round_batch`` the last batch is completed from the start of the data (``pad`` says
how many) and the next epoch starts after those samples, as MXNet's.
"""
from __future__ import annotations

from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import Any, NamedTuple, Optional, Sequence

import numpy as np

from ...core import config
from ...core.base import AttrError, DataError
from ..io.base import DataBatch, DataDesc
from ...core.context import cpu
from ...runtime.ndarray import NDArray, array
from .. import recordio
from .iter import DescribedIter, read_image_list
from .record_sample import Sample, SampleParams, process
from .record_slots import SlotPool
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


class Planned(NamedTuple):
    """A batch on its way: the iterator's state before it was planned (``reset`` rewinds to
    it), its padding, its data array and its pending work."""

    before: tuple
    pad: int
    data: np.ndarray
    work: list  # Futures (of Samples, or of row lists from the workers), or Samples


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
        shape = (self.batch_size,) + self.params.data_shape
        several = preprocess_threads > 1
        self._depth = 1 + (max(0, int(kwargs.get("prefetch_buffer", 4))) if several else 0)
        self._ahead: deque = deque()
        self._procs = self._slots = self._pool = None
        if several and config.get("SYMGRAPH_IO_PROCESSES"):
            self._procs = ProcessPreparer(preprocess_threads, self.params, self.label_map,
                                          path_imgrec)
            self._slots = SlotPool(shape, self.params.out_dtype, keep=self._depth + 1)
        elif several:
            self._pool = ThreadPoolExecutor(preprocess_threads)
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
        if self._ahead:  # batches prepared ahead and not taken: as if never planned
            self._restore(self._ahead[0].before)
            for planned in self._ahead:
                wait([w for w in planned.work if isinstance(w, Future)])
            self._ahead.clear()
        if not self._overflow:
            self._new_order()
        self._overflow = False
        self._epoch += 1
        self._done = False

    def _state(self) -> tuple:
        return (self._order, self._cursor, self._overflow, self._done,
                self._rng.bit_generator.state)

    def _restore(self, state: tuple) -> None:
        self._order, self._cursor, self._overflow, self._done, rng = state
        self._rng.bit_generator.state = rng

    def _new_order(self) -> None:
        self._order = (self._rng.permutation(self.num_data) if self.shuffle
                       else np.arange(self.num_data))
        self._cursor = 0

    def _take(self, count: int) -> list[int]:
        """Offsets of the next ``count`` samples of this epoch's order."""
        got = self._order[self._cursor:self._cursor + count]
        self._cursor += len(got)
        return [self._offsets[i] for i in got]

    def _plan(self) -> Optional[tuple[list[int], int]]:
        """The next batch's record offsets and padding (None at the end of the epoch)."""
        n, bs = self.num_data, self.batch_size
        offsets = self._take(bs)
        if not offsets:
            self._done = True
            return None
        pad = bs - len(offsets)
        if pad and self.round_batch:
            if bs > n:
                raise DataError(f"ImageRecordIter: {n} images, fewer than batch_size {bs}")
            # as MXNet: the batch is completed from the next epoch's order, which then
            # starts after those samples
            self._new_order()
            offsets += self._take(pad)
            self._overflow, self._done = True, True
        return offsets, pad

    def _one(self, job: tuple[bytes, tuple, np.ndarray]) -> Sample:
        raw, entropy, out = job
        rng = np.random.default_rng(np.random.SeedSequence(entropy))
        return process(raw, self.params, self.label_map, rng, self.path_imgrec, out)

    def _submit(self, offsets: list[int]) -> tuple[np.ndarray, list]:
        """The batch array of ``offsets`` and the work that fills it (queued or done)."""
        keys = [(self.seed, self._epoch, off) for off in offsets]
        if self._procs is not None:
            name, data = self._slots.take()  # a reused slot: its padding rows are stale
            data[len(offsets):] = 0
            rows = list(zip(range(len(offsets)), offsets, keys))
            return data, self._procs.submit(name, data.shape, rows)
        # a fresh buffer per batch: the NDArray handed out wraps it without a copy
        data = np.empty(self.provide_data[0].shape, self.params.out_dtype)
        data[len(offsets):] = 0
        jobs = [(self._reader.read_at(off), key, data[i])
                for i, (off, key) in enumerate(zip(offsets, keys))]
        if self._pool is not None:
            return data, [self._pool.submit(self._one, job) for job in jobs]
        return data, [self._one(job) for job in jobs]

    def _fill(self, asked: bool) -> None:
        """Plan and queue batches until ``_depth`` are on their way or the epoch ends. An
        error planning a batch ahead (``asked`` False, or one queued before it) is deferred:
        the state rewinds and it is raised when that batch is asked for."""
        while len(self._ahead) < self._depth and not self._done:
            before = self._state()
            try:
                plan = self._plan()
                if plan is None:
                    return
                data, work = self._submit(plan[0])
            except DataError:
                if asked and not self._ahead:
                    raise
                self._restore(before)
                return
            self._ahead.append(Planned(before, plan[1], data, work))

    def _labels(self, planned: Planned) -> list[tuple[np.ndarray, int]]:
        """(label, record id) of each sample of ``planned``, once its data is written."""
        if self._procs is not None:
            return [(label, index) for _, label, index in self._procs.results(planned.work)]
        wait([w for w in planned.work if isinstance(w, Future)])
        samples = [w.result() if isinstance(w, Future) else w for w in planned.work]
        return [(s.label, s.index) for s in samples]

    def next(self) -> DataBatch:
        self._fill(asked=True)
        if not self._ahead:
            raise StopIteration
        planned = self._ahead.popleft()
        bs = self.batch_size
        rows = self._labels(planned)
        label = np.zeros((bs, self.params.label_width), np.float32)
        for i, (value, _) in enumerate(rows):
            label[i] = value
        label = label.reshape(self.provide_label[0].shape)
        index = np.array([i for _, i in rows] + [0] * (bs - len(rows)), np.uint64)
        if self._depth > 1:  # the workers go on with the next batches while this one is used
            self._fill(asked=False)
        return DataBatch([NDArray(planned.data, cpu())], [array(label)], pad=planned.pad,
                         index=index, provide_data=self.provide_data,
                         provide_label=self.provide_label)

    def __del__(self) -> None:
        ahead = getattr(self, "_ahead", None)
        if ahead:  # their arrays hand their slots back before the pool closes
            ahead.clear()
        for name in ("_pool", "_procs", "_slots"):
            part = getattr(self, name, None)
            if part is not None:
                # batches queued ahead are not wanted any more: cancel what has not started
                part.shutdown(**({"wait": False, "cancel_futures": True}
                                 if name == "_pool" else {}))
