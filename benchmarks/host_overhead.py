"""Host (Python) overhead of one training step: seed 000's network with a tiny batch, so the
numpy work is negligible on the CPU and the GPU work is negligible beside the host time.

Usage: python benchmarks/host_overhead.py [--ctx cpu|gpu] [--batch 1] [--steps 200]
       [--repeats 5] [--profile gluon|hybrid|module] [--frontend]
On the CPU the default widths are tiny (same ops, same calls), on the GPU the seed's.
Columns: the seed's Gluon loop body (record, net, loss, backward, ``trainer.step``), the same
network as a hybridized ``HybridBlock``, and ``Module.forward_backward_update``. Each prints the
fastest over ``--repeats`` of the mean microseconds per step over ``--steps`` steps (wall time
synchronised at the end of each repeat on the GPU; this process's CPU time on the CPU, which
other processes on a shared machine disturb less). ``--profile`` runs one column under
cProfile and prints the top functions by own time, per step. ``--frontend`` (CPU) replays
each numpy kernel's first results instead of computing them and skips the optimizer's numpy
arithmetic: what is left is the Python work of the step (tracing, cache key, executor and
Trainer bookkeeping), the part that the GPU path also pays on the host.
"""
from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import sys
import time
from pathlib import Path
from typing import Callable, Optional

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import symgraph as mx  # noqa: E402
from symgraph import gluon, nd  # noqa: E402
from symgraph.gluon import nn  # noqa: E402

from benchmarks.gluon_step import SimpleCNN, seed_batch, seed_loop_body  # noqa: E402
from tests.gluon.seed_programs import seed_network  # noqa: E402


SEED_WIDTHS = (32, 64, 128)
TINY_WIDTHS = (2, 2, 4)  # the same ops and calls; the numpy work on the CPU becomes negligible


def _layers(block: gluon.Block, widths: tuple) -> None:
    with block.name_scope():
        block.conv1 = nn.Conv2D(widths[0], kernel_size=3, strides=1, padding=1)
        block.conv2 = nn.Conv2D(widths[1], kernel_size=3, strides=1, padding=1)
        block.fc1 = nn.Dense(widths[2])
        block.fc2 = nn.Dense(10)


class TinyCNN(SimpleCNN):
    """Seed 000's ``Block`` (its ``forward``) with the channel widths ``widths``."""

    def __init__(self, widths: tuple) -> None:
        gluon.Block.__init__(self)
        _layers(self, widths)


class HybridCNN(seed_network(hybrid=True)):
    """Seed 000's network as a ``HybridBlock`` (its ``hybrid_forward``; hybridized before use)
    with the channel widths ``widths``."""

    def __init__(self, widths: tuple = SEED_WIDTHS) -> None:
        gluon.HybridBlock.__init__(self)
        _layers(self, widths)


def _data(batch: int, ctx: mx.Context) -> tuple:
    x, y = seed_batch(batch)
    return nd.array(x, ctx), nd.array(y, ctx, dtype=np.int32)


def gluon_step(batch: int, ctx: mx.Context, hybrid: bool, widths: tuple) -> Callable[[], None]:
    """The seed's loop body on a ``Block`` (or a hybridized ``HybridBlock``)."""
    data_in, label_in = _data(batch, ctx)
    net = HybridCNN(widths) if hybrid else TinyCNN(widths)
    net.initialize(ctx=ctx)
    if hybrid:
        net.hybridize()
    return seed_loop_body(net, data_in, label_in, ctx)


def _symbol(widths: tuple) -> mx.sym.Symbol:
    """Seed 000's symbol (``models/simple_cnn``'s layers) with the channel widths ``widths``."""
    sym = mx.sym
    x = sym.var("data")
    for i, c in ((1, widths[0]), (2, widths[1])):
        x = sym.Activation(sym.Convolution(x, kernel=(3, 3), pad=(1, 1), num_filter=c,
                                           name=f"conv{i}"), act_type="relu")
        x = sym.Pooling(x, pool_type="max", kernel=(2, 2), stride=(2, 2))
    x = sym.Activation(sym.FullyConnected(sym.flatten(x), num_hidden=widths[2], name="fc1"),
                       act_type="relu")
    return sym.SoftmaxOutput(sym.FullyConnected(x, num_hidden=10, name="fc2"), name="softmax")


