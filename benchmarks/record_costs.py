"""CPU costs of ``ImageRecordIter``, measured so that a loaded machine does not blur them:
process CPU time, never wall time, for each part.

    PYTHONPATH=. python3 benchmarks/record_feed.py --costs [--images 1024] [--threads N]

Two tables. Per image on one core (in a spawned process set up as a worker is): reading the
record, decoding the JPEG, the augmentation (resize of the crop window, crop, mirror) and the
normalisation into the batch (CHW float32).
Per batch, for each way of preparing samples: the CPU the main process spends (everything
its threads do; with worker processes that is only planning, queueing and the labels), the
CPU the workers spend per image (``/proc``'s counts of every child process, Linux only),
and the wall time. The feed on K cores is then about ``min(batch / main CPU per batch,
(K - 1) / worker CPU per image)`` images/s (one core left to the main process); the second
table prints both bounds (threads: the main process's CPU includes its threads', and the
GIL bounds them: no workers' bound).
"""
from __future__ import annotations

import multiprocessing
import os
import time
from concurrent.futures import ProcessPoolExecutor
from typing import Any, Callable

import numpy as np

import symgraph as sg
from symgraph.training.image.codec import decode
from symgraph.training.image.record_sample import Sample, augment, finish
from symgraph.training.image.record_workers import keep_heap

TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def children_cpu() -> float:
    """CPU seconds of this process's live children (0.0 where ``/proc`` is not there)."""
    total = 0.0
    for child in multiprocessing.active_children():
        try:
            with open(f"/proc/{child.pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / TICK  # utime, stime
    return total


def _cpu_ms(fn: Callable[[], Any], repeat: int) -> float:
    start = time.process_time()
    for _ in range(repeat):
        fn()
    return (time.process_time() - start) * 1e3 / repeat


def stage_costs(it: Any, prefix: str, images: int) -> dict[str, float]:
    """CPU ms per image of each stage, on this thread, over the first ``images`` records."""
    reader = sg.recordio.MXIndexedRecordIO(prefix + ".idx", prefix + ".rec", "r")
    keys = sorted(reader.keys)[:images]
    params, n = it.params, len(keys)
    read = _cpu_ms(lambda: [sg.recordio.unpack(reader.read_idx(k)) for k in keys], 1) / n
    payloads = [sg.recordio.unpack(reader.read_idx(k))[1] for k in keys]
    reader.close()
    dec = _cpu_ms(lambda: [decode(p, 1) for p in payloads], 1) / n
    pixels = [decode(p, 1) for p in payloads]
    rng = np.random.default_rng(0)
    aug = _cpu_ms(lambda: [augment(img, params, rng) for img in pixels], 1) / n
    samples = [Sample(augment(img, params, rng), np.zeros(1), 0) for img in pixels]
    out = np.empty(params.data_shape, params.out_dtype)
    norm = _cpu_ms(lambda: [finish(s, params, out) for s in samples], 1) / n
    return {"read": read, "decode": dec, "augment": aug, "normalise": norm,
            "total": read + dec + aug + norm}


def stage_costs_in_worker(prefix: str, images: int, batch: int, crop: int) -> dict:
    """``stage_costs`` in a spawned process whose allocator is set up as a worker's."""
    with ProcessPoolExecutor(1, multiprocessing.get_context("spawn"),
                             initializer=keep_heap) as pool:
        return pool.submit(_stages, prefix, images, batch, crop).result()


def _stages(prefix: str, images: int, batch: int, crop: int) -> dict:
    from benchmarks.record_feed import make_iter
    return stage_costs(make_iter(prefix, 1, "float32", batch, crop), prefix, images)


def batch_costs(it: Any, batches: int, workers: bool) -> dict[str, float]:
    """Main-process CPU ms per batch, workers' CPU ms per image and wall ms per batch, over
    ``batches`` batches after a warm one (``it`` should not prefetch, so that the workers'
    CPU covers exactly the batches timed); ``workers``: whether ``it`` has worker
    processes (else their CPU is not read: other iterators' may still be finishing)."""
    from benchmarks.record_feed import next_batch
    next_batch(it)
    kids = children_cpu() if workers else 0.0
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(batches):
        next_batch(it)
    images = batches * it.batch_size
    return {"main": (time.process_time() - cpu) * 1e3 / batches,
            "workers": (children_cpu() - kids) * 1e3 / images if workers else 0.0,
            "wall": (time.perf_counter() - wall) * 1e3 / batches}


def report(prefix: str, threads: int, batches: int, batch: int, crop: int) -> str:
    """Both tables, as markdown."""
    from benchmarks.record_feed import make_iter
    one = make_iter(prefix, 1, "float32", batch, crop)
    stages = stage_costs_in_worker(prefix, min(one.num_data, 4 * batch), batch, crop)
    lines = ["| per image, one core (CPU ms) | read | decode | augment | normalise | total |",
             "|---|---|---|---|---|---|",
             "| float32 | " + " | ".join(f"{stages[k]:.2f}" for k in
                                           ("read", "decode", "augment", "normalise",
                                            "total")) + " |", "",
             f"| batch of {batch}, {threads} workers | main CPU ms/batch | workers' CPU "
             f"ms/image | wall ms/batch | main's bound img/s | workers' bound on {threads} "
             f"cores img/s |", "|---|---|---|---|---|---|"]
    for workers in ("processes", "threads"):
        for dtype in ("float32", "uint8"):
            it = make_iter(prefix, threads, dtype, batch, crop, workers, prefetch=0)
            c = batch_costs(it, batches, workers == "processes")
            # threads: the main process's CPU is the workers' too, and the GIL its bound
            bound = (f"{(threads - 1) * 1e3 / c['workers']:,.0f}" if c["workers"] > 0
                     else "-")
            # (a short run's workers may show no clock tick: 0.00, and no bound from it)
            spent = f"{c['workers']:.2f}" if workers == "processes" else "-"
            lines.append(f"| {dtype}, {workers} | {c['main']:.1f} | {spent} | {c['wall']:.0f} | "
                         f"{batch * 1e3 / c['main']:,.0f} | {bound} |")
            del it
    return "\n".join(lines)
