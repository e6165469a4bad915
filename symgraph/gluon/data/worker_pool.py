"""The worker side of ``DataLoader``: pools whose batches come back or fail with a typed error.

* Each pool's tasks carry their own dataset and batchify function (a thread pool shares the
  process with other loaders' pools: a module-level slot would let loader A yield B's data).
  Process workers receive them once, at fork, and keep them in the process.
* An exception raised in a worker comes back as it was when it survives pickling; otherwise
  (a constructor with other arguments than ``args``, an unpicklable attribute) it is wrapped in
  an ExecutionError carrying its type, text and traceback, instead of being lost.
* :func:`wait` waits for one batch in short slices and checks between them that every worker
  process is alive, so a worker killed by the OS (out of memory, a segfault in a decoder) is
  an ExecutionError naming its pid and exit code within a fraction of a second, not a bare
  ``TimeoutError`` after the whole timeout.
"""
from __future__ import annotations

import multiprocessing
import multiprocessing.pool
import pickle
import time
import traceback
from typing import Any, Callable, Optional

import numpy as np

from ...runtime import ndarray as nd
from ...core.base import ExecutionError

POLL = 0.05
"""Seconds between liveness checks while a batch is awaited."""

_process_job: dict = {}  # the dataset and batchify of this worker process (set at fork)


def to_host(data: Any) -> Any:
    """NDArrays (also nested in lists/tuples) as numpy arrays, for sending between processes."""
    if isinstance(data, nd.NDArray):
        return data.asnumpy()
    if isinstance(data, (list, tuple)):
        return type(data)(to_host(d) for d in data)
    return data


def stack_host(data: list) -> Any:
    """The default batchify, on the host: stack samples (tuples element-wise)."""
    first = data[0]
    if isinstance(first, tuple):
        return [stack_host(list(x)) for x in zip(*data)]
    if isinstance(first, nd.NDArray):
        return np.stack([d.asnumpy() for d in data])
    return np.asarray(data)


def make_batch(dataset: Any, batchify: Optional[Callable], indices: list) -> Any:
    """One batch as host arrays; an exception that could not cross a pipe is wrapped."""
    try:
        samples = [dataset[i] for i in indices]
        return stack_host(samples) if batchify is None else to_host(batchify(samples))
    except Exception as exc:
        raise _transportable(exc) from None


def _transportable(exc: Exception) -> Exception:
    try:
        pickle.loads(pickle.dumps(exc))
        return exc
    except Exception:  # unpickling calls the constructor with exc.args, which may not fit
        text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        return ExecutionError(f"DataLoader worker raised {type(exc).__name__}: {exc}\n"
                              f"worker traceback:\n{text}")


def _process_init(dataset: Any, batchify: Optional[Callable]) -> None:
    _process_job["dataset"], _process_job["batchify"] = dataset, batchify


def _process_batch(indices: list) -> Any:
    return make_batch(_process_job["dataset"], _process_job["batchify"], indices)


class Pool:
    """``num_workers`` threads or forked processes making batches of ``dataset``.

    Example: ``Pool(ds, None, 2, threads=True).submit([0, 1])`` then :meth:`wait` on it."""

    def __init__(self, dataset: Any, batchify: Optional[Callable], num_workers: int,
                 threads: bool) -> None:
        self.threads = threads
        if threads:
            self._pool = multiprocessing.pool.ThreadPool(num_workers)
            self._job = (dataset, batchify)
        else:
            ctx = multiprocessing.get_context("fork")
            self._pool = ctx.Pool(num_workers, _process_init, (dataset, batchify))
        self._seen = {id(p): p for p in self._workers()}

    def _workers(self) -> list:
        return list(getattr(self._pool, "_pool", []))  # CPython's list of worker processes

    def submit(self, indices: list) -> Any:
        """Start making the batch of ``indices``; returns the handle :meth:`wait` takes."""
        if self.threads:
            return self._pool.apply_async(make_batch, (*self._job, indices))
        return self._pool.apply_async(_process_batch, (indices,))

    def wait(self, handle: Any, timeout: float) -> Any:
        """The batch of ``handle``; ExecutionError when a worker process died or ``timeout``
        seconds passed."""
        deadline = time.monotonic() + timeout
        while not handle.ready():
            if time.monotonic() >= deadline:
                raise ExecutionError(f"DataLoader: no batch from the workers within "
                                     f"{timeout} s (timeout=); a sample may be very slow")
            handle.wait(POLL)
            if not self.threads:
                self._check_alive()
        return handle.get()

    def _check_alive(self) -> None:
        # The pool replaces a dead worker but the batch it held is lost: refuse at once.
        self._seen.update({id(p): p for p in self._workers()})
        for proc in self._seen.values():
            code = proc.exitcode
            if code is not None:
                how = f" (killed by signal {-code})" if code < 0 else ""
                raise ExecutionError(f"DataLoader worker {proc.name} (pid {proc.pid}) died "
                                     f"with exit code {code}{how}; its batch is lost")

    def terminate(self, drain: float = 10.0) -> None:
        """Stop the workers. A process pool first lets the batches in flight arrive (at most
        ``drain`` seconds): ``multiprocessing.Pool.terminate`` deadlocks when a worker is still
        writing a batch larger than the pipe's buffer, which its stopped result reader no
        longer empties, while holding the lock the pool's shutdown message needs."""
        if not self.threads:
            deadline = time.monotonic() + drain
            for pending in list(getattr(self._pool, "_cache", {}).values()):
                pending.wait(max(0.0, deadline - time.monotonic()))
        self._pool.terminate()
