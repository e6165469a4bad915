"""``ImageRecordIter``'s samples prepared in worker processes (``SYMGRAPH_IO_PROCESSES=1``).

Why processes: a thread preparing a sample holds the GIL for about 40% of its time (Pillow's
JPEG header parsing and pixel export, numpy's call dispatch; measured with ``py-spy --gil``),
so threads of one process stop scaling at two or three cores, where MXNet's C++ threads use
them all. Workers are spawned (not forked: safe beside CUDA and threads), each holding the
sample options and its own handle on the ``.rec`` file from its start.

Why the parent does almost nothing: it is one core against all the workers, so any per-image
work there caps the feed. A job is a few rows of a batch: (row, record offset, seed entropy);
the worker reads the record, decodes, augments, normalises and writes the final values into
that row of the batch's shared-memory slot (``record_slots``), answering only the labels and
ids. The random draws are those of threads (same seeds), so the batches are identical.
"""
from __future__ import annotations

import ctypes
import multiprocessing
from concurrent.futures import Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Optional

import numpy as np

from ...core.base import DataError
from .. import recordio
from .record_sample import SampleParams, process
from .record_slots import Attached

__all__ = ["ProcessPreparer", "Row", "keep_heap"]

Row = tuple  # (row in the batch, record offset, seed entropy (seed, epoch, offset))
_STATE: dict = {}  # in a worker: its sample options, record reader and slot mappings
# glibc: keep freed memory in the heap. Its default hands each image-sized buffer back to the
# kernel and takes fresh pages at the next image: the page faults cost 15% of a sample.
MALLOPT = ((-1, 1 << 30), (-3, 32 << 20))  # M_TRIM_THRESHOLD, M_MMAP_THRESHOLD


def keep_heap() -> None:
    """Make glibc keep freed memory for reuse (what each worker does at its start)."""
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (AttributeError, OSError):  # not glibc: its allocator's defaults stand
        return
    for option, value in MALLOPT:
        mallopt(ctypes.c_int(option), ctypes.c_int(value))


def _start(params: SampleParams, label_map: Optional[dict], where: str) -> None:
    keep_heap()
    _STATE.update(params=params, label_map=label_map, where=where,
                  reader=recordio.MXRecordIO(where, "r"), slots=Attached())


def _fill(slot: str, shape: tuple, rows: list[Row]) -> list[tuple[int, np.ndarray, int]]:
    """Prepare ``rows`` into slot ``slot``; (row, label, record id) of each."""
    params, label_map, where = _STATE["params"], _STATE["label_map"], _STATE["where"]
    data = _STATE["slots"].array(slot, shape, params.out_dtype)
    out = []
    for row, offset, entropy in rows:
        rng = np.random.default_rng(np.random.SeedSequence(entropy))
        sample = process(_STATE["reader"].read_at(offset), params, label_map, rng, where,
                         data[row])
        out.append((row, sample.label, sample.index))
    return out


class ProcessPreparer:
    """``workers`` spawned processes filling rows of shared-memory batch slots.

    Example::

        >>> pool = ProcessPreparer(4, params, None, 'data.rec')          # doctest: +SKIP
        >>> jobs = pool.submit(name, (64, 3, 224, 224), rows)             # doctest: +SKIP
        >>> labels = pool.results(jobs)   # [(row, label, record id), ...]  # doctest: +SKIP
    """

    def __init__(self, workers: int, params: SampleParams, label_map: Optional[dict],
                 where: str) -> None:
        self.workers = int(workers)
        self._pool = ProcessPoolExecutor(self.workers, multiprocessing.get_context("spawn"),
                                         initializer=_start, initargs=(params, label_map, where))

    def submit(self, slot: str, shape: tuple, rows: list[Row]) -> list[Future]:
        """Queue ``rows`` of the batch in ``slot`` (of ``shape``); at once."""
        # one chunk per worker: a batch in flight behind this one keeps them all busy
        chunk = max(1, -(-len(rows) // self.workers))
        try:
            return [self._pool.submit(_fill, slot, shape, rows[i:i + chunk])
                    for i in range(0, len(rows), chunk)]
        except BrokenProcessPool as exc:
            raise self._died(exc) from None

    def results(self, jobs: list[Future]) -> list[tuple[int, np.ndarray, int]]:
        """The (row, label, record id) of every row of ``jobs``, once all are written (a
        worker's DataError is raised here, after the other jobs have stopped writing)."""
        wait(jobs)
        try:
            return [row for job in jobs for row in job.result()]
        except BrokenProcessPool as exc:
            raise self._died(exc) from None

    @staticmethod
    def _died(exc: Exception) -> DataError:
        return DataError(f"ImageRecordIter: a worker process died ({exc}). With "
                         f"SYMGRAPH_IO_PROCESSES=1 workers are spawned: they import the main "
                         f"script, whose top level must be guarded by "
                         f"if __name__ == '__main__'")

    def shutdown(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
