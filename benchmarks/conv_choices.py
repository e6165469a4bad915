"""What each convolution call of ResNet-20's training step costs in cuDNN and in the generated
branch, and which one the program runs (``cuda/conv_choice``): both timed as CUDA graph replays,
the best of two rounds, while the step binds; then the step's median time by CUDA events.

    PYTHONPATH=. python3 benchmarks/conv_choices.py [--dtype float32|bfloat16] [--steps 30]

bfloat16 is the AMP step of ``amp_step.py``. One table row per distinct call (kind, input and
output channels, spatial size, kernel, stride): how many calls of the step it stands for, the
two times in microseconds, and the branch kept ("generated" only when 10% faster). The
generated branch of a narrow channels-last call is the direct tensor-core kernels of
``kernels_conv_mma`` where they fit (column "direct"), else im2col + GEMM.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.amp_step import RESNET_BATCH, bind, narrow_symbol, resnet_symbol  # noqa: E402
from benchmarks.common import cuda_median_ms, torch_fp32  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dtype", choices=("float32", "bfloat16"), default="bfloat16")
    ap.add_argument("--steps", type=int, default=30)
    args = ap.parse_args()
    torch_fp32()  # the events' stream (as amp_step)
    from symgraph.runtime.cuda import conv_choice
    from symgraph.runtime.cuda.actions import Kernel
    rows: dict[tuple, list] = {}
    choose = conv_choice.choose

    def logged(act: Any, plan_of: Any, time_branch: Any, identity: Any = None) -> tuple:
        times: list[float] = []
        got = choose(act, plan_of, lambda branch: times.append(time_branch(branch)) or times[-1],
                     identity)
        c = act.primary[0]
        g = c.geometry
        direct = any(isinstance(a, Kernel) and "conv_mma" in a.kernel.name for a in act.fallback)
        key = (c.kind, g.c, g.filters, f"{g.h}x{g.w}", g.kh, g.sh, direct)
        row = rows.setdefault(key, [0, float("inf"), float("inf"), set()])
        row[0] += 1
        if times:
            row[1] = min(row[1], *times[0::2])
            row[2] = min(row[2], *times[1::2])
        row[3].add("generated" if got is act.fallback else "cuDNN")
        return got

    conv_choice.choose = logged
    sym = resnet_symbol() if args.dtype == "float32" else narrow_symbol(resnet_symbol())[0]
    exe = bind(sym, (RESNET_BATCH, 3, 32, 32), False)
    ms = cuda_median_ms(lambda: exe.train_step(), args.steps)
    print(f"ResNet-20 b{RESNET_BATCH} {args.dtype} training step: {ms:.3f} ms\n")
    print("| call | C | F | HxW | kernel | stride | direct | calls | cuDNN us | generated us | kept |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for (kind, c, f, hw, k, s, direct), (n, lib, gen, kept) in sorted(rows.items(), key=str):
        print(f"| {kind} | {c} | {f} | {hw} | {k} | {s} | {'yes' if direct else 'no'} | {n} | "
              f"{lib * 1000:.1f} | {gen * 1000:.1f} | {' / '.join(sorted(kept))} |")


if __name__ == "__main__":
    main()
