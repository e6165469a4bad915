"""Per-step CPU time of the seed CNN's training step on the numpy and the compiled CPU backends,
side by side in one process: the two executors alternate, so load from other jobs falls on
both alike, and CPU time (``time.process_time``) rather than wall clock is measured.

    PYTHONPATH=. python3 benchmarks/cpu_breakdown.py [--batch 64] [--rounds 7] [--top 16]

Prints the whole step's median for each backend, the sum of the per-step medians, and one row
per schedule step (the costliest first under the numpy backend). Run it with one thread
(``SYMGRAPH_CPU_THREADS=1 OMP_NUM_THREADS=1``): CPU time adds up the threads' time.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import symgraph as sg  # noqa: E402
from benchmarks.cpu_models import bind_cnn  # noqa: E402
from symgraph.core import config  # noqa: E402
from symgraph.core.registry import RunCtx  # noqa: E402
from symgraph.interop.models.simple_cnn import build  # noqa: E402
from symgraph.runtime.backend.threads import blas_threads  # noqa: E402

BACKENDS = ("numpy", "compiled")


def executor(backend: str, batch: int) -> Any:
    """A training executor of the seed CNN bound under ``SYMGRAPH_CPU=backend``."""
    with config.override("SYMGRAPH_CPU", backend):  # read when the program is built
        return bind_cnn(sg, build(), batch)


def cpu_ms(fn: Callable[[], Any]) -> float:
    t0 = time.process_time()
    fn()
    return 1e3 * (time.process_time() - t0)


def measure(batch: int, rounds: int) -> tuple[dict, dict, Any]:
    """(whole-step times, per-step times) per backend, and the numpy executor's schedule."""
    exes = {b: executor(b, batch) for b in BACKENDS}
    whole: dict = {b: [] for b in BACKENDS}
    steps: dict = {b: {} for b in BACKENDS}

    def step(exe: Any) -> None:
        exe.forward(is_train=True)
        exe.backward()
        exe.grad_dict["fc2_weight"].wait_to_read()
    for exe in exes.values():  # compilation and first-touch allocations
        step(exe)
        step(exe)
    for _ in range(rounds):
        for b, exe in exes.items():
            whole[b].append(cpu_ms(lambda: step(exe)))
            prog, env, ctx = exe._train.program, exe._env, RunCtx(is_train=True)
            with blas_threads():
                for k in range(len(exe._train.schedule.steps)):
                    steps[b].setdefault(k, []).append(
                        cpu_ms(lambda: prog._step(env, k, ctx)))  # noqa: B023
    return whole, steps, {b: exe._train.schedule for b, exe in exes.items()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--top", type=int, default=16)
    a = ap.parse_args()
    whole, steps, schedules = measure(a.batch, a.rounds)
    med = {b: {k: float(np.median(v)) for k, v in steps[b].items()} for b in BACKENDS}
    print(f"seed CNN step, batch {a.batch}, CPU ms (median of {a.rounds}); load average "
          f"{os.getloadavg()[0]:.1f}")
    print("| step | op | numpy | compiled |\n|---|---|---|---|")
    print("| whole step | | " + " | ".join(f"{np.median(whole[b]):.1f}" for b in BACKENDS)
          + " |")
    print("| sum of steps | | " + " | ".join(f"{sum(med[b].values()):.1f}" for b in BACKENDS)
          + " |")
    # the compiled backend's layout pass renames what it converts (``_nhwc``): its steps are
    # matched to the numpy backend's by the name without that suffix
    numpy_at = {st.node.name: k for k, st in enumerate(schedules["numpy"].steps)}
    for k in sorted(med["compiled"], key=lambda k: -med["compiled"][k])[:a.top]:
        node = schedules["compiled"].steps[k].node
        j = numpy_at.get(node.name.replace("_nhwc", ""))
        ref = f"{med['numpy'][j]:.2f}" if j is not None else "-"
        print(f"| {node.name[:56]} | {node.op} | {ref} | {med['compiled'][k]:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
