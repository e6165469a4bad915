"""nvcc's share of a cold first step: ResNet-50's training module compiled as one translation
unit (one nvcc call) against split into parts compiled at once (``cuda.module_parts``).

    PYTHONPATH=. python3 benchmarks/nvcc_parallel.py [--dtype float32|bfloat16] [--batch 64]
                                                     [--jobs 2,4,16] [--sm-count 132]
                                                     [--one-at-a-time]

No GPU needed: the model is bound on the CPU with the CUDA backend's passes and lowering (as
``program_actions.py``), and each measurement compiles into a fresh empty cache folder. Prints,
per part count, the wall time, the CPU time of the nvcc processes (user + system) and the
slowest part (its CPU time too where the parts ran one at a time); then checks that the split
cubins define exactly the kernels of the single one (their ELF symbol tables). ``--jobs``
defaults to 2 and the usable cores; ``--one-at-a-time`` compiles the parts in turn, each alone
(its slowest part's CPU time is the wall time to expect where every part finds a free core).
"""
from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import symgraph as sg  # noqa: E402
from symgraph.core import config  # noqa: E402
from symgraph.runtime.cuda import compiler, module_parts  # noqa: E402

from benchmarks.common import NO_INPUT_GRADS  # noqa: E402
from benchmarks.first_step import resnet50  # noqa: E402
from benchmarks.ir_fingerprint import cuda_lowering  # noqa: E402


def resnet50_kernels(dtype: str, batch: int, sm_count: int) -> tuple:
    """The generated kernels of ResNet-50's training program (224 px), lowered without a GPU."""
    sym = resnet50(dtype)
    with cuda_lowering(sm_count):
        reqs = {n: NO_INPUT_GRADS.get(n, "write") for n in sym.list_arguments()}
        stage = sym.simple_bind(sg.cpu(), grad_req=reqs, data=(batch, 3, 224, 224))._train
    return stage.program.kernels


def children_cpu() -> float:
    use = resource.getrusage(resource.RUSAGE_CHILDREN)
    return use.ru_utime + use.ru_stime


def compile_cold(kernels: Any, count: int, one_at_a_time: bool = False) -> dict:
    """Split into ``count`` parts and compile them into an empty cache, at once or
    ``one_at_a_time`` (each part's time alone: what it takes with a free core each)."""
    parts = module_parts.split(kernels, count)
    times: list[tuple[float, float]] = []
    timed = compiler.run_nvcc

    def run_nvcc(*args: Any, **kwargs: Any) -> bytes:  # each part's own wall and CPU time
        start, cpu = time.perf_counter(), children_cpu()  # (CPU: alone only, else mixed)
        try:
            return timed(*args, **kwargs)
        finally:
            times.append((time.perf_counter() - start, children_cpu() - cpu))
    with tempfile.TemporaryDirectory() as cache, \
            config.override("SYMGRAPH_CACHE_DIR", cache):
        compiler.run_nvcc = run_nvcc
        cpu, start = children_cpu(), time.perf_counter()
        try:
            if one_at_a_time:
                cubins = [module_parts.compile_parts([p], "sm_90")[0] for p in parts]
            else:
                cubins = module_parts.compile_parts(parts, "sm_90")
        finally:
            compiler.run_nvcc = timed
        wall = time.perf_counter() - start
    return {"parts": len(parts), "wall": wall, "cpu": children_cpu() - cpu,
            "slowest": max(times), "cubins": cubins, "alone": one_at_a_time or count == 1,
            "chars": max(len(p.source) for p in parts)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dtype", default="float32", choices=("float32", "bfloat16"))
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--sm-count", type=int, default=132)
    ap.add_argument("--jobs", default="", help="part counts to try, comma-separated")
    ap.add_argument("--one-at-a-time", action="store_true",
                    help="compile the parts one after another (on a machine with fewer free "
                         "cores than parts: the slowest part then predicts the wall time)")
    args = ap.parse_args()
    if compiler.find_nvcc() is None:
        print("nvcc not found: nothing to measure")
        return
    kernels = module_parts.unique(resnet50_kernels(args.dtype, args.batch, args.sm_count))
    cores = module_parts.usable_cores()
    counts = [int(j) for j in args.jobs.split(",") if j] or sorted({2, cores})
    print(f"ResNet-50 {args.dtype} b{args.batch}: {len(kernels)} kernels, "
          f"{sum(len(k.source) for k in kernels)} characters; {cores} usable cores "
          f"(load {os.getloadavg()[0]:.1f}); default split: {module_parts.part_count(kernels)} "
          f"parts")
    print("| parts | wall s | nvcc CPU s | slowest part: wall s | its CPU s | largest part chars |")
    print("|---|---|---|---|---|---|")
    single = compile_cold(kernels, 1)
    rows = [single] + [compile_cold(kernels, c, args.one_at_a_time) for c in counts if c > 1]
    for r in rows:
        part_cpu = f"{r['slowest'][1]:.2f}" if r["alone"] else "-"
        print(f"| {r['parts']} | {r['wall']:.2f} | {r['cpu']:.2f} | {r['slowest'][0]:.2f} "
              f"| {part_cpu} | {r['chars']} |")
    want = module_parts.kernel_symbols(single["cubins"][0])
    for r in rows[1:]:
        got = [module_parts.kernel_symbols(c) for c in r["cubins"]]
        union = set().union(*got)
        twice = sum(len(g) for g in got) - len(union)
        print(f"{r['parts']} parts: {len(union)} of {len(want)} kernels, "
              f"{len(want - union)} missing, {len(union - want)} extra, {twice} defined twice")


if __name__ == "__main__":
    main()
