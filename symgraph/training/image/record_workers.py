"""``ImageRecordIter``'s samples prepared in worker processes (``SYMGRAPH_IO_PROCESSES=1``).

Why processes: a thread preparing a sample holds the GIL for about 40% of its time (Pillow's
JPEG header parsing and pixel export, numpy's call dispatch; measured with ``py-spy --gil``),
so threads of one process stop scaling at two or three cores, where MXNet's C++ threads use
them all. Workers are spawned (not forked: safe beside CUDA and threads), each holding the
sample options from its start; a job is a record's bytes and its random seed, the answer the
augmented HWC uint8 crop (``record_sample.prepare``), which the parent normalises into the batch
on its threads (two large numpy calls per sample, outside the GIL). The random draws are the
same as on threads, so the batches are identical.
"""
from __future__ import annotations

import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Optional

import numpy as np

from ...core.base import DataError
from .record_sample import Sample, SampleParams, prepare

__all__ = ["ProcessPreparer"]

_STATE: dict = {}  # in a worker: its sample options, set once by _start


def _start(params: SampleParams, label_map: Optional[dict], where: str) -> None:
    _STATE.update(params=params, label_map=label_map, where=where)


def _prepare(job: tuple[bytes, Any]) -> Sample:
    raw, key = job
    return prepare(raw, _STATE["params"], _STATE["label_map"], np.random.default_rng(key),
                   _STATE["where"])


class ProcessPreparer:
    """``workers`` spawned processes running ``prepare`` on (record bytes, seed) jobs.

    Example::

        >>> pool = ProcessPreparer(4, params, None, 'data.rec')      # doctest: +SKIP
        >>> pool.map([(raw, np.random.SeedSequence(0))])[0].data.shape  # doctest: +SKIP
        (224, 224, 3)
    """

    def __init__(self, workers: int, params: SampleParams, label_map: Optional[dict],
                 where: str) -> None:
        self.workers = int(workers)
        self._pool = ProcessPoolExecutor(self.workers, multiprocessing.get_context("spawn"),
                                         initializer=_start, initargs=(params, label_map, where))

    def map(self, jobs: list[tuple[bytes, Any]]) -> list[Sample]:
        """The prepared samples of ``jobs``, in order (a worker's DataError is raised here)."""
        # a few chunks per worker: fewer messages than one per sample, still balanced
        chunk = max(1, len(jobs) // (4 * self.workers))
        try:
            return list(self._pool.map(_prepare, jobs, chunksize=chunk))
        except BrokenProcessPool as exc:
            raise DataError(f"ImageRecordIter: a worker process died ({exc}). With "
                            f"SYMGRAPH_IO_PROCESSES=1 workers are spawned: they import the "
                            f"main script, whose top level must be guarded by "
                            f"if __name__ == '__main__'") from None

    def shutdown(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