def module_step(batch: int, ctx: mx.Context, widths: tuple) -> Callable[[], None]:
    """``Module.forward_backward_update`` on the seed's symbol."""
    x, y = _data(batch, ctx)
    mod = mx.mod.Module(_symbol(widths), context=ctx)
    mod.bind(data_shapes=[("data", x.shape)], label_shapes=[("softmax_label", (batch,))])
    mod.init_params(mx.init.Uniform(0.07))
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.01})
    data_batch = mx.io.DataBatch([x], [y.astype(np.float32)])
    return lambda: mod.forward_backward_update(data_batch)


def us_per_step(step: Callable[[], None], steps: int, repeats: int,
                clock: Callable[[], float] = time.perf_counter) -> float:
    """Fastest over ``repeats`` of the mean microseconds per step over ``steps`` steps (the
    fastest: on a shared machine the others measure the neighbours)."""
    for _ in range(3):
        step()
    nd.waitall()
    means = []
    for _ in range(repeats):
        t0 = clock()
        for _ in range(steps):
            step()
        nd.waitall()
        means.append((clock() - t0) / steps * 1e6)
    return float(np.min(means))


def profile(step: Callable[[], None], steps: int, top: int = 30) -> None:
    """cProfile ``steps`` steps; print the ``top`` functions by own time."""
    for _ in range(3):
        step()
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(steps):
        step()
    nd.waitall()
    prof.disable()
    pstats.Stats(prof).sort_stats(os.environ.get("SORT", "tottime")).print_stats(top)


def frontend_only() -> None:
    """Replace the numpy backend's kernels by a replay of their first results, and the numpy
    optimizer arithmetic by nothing (the values go stale; only the host work is measured)."""
    from symgraph.runtime.backend import numpy_backend
    from symgraph.training import optimizer
    first: dict = {}
    compute = numpy_backend.NumpyProgram._step

    def replay(self, env, k, ctx) -> None:  # noqa: ANN001
        got = first.get((id(self), k))
        if got is None:
            compute(self, env, k, ctx)
            got = first[id(self), k] = [env[s] for s in self._kernels[k][3]]
        for slot, value in zip(self._kernels[k][3], got):
            env[slot] = value
    numpy_backend.NumpyProgram._step = replay
    optimizer.Optimizer._apply = lambda self, *args: None  # (weight, grad, state, scalars, index)


def main(argv: Optional[list] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ctx", choices=("cpu", "gpu"), default="cpu")
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--widths", type=int, nargs=3, default=None,
                        help="conv1, conv2, fc1 widths (default: tiny on the CPU, the seed's "
                        "32 64 128 on the GPU)")
    parser.add_argument("--profile", choices=("gluon", "hybrid", "module"), default=None)
    parser.add_argument("--frontend", action="store_true",
                        help="CPU: measure the Python host work only (see the docstring)")
    args = parser.parse_args(argv)
    if args.frontend:
        frontend_only()
    ctx = mx.gpu(0) if args.ctx == "gpu" else mx.cpu()
    w = tuple(args.widths or (SEED_WIDTHS if args.ctx == "gpu" else TINY_WIDTHS))
    makers = {"gluon": lambda: gluon_step(args.batch, ctx, False, w),
              "hybrid": lambda: gluon_step(args.batch, ctx, True, w),
              "module": lambda: module_step(args.batch, ctx, w)}
    if args.profile:
        profile(makers[args.profile](), args.steps)
        return
    print(f"context: {ctx}; batch {args.batch}; widths {w}; "
          f"{args.steps} steps x {args.repeats} repeats"
          + ("; host work only (--frontend)" if args.frontend else ""))
    print("| Gluon us/step | Gluon hybridized us/step | Module us/step |")
    print("|---|---|---|")
    clock = time.perf_counter if args.ctx == "gpu" else time.process_time
    cols = [us_per_step(makers[k](), args.steps, args.repeats, clock) for k in makers]
    print("| " + " | ".join(f"{c:.1f}" for c in cols) + " |", flush=True)


if __name__ == "__main__":
    main()
