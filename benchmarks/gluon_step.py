"""Seed 000's Gluon training step beside the same step in ``Module``, PyTorch eager and PyTorch
with a CUDA graph, all in one process and on one context.

Usage: python benchmarks/gluon_step.py [--ctx gpu|cpu] [--batches 64 1024] [--repeats 30]
       [--rounds 5]
The Gluon step is the seed's loop body: ``as_in_context``, ``autograd.record()`` around
``net(data)`` and ``loss_fn``, ``loss.backward()`` (tracing + program-cache hit + one run) and
``trainer.step`` (SGD, lr 0.01; on the GPU the fused multi-tensor update). ``Module`` runs
``forward_backward_update`` on the seed's symbol with the same optimizer (on the GPU one
CUDA-graph replay with the fused update). PyTorch: the same network, ``zero_grad`` + forward +
backward + ``SGD.step``, eager and captured in one CUDA graph (TF32 off). Inputs already live on
the context in every column. Times are medians over ``--repeats`` steps after warm-up, by CUDA
events on the GPU and ``perf_counter`` on the CPU. "compiles" counts the programs symgraph's
imperative engine compiled after the first Gluon step (0 means every step was a cache hit).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Callable, Optional

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import symgraph as mx  # noqa: E402  (the seed's spelling)
from symgraph.frontend import autograd
from symgraph import gluon
from symgraph import nd  # noqa: E402

from benchmarks.common import (cuda_median_ms, host_median_ms, torch_cuda_graph,  # noqa: E402
                               torch_fp32, torch_seed_cnn)
from tests.gluon.seed_programs import seed_network  # noqa: E402


# Seed 000's network, defined by the seed's own text (tests/gluon/seed_programs.py).
SimpleCNN = seed_network()


def _sync(ctx: mx.Context) -> None:
    if ctx.device_type == "gpu":
        nd.waitall()  # computes pending arrays and synchronises every device symgraph used


def median_ms(fn: Callable[[], None], ctx: mx.Context, repeats: int, warm: int = 3) -> float:
    """Median milliseconds of ``fn``: CUDA events on the GPU (torch's), else wall time."""
    timer = cuda_median_ms if ctx.device_type == "gpu" and _torch() is not None \
        else host_median_ms
    return timer(fn, repeats, warm, lambda: _sync(ctx))


def _torch() -> Optional[object]:
    try:
        import torch
        return torch
    except ImportError:
        return None


def seed_batch(batch: int) -> tuple[np.ndarray, np.ndarray]:
    """Random images and labels of seed 000's shapes (the same for every column)."""
    rng = np.random.default_rng(0)
    x = rng.random((batch, 1, 28, 28), dtype=np.float32)
    y = rng.integers(0, 10, batch)
    return x, y


def seed_loop_body(net: gluon.Block, data_in: nd.NDArray, label_in: nd.NDArray,
                   ctx: mx.Context) -> Callable[[], None]:
    """Seed 000's training loop body on ``net`` (loss, SGD at lr 0.01), for one batch."""
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    trainer = gluon.Trainer(net.collect_params(), 'sgd', {'learning_rate': 0.01})
    batch = data_in.shape[0]

    def step() -> None:
        data = data_in.as_in_context(ctx)
        label = label_in.as_in_context(ctx)
        with autograd.record():
            output = net(data)
            loss = loss_fn(output, label)
        loss.backward()
        trainer.step(batch_size=batch)
    return step


def gluon_stepper(batch: int, ctx: mx.Context) -> Callable[[], None]:
    """The seed's loop body on a fresh net, run once (its program compiled)."""
    x, y = seed_batch(batch)
    data_in = nd.array(x, ctx)
    label_in = nd.array(y, ctx, dtype=np.int32)
    net = SimpleCNN()
    net.initialize(ctx=ctx)
    step = seed_loop_body(net, data_in, label_in, ctx)
    step()
    _sync(ctx)
    return step


def module_stepper(batch: int, ctx: mx.Context) -> Callable[[], None]:
    from symgraph.interop.models.simple_cnn import build
    x, y = seed_batch(batch)
    mod = mx.mod.Module(build(), context=ctx)
    mod.bind(data_shapes=[("data", x.shape)], label_shapes=[("softmax_label", (batch,))])
    mod.init_params(mx.init.Uniform(0.07))
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.01})
    data_batch = mx.io.DataBatch([nd.array(x, ctx)], [nd.array(y, ctx)])
    return lambda: mod.forward_backward_update(data_batch)


def torch_steppers(batch: int, ctx: mx.Context) -> list[Optional[Callable[[], None]]]:
    """[eager, CUDA graph] steps of zero_grad + forward + backward + SGD step; None where
    there is no such step (no torch; no graph on the CPU)."""
    torch = _torch()
    if torch is None:
        return [None, None]
    import torch.nn.functional as F
    dev = "cuda" if ctx.device_type == "gpu" else "cpu"
    model = torch_seed_cnn().to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = seed_batch(batch)
    xt, yt = torch.tensor(x, device=dev), torch.tensor(y, device=dev)

    def step() -> None:
        opt.zero_grad(set_to_none=False)
        F.cross_entropy(model(xt), yt).backward()
        opt.step()
    return [step, None if dev == "cpu" else torch_cuda_graph(step)]


def measure(batch: int, ctx: mx.Context, repeats: int, rounds: int) -> tuple[list, float, int]:
    """Medians over ``rounds`` of [Gluon, Module, eager, graph] (each round times every column
    in turn, ``repeats`` steps each: host-bound columns drift together within a process), the
    median of the rounds' eager/Gluon ratios, and the programs compiled after Gluon's first
    step."""
    steps = [gluon_stepper(batch, ctx), module_stepper(batch, ctx)] + torch_steppers(batch, ctx)
    before = mx.imperative.compile_count()
    times: list[list[float]] = [[] for _ in steps]
    for _ in range(rounds):
        for fn, col in zip(steps, times):
            col.append(median_ms(fn, ctx, repeats) if fn is not None else float("nan"))
    ratios = [e / g for e, g in zip(times[2], times[0])]
    return ([float(np.median(c)) for c in times], float(np.median(ratios)),
            mx.imperative.compile_count() - before)


def main(argv: Optional[list] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ctx", choices=("gpu", "cpu"), default=None)
    parser.add_argument("--batches", type=int, nargs="+", default=[64, 1024])
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    name = args.ctx or ("gpu" if mx.context.num_gpus() > 0 else "cpu")
    ctx = mx.gpu(0) if name == "gpu" else mx.cpu()
    torch = _torch()
    if torch is not None:
        torch_fp32(benchmark=False)
    print(f"context: {ctx}; PyTorch: {'not installed' if torch is None else torch.__version__}")
    print("\n| batch | Gluon ms/step | Module ms/step | Gluon/Module | PyTorch eager | "
          "PyTorch CUDA graph | eager/Gluon | compiles after step 1 |")
    print("|---|---|---|---|---|---|---|---|")
    for b in args.batches:
        (g, m, eager, graph), ratio, compiles = measure(b, ctx, args.repeats, args.rounds)
        print(f"| {b} | {g:.3f} | {m:.3f} | {g / m:.2f}x | {eager:.3f} | {graph:.3f} | "
              f"{ratio:.2f}x | {compiles} |", flush=True)


if __name__ == "__main__":
    main()
