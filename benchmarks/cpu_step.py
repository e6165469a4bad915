"""CPU training step (forward + backward through the executor) of the seed CNN, symgraph's
numpy backend beside PyTorch's CPU build (same machine, same run, same thread count).

Usage: python benchmarks/cpu_step.py [--batches 64 256] [--repeats 10] [--rounds 3]
       [--threads N] [--no-passes]
Prints one row per batch size: median milliseconds per step and the ratio symgraph / torch.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import symgraph as sg  # noqa: E402
from symgraph.interop.models.simple_cnn import build  # noqa: E402

SHAPES = {"conv1_weight": (32, 1, 3, 3), "conv1_bias": (32,), "conv2_weight": (64, 32, 3, 3),
          "conv2_bias": (64,), "fc1_weight": (128, 3136), "fc1_bias": (128,),
          "fc2_weight": (10, 128), "fc2_bias": (10,)}


def times_ms(fn: Callable[[], None], repeats: int) -> list[float]:
    """Wall times of ``repeats`` calls of ``fn`` in milliseconds, after one warm-up call."""
    fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return times


def make_inputs(batch: int, seed: int = 0) -> dict[str, np.ndarray]:
    """Random float32 weights, data and labels."""
    rng = np.random.default_rng(seed)
    arrays = {k: (rng.normal(size=s) * 0.1).astype(np.float32) for k, s in SHAPES.items()}
    arrays["data"] = rng.random((batch, 1, 28, 28), dtype=np.float32)
    arrays["softmax_label"] = rng.integers(0, 10, batch).astype(np.float32)
    return arrays


def symgraph_step(arrays: dict[str, np.ndarray]) -> Callable[[], None]:
    """One training step of the seed CNN on symgraph's CPU executor (no grad for the data)."""
    sym = build()
    req = {n: "null" if n in ("data", "softmax_label") else "write" for n in sym.list_arguments()}
    exe = sym.simple_bind(sg.cpu(), grad_req=req, data=arrays["data"].shape)
    for k, v in arrays.items():
        exe.arg_dict[k][:] = v

    def step() -> None:
        exe.forward(is_train=True)
        exe.backward()
    return step


def torch_step(arrays: dict[str, np.ndarray]) -> Callable[[], None]:
    """The same step in PyTorch (CPU), summed cross entropy as SoftmaxOutput's gradient."""
    import torch
    import torch.nn.functional as F
    p = {k: torch.tensor(arrays[k], requires_grad=True) for k in SHAPES}
    x = torch.tensor(arrays["data"])
    y = torch.tensor(arrays["softmax_label"]).long()

    def step() -> None:
        h = F.max_pool2d(F.relu(F.conv2d(x, p["conv1_weight"], p["conv1_bias"], padding=1)), 2)
        h = F.max_pool2d(F.relu(F.conv2d(h, p["conv2_weight"], p["conv2_bias"], padding=1)), 2)
        h = F.relu(F.linear(h.flatten(1), p["fc1_weight"], p["fc1_bias"]))
        loss = F.cross_entropy(F.linear(h, p["fc2_weight"], p["fc2_bias"]), y, reduction="sum")
        for t in p.values():
            t.grad = None
        loss.backward()
    return step


def measure(framework: str, batch: int, repeats: int, threads: int,
            extra: tuple[str, ...] = ()) -> list[float]:
    """Step times of one framework, measured in a fresh child process.

    A child per measurement keeps OpenBLAS's and PyTorch's idle worker threads (which spin
    for a while after each call) from stealing the cores of the other framework.
    """
    out = subprocess.run([sys.executable, __file__, "--worker", framework, "--batches",
                          str(batch), "--repeats", str(repeats), "--threads", str(threads), *extra],
                         capture_output=True, text=True,
                         env={**os.environ, "OPENBLAS_NUM_THREADS": str(threads),
                              "OMP_NUM_THREADS": str(threads)})
    if out.returncode != 0:
        if framework == "torch" and "No module named 'torch'" in out.stderr:
            return [float("nan")]
        raise RuntimeError(out.stderr)
    return [float(v) for v in out.stdout.split()]


def worker(framework: str, batch: int, repeats: int, threads: int) -> None:
    """Child process: print the step times of ``framework`` in milliseconds."""
    arrays = make_inputs(batch)
    if framework == "torch":
        import torch
        torch.set_num_threads(threads)
        step = torch_step(arrays)
    else:
        step = symgraph_step(arrays)
    print(" ".join(f"{t:.3f}" for t in times_ms(step, repeats)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, nargs="+", default=[64, 256])
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-passes", action="store_true",
                        help="symgraph.compiler.passes.ENABLED = False (no fusion, no memory plan)")
    parser.add_argument("--worker", choices=("symgraph", "torch"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.no_passes:
        import symgraph.compiler.passes
        symgraph.compiler.passes.ENABLED = False
    if args.worker:
        worker(args.worker, args.batches[0], args.repeats, args.threads)
        return
    print(f"seed CNN training step, CPU, {args.threads} threads, median of "
          f"{args.rounds} x {args.repeats} steps (rounds alternate the frameworks)"
          f"{', graph passes off' if args.no_passes else ''}")
    print(f"{'batch':>6} {'symgraph ms':>12} {'torch ms':>10} {'ratio':>7}")
    for batch in args.batches:
        ours: list[float] = []
        theirs: list[float] = []
        for _ in range(args.rounds):
            ours += measure("symgraph", batch, args.repeats, args.threads,
                            ("--no-passes",) if args.no_passes else ())
            theirs += measure("torch", batch, args.repeats, args.threads)
        a, b = float(np.median(ours)), float(np.median(theirs))
        print(f"{batch:>6} {a:>12.1f} {b:>10.1f} {a / b:>7.2f}")

if __name__ == "__main__":
    main()
