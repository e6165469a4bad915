"""The host side of one data-parallel step: the order in which work is queued on the devices
of this process, where the host waits, and (on request) how long each phase takes.

One Python thread drives every device, so the host's time per step is the sum of what it does
for each device; when a device's step is short (the seed CNN at batch 1024 is ~1 ms of GPU
work) that sum, not the GPUs, sets the pace. :class:`StepQueue` therefore

- waits at most once per step, for the step before last (the one whose staging buffers and
  events the host is about to reuse), never for the step it just queued;
- fills the pinned staging buffers of devices 1.. on worker threads (numpy's copies release
  the GIL) while the host fills device 0's and queues it (``SYMGRAPH_STAGE_THREADS=0``:
  each device's are filled inline, right before its launch);
- queues each device's batch copy and step graph back to back, so device 0 computes while the
  host queues device 1;
- then the all-reduce of every device (one NCCL group per bucket), then each device's update.

Requires: each device offers ``stage(pool) -> ready``, ``launch(ready)`` and ``update()``
(see :class:`DeviceStep`); ``comm`` may offer ``mark()``/``wait(mark)`` (GPU communicators).
Guarantees: the order above; at most one ``comm.wait`` per step, none in the first two.
"""
from __future__ import annotations

import contextlib
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Iterator, Optional, Protocol, Sequence

import numpy as np

from ...core import config
from .split import take_part

# a device's batch slices are filled on a worker thread from this size up (below it the
# hand-off costs more than the copy)
STAGE_THREAD_BYTES = 256 * 1024
THREADS_ENV = "SYMGRAPH_STAGE_THREADS"

Ready = Callable[[], None]

# host phases of a step, in order ("batch", the slicing of the batch on the host, is timed by
# the caller; "ready" is waiting for the staging threads)
PHASES = ("wait", "batch", "stage", "ready", "launch", "allreduce", "update", "mark")


class DeviceStep(Protocol):
    """One device's part of a step."""

    def stage(self, pool: Optional[ThreadPoolExecutor]) -> Ready:
        """Fill the host side of this device's batch copy (on ``pool`` when given and
        worth it); returns a function that blocks until the filling is done."""

    def launch(self, ready: Ready) -> None:
        """Call ``ready()``, then queue the batch copy and the step (forward + backward)."""

    def update(self) -> None:
        """Queue the optimizer step (after the all-reduce, on the same stream)."""


def _null() -> None:
    return None


def stage_threads() -> bool:
    """Whether devices 1.. have their staging buffers filled on worker threads
    (``SYMGRAPH_STAGE_THREADS``, default 1; 0 fills each device's inline, just before its
    launch)."""
    return config.get(THREADS_ENV)


