"""Profile training steps of a zoo model with sg.profiler: a Chrome-trace JSON (open it in
ui.perfetto.dev or chrome://tracing) and the aggregate table.

Usage: python benchmarks/profile_step.py [--model simple_cnn] [--ctx cpu|gpu]
       [--batch-size 64] [--steps 2] [--out trace.json]
The steps are run once untraced first (compilation, algorithm choice), then ``--steps`` times
with the profiler on. On the GPU each step is timed with CUDA events (no CUDA graph replay
while profiling); under ``nsys`` the steps are NVTX ranges when the ``nvtx`` package is there.
"""
from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import symgraph as sg  # noqa: E402


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", default="simple_cnn")
    p.add_argument("--ctx", choices=("cpu", "gpu"), default="cpu")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--steps", type=int, default=2)
    p.add_argument("--out", default="trace.json")
    args = p.parse_args()
    model = importlib.import_module(f"symgraph.interop.models.{args.model}")
    flat = model.RECIPE.get("flat", False)
    shape = (args.batch_size, 784) if flat else (args.batch_size, 1, 28, 28)
    mod = sg.mod.Module(model.build(), context=sg.gpu() if args.ctx == "gpu" else sg.cpu())
    mod.bind([("data", shape)], [("softmax_label", (args.batch_size,))])
    mod.init_params(sg.init.Xavier())
    mod.init_optimizer(optimizer_params={"learning_rate": 0.01, "momentum": 0.9})
    rng = np.random.default_rng(0)
    batch = sg.io.DataBatch([sg.nd.array(rng.random(shape).astype(np.float32))],
                            [sg.nd.array(rng.integers(0, 10, args.batch_size).astype(np.float32))])

    def step() -> None:
        mod.forward_backward(batch)
        mod.update()
        mod.get_outputs()[0].asnumpy()
    step()
    sg.profiler.set_config(filename=args.out, profile_all=True)
    sg.profiler.set_state("run")
    for _ in range(args.steps):
        step()
    sg.profiler.set_state("stop")
    print(sg.profiler.dumps())
    sg.profiler.dump()
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
