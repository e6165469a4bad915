"""Imperative (``sg.nd`` + ``sg.autograd``) training step beside the same step bound as a symbol
(the Executor ``Module`` uses), in one process: the seed CNN and a 784-128-64-10 MLP.

Usage: python benchmarks/imperative_step.py [--batches 64 256] [--repeats 20] [--rounds 3]
       [--ctx cpu|gpu] [--cpu-time]
Per batch size and model: median ms of the executor's ``train_step`` (forward + backward, one
run), of the traced step (record the forward, ``loss.backward()``: tracing + cache hit + the
same program), of the tracing alone, and the programs compiled after the first step (must be 0).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Callable

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import symgraph as sg  # noqa: E402
from symgraph.frontend import autograd
from symgraph.frontend import imperative  # noqa: E402

from benchmarks.common import host_median_ms  # noqa: E402

CNN = {"conv1_weight": (32, 1, 3, 3), "conv1_bias": (32,), "conv2_weight": (64, 32, 3, 3),
       "conv2_bias": (64,), "fc1_weight": (128, 3136), "fc1_bias": (128,),
       "fc2_weight": (10, 128), "fc2_bias": (10,)}
MLP = {"fc1_weight": (128, 784), "fc1_bias": (128,), "fc2_weight": (64, 128), "fc2_bias": (64,),
       "fc3_weight": (10, 64), "fc3_bias": (10,)}


def cnn(F: object, x: object, p: dict) -> object:
    """The seed's forward, written once for ``F`` = ``sg.nd`` or ``sg.sym``."""
    for i, c in ((1, 32), (2, 64)):
        x = F.relu(F.Convolution(x, p[f"conv{i}_weight"], p[f"conv{i}_bias"], kernel=(3, 3),
                                 pad=(1, 1), num_filter=c))
        x = F.Pooling(x, pool_type="max", kernel=(2, 2), stride=(2, 2))
    x = F.relu(F.FullyConnected(F.Flatten(x), p["fc1_weight"], p["fc1_bias"], num_hidden=128))
    return F.FullyConnected(x, p["fc2_weight"], p["fc2_bias"], num_hidden=10)


def mlp(F: object, x: object, p: dict) -> object:
    x = F.relu(F.FullyConnected(x, p["fc1_weight"], p["fc1_bias"], num_hidden=128))
    x = F.relu(F.FullyConnected(x, p["fc2_weight"], p["fc2_bias"], num_hidden=64))
    return F.FullyConnected(x, p["fc3_weight"], p["fc3_bias"], num_hidden=10)


def setup(model: str, batch: int, ctx: sg.Context) -> tuple[Callable, Callable, Callable]:
    """(executor step, imperative step, imperative trace only) on the same values."""
    shapes, net = (CNN, cnn) if model == "cnn" else (MLP, mlp)
    rng = np.random.default_rng(0)
    values = {k: (rng.normal(size=s) * 0.05).astype(np.float32) for k, s in shapes.items()}
    data_shape = (batch, 1, 28, 28) if model == "cnn" else (batch, 784)
    data = rng.random(data_shape, dtype=np.float32)
    label = rng.integers(0, 10, batch).astype(np.float32)

    syms = {k: sg.sym.var(k) for k in shapes}
    loss_sym = sg.sym.softmax_cross_entropy(net(sg.sym, sg.sym.var("data"), syms),
                                            sg.sym.var("label"))
    req = {n: "write" if n in shapes else "null" for n in loss_sym.list_arguments()}
    exe = loss_sym.simple_bind(ctx, grad_req=req, data=data_shape, label=(batch,))
    for k, v in {**values, "data": data, "label": label}.items():
        exe.arg_dict[k][:] = v

    params = {k: sg.nd.array(v, ctx) for k, v in values.items()}
    for p in params.values():
        p.attach_grad()
    x, y = sg.nd.array(data, ctx), sg.nd.array(label, ctx)

    def trace() -> object:
        with autograd.record():
            return sg.nd.softmax_cross_entropy(net(sg.nd, x, params), y)

    def step() -> None:
        trace().backward()

    def exe_step() -> None:
        exe.train_step()
    return exe_step, step, trace


CLOCK = {"clock": time.perf_counter}


def median_ms(fn: Callable[[], object], repeats: int, sync: Callable[[], None]) -> float:
    """Median ms of ``fn`` by the clock ``--cpu-time`` picks, after one warm-up call."""
    return host_median_ms(fn, repeats, 1, sync, CLOCK["clock"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, nargs="+", default=[64, 256])
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--ctx", choices=("cpu", "gpu"), default="cpu")
    parser.add_argument("--cpu-time", action="store_true",
                        help="this process's CPU time instead of wall time (a shared machine)")
    args = parser.parse_args()
    if args.cpu_time:
        CLOCK["clock"] = time.process_time
    ctx = sg.gpu() if args.ctx == "gpu" else sg.cpu()
    sync = (lambda: sg.nd.waitall()) if args.ctx == "cpu" else _gpu_sync
    print(f"{'model':>5} {'batch':>5} {'executor ms':>11} {'imperative ms':>13} {'ratio':>6} "
          f"{'trace ms':>8} {'compiles after step 1':>21}")
    for model in ("mlp", "cnn"):
        for batch in args.batches:
            exe_step, step, trace = setup(model, batch, ctx)
            step()
            before = imperative.compile_count()
            a, b, t = [], [], []
            for _ in range(args.rounds):
                a.append(median_ms(exe_step, args.repeats, sync))
                b.append(median_ms(step, args.repeats, sync))
                t.append(median_ms(trace, args.repeats, lambda: None))
            ea, ib = float(np.median(a)), float(np.median(b))
            print(f"{model:>5} {batch:>5} {ea:>11.3f} {ib:>13.3f} {ib / ea:>6.2f} "
                  f"{float(np.median(t)):>8.3f} {imperative.compile_count() - before:>21}")


def _gpu_sync() -> None:
    import pycuda.driver as drv
    from symgraph.runtime.cuda.runtime import activate
    with activate(0):
        drv.Context.synchronize()


if __name__ == "__main__":
    main()
