"""Graph-pass report on the seed CNN's training graph (forward + backward).

    python benchmarks/passes_report.py [--batch 64] [--repeat 7] [--mlp]

Prints the schedule length with every pass off vs on, the planned peak intermediate memory vs
the naive sum (one buffer per value of the unoptimised graph), and the compile time of the
training graph (passes + lowering + memory plan, median of ``--repeat`` runs) and one numpy
training step with passes off and on. The CNN is
conv3x3x32 pad1 - relu - maxpool2 - conv3x3x64 pad1 - relu - maxpool2 - flatten - fc128 - relu -
fc10 - SoftmaxOutput on 1x28x28 images; ``--mlp`` (or a tree without Convolution) uses an MLP.
"""
from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

import numpy as np

import symgraph as sg
import symgraph.runtime.executor as executor_mod
import symgraph.compiler.passes as P
from symgraph.compiler.memory_plan import memory_plan
from symgraph.core.registry import has_op
from symgraph.compiler.schedule import lower


def cnn() -> Any:
    s = sg.sym
    net = s.var("data")
    net = s.Convolution(net, kernel=(3, 3), num_filter=32, pad=(1, 1), name="conv1")
    net = s.Pooling(s.Activation(net, act_type="relu"), kernel=(2, 2), stride=(2, 2),
                    pool_type="max", name="pool1")
    net = s.Convolution(net, kernel=(3, 3), num_filter=64, pad=(1, 1), name="conv2")
    net = s.Pooling(s.Activation(net, act_type="relu"), kernel=(2, 2), stride=(2, 2),
                    pool_type="max", name="pool2")
    net = s.Activation(s.FullyConnected(s.Flatten(net), num_hidden=128, name="fc1"),
                       act_type="relu")
    net = s.FullyConnected(net, num_hidden=10, name="fc2")
    return s.SoftmaxOutput(net, s.var("softmax_label"), name="softmax")


def mlp() -> Any:
    s = sg.sym
    net = s.Activation(s.FullyConnected(s.var("data"), num_hidden=128, name="fc1"),
                       act_type="relu")
    net = s.Activation(s.FullyConnected(net, num_hidden=64, name="fc2"), act_type="relu")
    net = s.FullyConnected(net, num_hidden=10, name="fc3")
    return s.SoftmaxOutput(net, s.var("softmax_label"), name="softmax")


def bind(sym: Any, batch: int, enabled: bool) -> tuple[Any, Any]:
    """Bind with passes on or off; also capture the training graph before the passes."""
    captured = []
    original = executor_mod.run_pipeline

    def spy(graph, pipeline):
        captured.append(graph)
        return original(graph, pipeline)
    executor_mod.run_pipeline, P.ENABLED = spy, enabled
    try:
        # As Module binds for training: gradients for parameters, none for data and label.
        reqs = {n: "write" for n in sym.list_arguments() if n not in ("data", "softmax_label")}
        exe = sym.simple_bind(sg.cpu(), grad_req=reqs, data=(batch, 1, 28, 28),
                              softmax_label=(batch,))
    finally:
        executor_mod.run_pipeline, P.ENABLED = original, True
    return exe, captured[-1]  # the training graph is built second


def compile_time(graph: Any, n_forward: int, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        sch = lower(P.run_pipeline(graph, P.OPTIMIZE_PIPELINE), n_forward)
        memory_plan(sch)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def step_ms(exe: Any, repeat: int) -> float:
    """Median wall time of one forward(is_train=True) + backward() on the numpy backend."""
    rng = np.random.default_rng(0)
    for name, arr in exe.arg_dict.items():
        arr[:] = rng.uniform(-0.1, 0.1, arr.shape).astype(arr.dtype)
    exe.arg_dict["softmax_label"][:] = rng.integers(0, 10, arr.shape[:1])
    times = []
    for _ in range(repeat + 1):
        t = time.perf_counter()
        exe.forward(is_train=True)
        exe.backward()
        times.append(time.perf_counter() - t)
    return statistics.median(times[1:]) * 1e3


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--mlp", action="store_true")
    a = ap.parse_args()
    use_cnn = not a.mlp and has_op("Convolution") and has_op("Pooling")
    sym = cnn() if use_cnn else mlp()
    name = "seed CNN" if use_cnn else "MLP 784-128-64-10 (Convolution not available)"
    off, graph = bind(sym, a.batch, enabled=False)
    on, _ = bind(sym, a.batch, enabled=True)
    s_off, s_on = off.schedule, on.schedule
    naive = memory_plan(s_off).naive_bytes
    plan_off = memory_plan(s_off).arena_bytes
    fused = sum(1 for st in s_on.steps if "members" in st.node.attrs)
    t = compile_time(graph, len(sym.list_outputs()), a.repeat)
    binds = []
    for _ in range(a.repeat):
        t0 = time.perf_counter()
        bind(sym, a.batch, enabled=True)
        binds.append(time.perf_counter() - t0)
    rows = [
        ("schedule steps, passes off", f"{len(s_off.steps)}"),
        ("schedule steps, passes on", f"{len(s_on.steps)} ({fused} fused) "
         f"-> {1 - len(s_on.steps) / len(s_off.steps):.0%} fewer"),
        ("naive intermediate bytes (off)", f"{naive:,}"),
        ("planned peak, passes off + plan", f"{plan_off:,} ({1 - plan_off / naive:.0%} less)"),
        ("planned peak, passes on", f"{s_on.plan.arena_bytes:,} "
         f"({1 - s_on.plan.arena_bytes / naive:.0%} less than naive)"),
        ("in-place steps (on)", f"{len(s_on.plan.inplace)}"),
        ("compile (passes+lower+plan), median", f"{t * 1e3:.1f} ms"),
        ("simple_bind, both programs, median", f"{statistics.median(binds) * 1e3:.1f} ms"),
        ("numpy training step off / on, median", f"{step_ms(off, a.repeat):.1f} ms / "
         f"{step_ms(on, a.repeat):.1f} ms"),
    ]
    print(f"{name}, training graph, batch {a.batch}")
    width = max(len(r[0]) for r in rows)
    for k, v in rows:
        print(f"  {k:<{width}}  {v}")


if __name__ == "__main__":
    main()
