"""What the GPU program of ResNet-20's training step is made of, without a GPU: the step is
bound on the CPU with the CUDA backend's forward passes (``channel_last`` included, as when
cuDNN is there) and lowered (``cuda.plan.lower_schedule``, pure Python), then its actions are
counted by op and kind: generated kernels, cuDNN calls, GEMMs, copies (the library branch of
each ``Choice``, the training branch of each ``Switch``).

    PYTHONPATH=. python3 benchmarks/program_actions.py [--top 30] [--sm-count 132]

Prints one table per program (float32, AMP bfloat16) and their totals. Kernel counts are what
the per-kernel floor of a CUDA graph node multiplies (docs/performance.md).
"""
from __future__ import annotations

import argparse
import collections
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import symgraph as sg  # noqa: E402
from symgraph.runtime.cuda.actions import Kernel, flat_actions  # noqa: E402

from benchmarks.amp_step import RESNET_BATCH, narrow_symbol, resnet_symbol  # noqa: E402
from benchmarks.common import NO_INPUT_GRADS  # noqa: E402
from benchmarks.ir_fingerprint import cuda_lowering  # noqa: E402


def program_counts(sym: Any, sm_count: int) -> collections.Counter:
    """(op, action kind) -> count in the lowered training program of ``sym``."""
    with cuda_lowering(sm_count):  # the CUDA backend's passes, no device
        reqs = {n: NO_INPUT_GRADS.get(n, "write") for n in sym.list_arguments()}
        stage = sym.simple_bind(sg.cpu(), grad_req=reqs, data=(RESNET_BATCH, 3, 32, 32))._train
    counts: collections.Counter = collections.Counter()
    for st, acts in zip(stage.schedule.steps, stage.program.actions):
        for a in flat_actions(acts, "primary"):  # cuDNN's calls, in training
            kind = type(a).__name__
            if isinstance(a, Kernel):
                kind += " " + a.kernel.name.rsplit("_", 1)[0]
            counts[st.node.op, kind] += 1
    return counts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--top", type=int, default=30)
    ap.add_argument("--sm-count", type=int, default=132)
    args = ap.parse_args()
    programs = {"float32": resnet_symbol(), "AMP bfloat16": narrow_symbol(resnet_symbol())[0]}
    totals = {}
    for label, sym in programs.items():
        counts = program_counts(sym, args.sm_count)
        totals[label] = counts
        print(f"\n| {label}: op | action | count |\n|---|---|---|")
        for (op, kind), n in counts.most_common(args.top):
            print(f"| {op} | {kind} | {n} |")
    print("\n| program | actions | kernels | cuDNN calls |\n|---|---|---|---|")
    for label, counts in totals.items():
        kernels = sum(n for (_, k), n in counts.items() if k.startswith("Kernel"))
        conv = sum(n for (_, k), n in counts.items() if k == "ConvCall")
        print(f"| {label} | {sum(counts.values())} | {kernels} | {conv} |")


if __name__ == "__main__":
    main()
