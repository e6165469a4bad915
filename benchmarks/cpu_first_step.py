"""The compiled CPU backend's first step of the seed CNN, cold and warm, and where it goes.

    PYTHONPATH=. python3 benchmarks/cpu_first_step.py [--batch 64] [--threads 1] [--rounds 3]
                                                      [--kernels]

Each measurement is a fresh process (numba's in-process caches would make a second one free)
with ``SYMGRAPH_CPU=compiled``. Cold: an empty cache folder (``SYMGRAPH_CACHE_DIR``, where
the kernel modules and numba's disk cache of them live); warm: a second process on the folder
the cold one filled. Each child times importing symgraph and numba, binding the training
executor, the first step (forward + backward, waited for: the kernels compile or load from
the disk cache here) and the second, in wall-clock and CPU seconds (a compilation's CPU
time is steadier on a shared machine), and counts the kernels it compiled and the ones numba
loaded from its cache. ``--kernels`` also lists the cold run's compile time per kernel
(numba's ``numba:compile`` events). The numpy backend's first step is printed beside, for scale.

Example (2 cores shared with other jobs, load average 5.5)::

    | run | import | bind | first step | second step | total | first step (CPU) | ... |
    |---|---|---|---|---|---|---|---|
    | compiled, cold | 1.4 | 0.0817 | 5.77 | 0.0872 | 7.21 | 3.43 | ... |
    | compiled, warm | 1.78 | 0.0874 | 1.12 | 0.0975 | 3.07 | 0.581 | ... |
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Optional

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _compile_times(buffer: list) -> list[tuple[str, float]]:
    """(kernel, seconds) of each outermost compilation of a symgraph kernel in the recorded
    ``numba:compile`` events (a kernel's compilation nests numba's own helpers')."""
    out, open_at, depth = [], 0.0, 0
    for stamp, ev in buffer:
        start = ev.status.name == "START"
        depth += 1 if start else -1
        if start and depth == 1:
            open_at = stamp
        elif not start and depth == 0:
            name = ev.data["dispatcher"].py_func.__name__
            out.append((name, stamp - open_at))
    return out


def child(batch: int, kernels: bool) -> dict[str, Any]:
    """Run in the measuring process: the phases' seconds and the kernel counts."""
    t0, c0 = time.perf_counter(), time.process_time()
    import symgraph as sg
    from symgraph.interop.models.simple_cnn import build
    backend = sg.config.get("SYMGRAPH_CPU")
    if backend == "compiled":
        import numba  # noqa: F401  (imported by the first kernel's load otherwise)
    from benchmarks.cpu_models import bind_cnn
    t1 = time.perf_counter()
    exe = bind_cnn(sg, build(), batch)
    t2 = time.perf_counter()
    c2 = time.process_time()
    times, recorder, cpu = [], None, []
    with contextlib.ExitStack() as stack:
        if kernels and backend == "compiled":
            from numba.core import event
            recorder = stack.enter_context(event.install_recorder("numba:compile"))
        for _ in range(2):
            t, c = time.perf_counter(), time.process_time()
            exe.forward(is_train=True)
            exe.backward()
            exe.grad_dict["fc2_weight"].wait_to_read()
            times.append(time.perf_counter() - t)
            cpu.append(time.process_time() - c)
    got = {"import": t1 - t0, "bind": t2 - t1, "first": times[0], "second": times[1],
           "total": t1 - t0 + t2 - t1 + times[0], "first CPU": cpu[0],
           "total CPU": c2 - c0 + cpu[0],
           "compiled": 0, "cached": 0}
    if backend == "compiled":
        from symgraph.runtime.cpu import kernels as K
        got["cached"], got["compiled"] = K.cache_stats()
    if recorder is not None:
        got["kernels"] = _compile_times(recorder.buffer)
    return got


def measure(cache: str, backend: str, a: argparse.Namespace) -> dict[str, Any]:
    """One fresh child process on cache folder ``cache``."""
    env = {**os.environ, "SYMGRAPH_CACHE_DIR": cache, "SYMGRAPH_CPU": backend,
           "PYTHONPATH": str(ROOT)}
    if a.threads:
        env.update(SYMGRAPH_CPU_THREADS=str(a.threads), OMP_NUM_THREADS=str(a.threads))
    cmd = [sys.executable, __file__, "--child", "--batch", str(a.batch)]
    out = subprocess.run(cmd + (["--kernels"] if a.kernels else []), capture_output=True,
                         text=True, env=env)
    if out.returncode != 0:
        raise RuntimeError(f"first-step child failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def table(runs: dict[str, list[dict[str, Any]]]) -> str:
    """Medians over the rounds, in seconds."""
    head = ["run", "import", "bind", "first step", "second step", "total", "first step (CPU)",
            "total (CPU)", "compiled", "from cache"]
    keys = ("import", "bind", "first", "second", "total", "first CPU", "total CPU")
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, got in runs.items():
        cells = [f"{float(np.median([g[k] for g in got])):.3g}" for k in keys]
        counts = [str(int(np.median([g[k] for g in got]))) for k in ("compiled", "cached")]
        lines.append("| " + " | ".join([name] + cells + counts) + " |")
    return "\n".join(lines)


def run(a: argparse.Namespace) -> str:
    """Cold and warm compiled children per round, and the numpy backend's, as a report."""
    runs: dict[str, list[dict[str, Any]]] = {"compiled, cold": [], "compiled, warm": [],
                                             "numpy": []}
    load = os.getloadavg()[0]
    for _ in range(a.rounds):
        with tempfile.TemporaryDirectory(prefix="sg-first-step-") as cache:
            runs["compiled, cold"].append(measure(cache, "compiled", a))
            runs["compiled, warm"].append(measure(cache, "compiled", a))
            runs["numpy"].append(measure(cache, "numpy", a))
    report = (f"seed CNN, batch {a.batch}, {a.threads or 'default'} thread(s), "
              f"{os.cpu_count()} cores, load average {load:.2f} before / "
              f"{os.getloadavg()[0]:.2f} after; seconds, medians of {a.rounds} round(s); "
              f"total = import + bind + first step\n" + table(runs))
    if a.kernels:
        report += "\n\ncold compile per kernel (first round), seconds:\n" + "\n".join(
            f"  {sec:6.2f}  {name}" for name, sec in runs["compiled, cold"][0]["kernels"])
    return report


def main(argv: Optional[list[str]] = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--threads", type=int, default=1, help="0: symgraph's default")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--kernels", action="store_true", help="compile seconds per kernel")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        print(json.dumps(child(a.batch, a.kernels)))
    else:
        print(run(a))


if __name__ == "__main__":
    main()
