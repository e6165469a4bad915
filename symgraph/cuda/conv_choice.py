"""cuDNN or the generated code, per convolution step: the choice of a :class:`Choice` action.

A convolution lowers to a ``Choice`` between library calls (cuDNN, ``primary``) and generated
im2col + GEMM kernels (``fallback``). When cuDNN has a plan for every call, the two branches are
timed once on the device and the faster is kept (``SYMGRAPH_CUDNN=1`` takes cuDNN without
timing; ``SYMGRAPH_CUDNN=0`` makes ``cudnn.available()`` false, so the fallback runs). Kept apart
from the program so that the policy reads in one place.
"""
from __future__ import annotations

import os
from typing import Any, Callable

import pycuda.driver as drv

from ..registry import RunCtx
from .actions import Choice, ConvCall


def choose(act: Choice, plan_of: Callable[[ConvCall], Any],
           time_branch: Callable[[tuple], float]) -> tuple:
    """The actions to run for ``act``: ``plan_of`` gives a call's cuDNN plan (None: cuDNN
    cannot), ``time_branch`` the milliseconds of running a branch's actions."""
    conv = [a for a in act.primary if isinstance(a, ConvCall)]
    if not all(plan_of(a) is not None for a in conv):
        return act.fallback
    if os.environ.get("SYMGRAPH_CUDNN", "auto") == "1":
        return act.primary
    ms = [time_branch(branch) for branch in (act.primary, act.fallback)]
    return act.primary if ms[0] <= ms[1] else act.fallback


def time_ms(closures: list, stream: Any, reps: int = 3) -> float:
    """Milliseconds of ``reps`` runs of ``closures`` on ``stream``, after one warm-up run."""
    rc = RunCtx()
    for fn in closures:
        fn(rc)
    begin, end = drv.Event(), drv.Event()
    begin.record(stream)
    for _ in range(reps):
        for fn in closures:
            fn(rc)
    end.record(stream)
    end.synchronize()
    return end.time_since(begin)