class StepQueue:
    """Queues data-parallel steps; ``times`` (a dict, ``None`` by default) collects the host
    seconds spent in each phase of :data:`PHASES`, and ``steps`` counts the steps timed."""

    def __init__(self) -> None:
        self.marks: list[Any] = []  # device events of the queued steps not yet waited for
        self.times: Optional[dict[str, float]] = None
        self.steps = 0
        self._pool: Optional[ThreadPoolExecutor] = None
        self._workers = 0

    def reset(self) -> None:
        """Forget the queued steps' marks (a new communicator: they belong to the old one)."""
        self.marks = []

    @contextlib.contextmanager
    def _timed(self, name: str) -> Iterator[None]:
        tic = time.perf_counter()
        try:
            yield
        finally:
            if self.times is not None:
                self.times[name] = self.times.get(name, 0.0) + time.perf_counter() - tic

    def phase(self, name: str) -> Any:
        """A context timing ``name`` when :attr:`times` is on (free otherwise)."""
        return self._timed(name) if self.times is not None else contextlib.nullcontext()

    def pool(self, workers: int) -> Optional[ThreadPoolExecutor]:
        """Threads that fill staging buffers for devices 1.. (``None`` for one device)."""
        if workers < 1:
            return None
        if self._pool is None or self._workers != workers:
            if self._pool is not None:
                self._pool.shutdown(wait=True)
            self._pool = ThreadPoolExecutor(workers, thread_name_prefix="symgraph-stage")
            self._workers = workers
        return self._pool

    def run(self, devices: Sequence[DeviceStep], reduce: Callable[[], None], comm: Any) -> None:
        """Queue one step on ``devices`` (see the module docstring for the order)."""
        with self.phase("wait"):
            if len(self.marks) > 1 and hasattr(comm, "wait"):
                comm.wait(self.marks.pop(0))  # the step before last: inputs reused now
        pool = self.pool(len(devices) - 1) if stage_threads() else None
        ready: list[Optional[Ready]] = [None] * len(devices)
        if pool is not None:
            with self.phase("stage"):
                ready[1:] = [dev.stage(pool) for dev in devices[1:]]
        for k, dev in enumerate(devices):
            if ready[k] is None:  # device 0, or every device without threads: inline
                with self.phase("stage"):
                    ready[k] = dev.stage(None)
            with self.phase("ready"):
                ready[k]()
            with self.phase("launch"):
                dev.launch(_null)
        with self.phase("allreduce"):
            reduce()
        with self.phase("update"):
            for dev in devices:
                dev.update()
        with self.phase("mark"):
            if hasattr(comm, "mark"):  # the host may run one step ahead, never more
                self.marks.append(comm.mark())
        self.steps += 1

    def close(self) -> None:
        """Stop the staging threads."""
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None


def stage_copies(copies: Sequence[tuple[Any, Any]], pool: Optional[ThreadPoolExecutor],
                 copy: Callable[[Any, Any], None], min_bytes: int) -> Ready:
    """Run ``copy(dst, src)`` for each pair, on ``pool`` when given and the copies move at
    least ``min_bytes`` (below that a thread hand-off costs more than it saves)."""
    def fill() -> None:
        for dst, src in copies:
            copy(dst, src)
    nbytes = sum(getattr(src, "nbytes", 0) for _, src in copies)
    if pool is None or nbytes < min_bytes:
        fill()
        return _null
    return pool.submit(fill).result


def _fill(buf: np.ndarray, value: np.ndarray) -> None:
    np.copyto(buf, value, casting="unsafe")  # releases the GIL: runs on a staging thread


class DeviceSlice:
    """A :class:`DeviceStep` for executor ``exe`` on samples ``part`` of the host batch
    ``host``: with ``staging`` (a ``cuda.staging.Staging``) the slices go through pinned
    buffers and async copies on the executor's stream; without, they are assigned at launch
    (CPU replicas). ``update`` queues the device's optimizer step."""

    def __init__(self, exe: Any, part: slice, host: dict[str, np.ndarray], staging: Any,
                 update: Callable[[], None], axes: Optional[dict[str, int]] = None) -> None:
        self.exe, self.part, self.host, self.staging = exe, part, host, staging
        self._update = update
        self.axes = axes or {}  # batch axis of each input (``__layout__``), 0 if absent
        self.sends: list[tuple] = []

    def stage(self, pool: Optional[ThreadPoolExecutor]) -> Ready:
        if self.staging is None:
            return _null
        copies = []
        for name, value in self.host.items():
            target = self.exe.arg_dict[name]
            buf, entry = self.staging.reserve(target)
            self.sends.append((target, buf, entry))
            copies.append((buf, take_part(value, self.axes.get(name, 0), self.part)))
        return stage_copies(copies, pool, _fill, STAGE_THREAD_BYTES)

    def launch(self, ready: Ready) -> None:
        ready()
        if self.staging is None:
            for name, value in self.host.items():
                self.exe.arg_dict[name][:] = take_part(value, self.axes.get(name, 0),
                                                       self.part)
        else:
            stream = self.exe.train_program.stream
            for target, buf, entry in self.sends:
                self.staging.send(target, buf, entry, stream)
        self.exe.train_step()

    def update(self) -> None:
        self._update()
