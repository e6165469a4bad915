"""Bind time against graph size: ``simple_bind`` of generated graphs on the CPU (numpy
backend: inference, passes, autodiff, lowering, memory plan, both schedules).

Three families, each at 10^3, 10^4, 10^5 nodes (counted in the forward graph, variables
included): a deep MLP (FullyConnected + relu layers), a long elementwise chain (one input
through alternating unary ops) and a wide fan-out (one input read by many branches summed with
add_n). The target is linear time, at most 0.1 ms per node at 10^5 nodes. Printed per node:
wall time, and the CPU time of this process (the figure to compare on a shared machine).

Usage: python benchmarks/bind_scale.py [--sizes 1000 10000 100000] [--families mlp chain fan]
       [--profile FAMILY:SIZE]   (cProfile of one bind, top 25 by cumulative time)
       [--passes FAMILY:SIZE]    (CPU ms of one bind's steps: inference, each pass, autodiff,
                                  lowering, memory plan)
"""
from __future__ import annotations

import argparse
import contextlib
import cProfile
import pstats
import sys
import time
from pathlib import Path
from typing import Any, Callable, Iterator

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import symgraph as sg  # noqa: E402


def deep_mlp(n_nodes: int) -> tuple[sg.sym.Symbol, dict]:
    """FullyConnected(8) + relu per layer: 5 nodes a layer (data, weight, bias, fc, relu)."""
    x = sg.sym.var("data")
    for i in range(max(1, (n_nodes - 1) // 4)):
        x = sg.sym.relu(sg.sym.FullyConnected(x, num_hidden=8, name=f"fc{i}"), name=f"r{i}")
    return x, {"data": (4, 8)}


def chain(n_nodes: int) -> tuple[sg.sym.Symbol, dict]:
    """One input through ``n_nodes - 1`` elementwise ops."""
    x = sg.sym.var("data")
    for i in range(n_nodes - 1):
        x = sg.sym.sigmoid(x, name=f"s{i}") if i % 2 else sg.sym.tanh(x, name=f"t{i}")
    return x, {"data": (16,)}


def fan_out(n_nodes: int) -> tuple[sg.sym.Symbol, dict]:
    """One input read by ``n_nodes - 2`` branches, summed by one add_n."""
    x = sg.sym.var("data")
    branches = [sg.sym.sigmoid(x, name=f"b{i}") if i % 2 else sg.sym.exp(x, name=f"b{i}")
                for i in range(max(1, n_nodes - 2))]
    return sg.sym.add_n(*branches, name="total"), {"data": (16,)}


FAMILIES: dict[str, Callable[[int], tuple]] = {"mlp": deep_mlp, "chain": chain, "fan": fan_out}


def bind_seconds(family: str, size: int) -> tuple[int, float, float]:
    """(forward-graph nodes, wall seconds, CPU seconds of this process) of one simple_bind
    with gradients. CPU time is what to compare on a shared machine: wall time there also
    counts the other jobs' turns on the cores."""
    net, shapes = FAMILIES[family](size)
    n = len(net.graph().nodes())
    t0, c0 = time.perf_counter(), time.process_time()
    net.simple_bind(sg.cpu(), grad_req="write", **shapes)
    return n, time.perf_counter() - t0, time.process_time() - c0


@contextlib.contextmanager
def timed_steps(spent: dict[str, float]) -> Iterator[None]:
    """Add the CPU seconds of each step of the binds run inside to ``spent``, by name: every
    pass of the pipelines, and the inference, autodiff, lowering and memory plan the stage
    and the executor call by name."""
    from symgraph.runtime import compile as stage, executor
    wrapped = [(stage, n) for n in ("gradient", "lower", "plan_memory", "merge_replicas")]
    wrapped += [(executor, n) for n in ("symbol_shapes", "symbol_types")]
    saved = [(m, n, getattr(m, n)) for m, n in wrapped] + [(stage, "run_pipeline",
                                                           stage.run_pipeline)]

    def clocked(name: str, fn: Callable) -> Callable:
        def run(*args: Any, **kwargs: Any) -> Any:
            c = time.process_time()
            try:
                return fn(*args, **kwargs)
            finally:
                spent[name] = spent.get(name, 0.0) + time.process_time() - c
        return run
    for m, n, fn in saved[:-1]:
        setattr(m, n, clocked(n, fn))
    run_pipeline = saved[-1][2]
    stage.run_pipeline = lambda graph, pipeline: run_pipeline(
        graph, [clocked(p.__name__, p) for p in pipeline])
    try:
        yield
    finally:
        for m, n, fn in saved:
            setattr(m, n, fn)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000])
    ap.add_argument("--families", nargs="+", default=list(FAMILIES), choices=list(FAMILIES))
    ap.add_argument("--profile", default=None, help="FAMILY:SIZE to profile instead")
    ap.add_argument("--passes", default=None, help="FAMILY:SIZE: CPU ms of each bind step")
    args = ap.parse_args()
    if args.passes:
        family, size = args.passes.split(":")
        spent: dict[str, float] = {}
        with timed_steps(spent):
            _, _, cpu = bind_seconds(family, int(size))
        for name, secs in [*spent.items(), ("whole bind", cpu)]:
            print(f"{name:18s} {1e3 * secs:9.1f} ms")
        return
    if args.profile:
        family, size = args.profile.split(":")
        cProfile.runctx("bind_seconds(family, int(size))", globals(),
                        {"family": family, "size": size}, "/tmp/bind_scale.prof")
        pstats.Stats("/tmp/bind_scale.prof").sort_stats("cumulative").print_stats(25)
        return
    print(f"{'family':8s} {'nodes':>8s} {'bind s':>9s} {'ms/node':>8s} {'cpu ms/node':>12s}")
    for family in args.families:
        for size in args.sizes:
            n, secs, cpu = bind_seconds(family, size)
            print(f"{family:8s} {n:8d} {secs:9.3f} {1e3 * secs / n:8.4f} {1e3 * cpu / n:12.4f}",
                  flush=True)


if __name__ == "__main__":
    main()
