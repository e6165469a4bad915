"""cuDNN or the generated code, per convolution step: the choice of a :class:`Choice` action.

A convolution lowers to a ``Choice`` between library calls (cuDNN, ``primary``) and generated
kernels (``fallback``: the direct tensor-core kernels of ``kernels_conv_mma`` where they fit,
else im2col + GEMM). When cuDNN has a plan for every call, the two branches are timed on the
device as CUDA graph replays (each its best of two rounds) and the generated one is kept only
when it is clearly faster (``FALLBACK_MARGIN``) (``SYMGRAPH_CUDNN=1`` takes cuDNN without
timing; ``SYMGRAPH_CUDNN=0`` makes ``cudnn.available()`` false, so the fallback runs). cuDNN's
own engines are timed the same way (``fastest``). ``SYMGRAPH_AUTOTUNE=0`` takes cuDNN without
timing too; in the other modes the winner is remembered on disk (``tune_cache``), keyed by
the device, the libraries and the branches' calls and kernels (``signature``), so that a second
process times nothing. Kept apart from the program so that the policy reads in one place.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Optional

import pycuda.driver as drv

from ...core import config
from ...core.base import ExecutionError
from ...core.registry import RunCtx
from . import tune_cache
from .actions import Choice, ConvCall, Ref, flat_actions
from .codegen import Rendered
from .graphs import CudaGraph

BRANCHES = ("primary", "fallback")


def choose(act: Choice, plan_of: Callable[[ConvCall], Any],
           time_branch: Callable[[tuple], float],
           identity: Optional[Callable[[], dict]] = None) -> tuple:
    """The actions to run for ``act``: ``plan_of`` gives a call's cuDNN plan (None: cuDNN
    cannot), ``time_branch`` the milliseconds of running a branch's actions, ``identity``
    the device and libraries (``cudnn.identity``; None: nothing remembered on disk)."""
    conv = [a for a in act.primary if isinstance(a, ConvCall)]
    if not all(plan_of(a) is not None for a in conv):
        return act.fallback
    pol = tune_cache.policy()
    if config.get("SYMGRAPH_CUDNN") == "1" or pol.single:
        return act.primary

    def measure() -> str:
        branches = (act.primary, act.fallback)  # one noisy timing each flipped choices
        ms = best_of_rounds(2, lambda i: time_branch(branches[i]), ROUNDS)
        return "fallback" if ms[1] < ms[0] * (1.0 - FALLBACK_MARGIN) else "primary"
    if identity is None or not pol.cached:
        return getattr(act, measure())
    cache = tune_cache.shared()
    key = tune_cache.choice_key(identity(), "conv-branch", primary=signature(act.primary),
                                fallback=signature(act.fallback))
    got = cache.get(key)
    if got not in BRANCHES:  # absent, or a damaged entry: measured (again)
        got = measure()
        cache.put(key, got)
    return getattr(act, got)


def signature(acts: tuple) -> list:
    """What a branch's speed depends on: each action's type and fields (a kernel by its name,
    which hashes its source), without its buffer references (they differ between programs
    running the same calls)."""
    rows = []
    for a in flat_actions(acts):
        row: dict = {"type": type(a).__name__}
        for f in dataclasses.fields(a):
            v = getattr(a, f.name)
            if isinstance(v, Ref) or (isinstance(v, tuple) and any(isinstance(x, Ref) for x in v)):
                continue
            row[f.name] = v.name if isinstance(v, Rendered) else v
        rows.append(row)
    return rows


# The generated branch must win by this fraction, so that near ties do not flip between
# processes: with one eager timing each, ResNet-20's fp32 step took the fallback in 9-15 of its
# 62 convolution calls, differently in each process (3.34-3.48 ms; measured on an H100).
FALLBACK_MARGIN = 0.1
ROUNDS = 2


def graph_ms(record: Callable[[], None], stream: Any, reps: int = 5, launches: int = 3) -> float:
    """Milliseconds per call of ``record`` (work issued on ``stream``, not the default stream)
    as a CUDA graph replays it: ``reps`` calls captured into one graph, launched ``launches``
    times between two events after a warm-up launch. Timed eagerly, a small call's time is
    its host launch overhead (ResNet-20's cuDNN calls measured 10-45 us each where their
    kernels take a few), so candidates tied and the choice differed between processes; the
    program replays a graph too, so this is the time it pays. A call that fails, or cannot be
    captured, raises ExecutionError."""
    record()  # eagerly first: lazy module loads and first-call setup stay out of the capture
    graph = CudaGraph(stream.handle, lambda: [record() for _ in range(reps)])
    try:
        graph.launch()
        begin, end = drv.Event(), drv.Event()
        begin.record(stream)
        for _ in range(launches):
            graph.launch()
        end.record(stream)
        end.synchronize()
        return end.time_since(begin) / (launches * reps)
    finally:
        graph.destroy()


def time_ms(closures: list, stream: Any) -> float:
    """Milliseconds of one run of ``closures`` on ``stream``, replayed as a graph."""
    rc = RunCtx()

    def run() -> None:
        for fn in closures:
            fn(rc)
    return graph_ms(run, stream)


def fastest(n: int, launch: Callable[[int], None], stream: Any,
            rounds: int = 2) -> tuple[int, float]:
    """(index, milliseconds per run) of the fastest of ``n`` candidates, ``launch(i)``
    running candidate ``i`` once on ``stream``: each timed by ``graph_ms`` in ``rounds``
    rounds keeping each one's best (a choice that differs between processes costs more than
    the extra runs). A candidate that fails (ExecutionError) is never chosen."""
    def per_run(i: int) -> float:
        try:
            return graph_ms(lambda: launch(i), stream)
        except ExecutionError:
            return float("inf")
    best = best_of_rounds(n, per_run, rounds)
    k = min(range(n), key=best.__getitem__)
    return k, best[k]


def best_of_rounds(n: int, time_one: Callable[[int], float], rounds: int) -> list[float]:
    """Each of ``n`` candidates' best of ``rounds`` timings ``time_one(i)``, the candidates
    taking turns in each round (a slow moment of the device falls on one timing of each, not
    on every timing of one)."""
    best = [float("inf")] * n
    for _ in range(rounds):
        for i in range(n):
            best[i] = min(best[i], time_one(i))
    return best
