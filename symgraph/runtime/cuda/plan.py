"""Pure-Python half of compiling a schedule for the GPU: memory plan, actions, module source.

Kept free of pycuda so that CI (no GPU) renders and nvcc-compiles exactly what the backend runs.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence
from math import prod

import numpy as np

from ...core.expr import inp
from ...compiler.schedule import MemoryPlan, Schedule
from ...compiler.scratch_plan import place_scratch, placed_top
from .codegen import Rendered, render_contiguous
from .compiler import module_source
from .actions import Choice, Copy, Kernel, Ref, Switch, flat_actions, step_context
from .lowering import lower_step
ALIGN = 256  # bytes; keeps every buffer 16-byte aligned for 16-byte packs (sg_pack)
ARENA_SCRATCH = 1 << 20
"""Bytes of a step's scratch from which it is placed in the arena (``scratch_plan``): the
few large workspaces (convolutions); small ones share a region, found without a search."""


def align(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


def trivial_plan(schedule: Schedule, skip: set = frozenset()) -> MemoryPlan:
    """One aligned region per intermediate slot, no reuse (until the planner's plan is given).

    Slots in ``skip`` share another slot's memory and get none of their own."""
    bound = set(schedule.variables.values()) | set(skip)
    offset, top = {}, 0
    for slot, (shape, dtype) in enumerate(zip(schedule.shapes, schedule.dtypes)):
        if slot in bound:
            continue
        offset[slot] = top
        top += align(prod(shape) * np.dtype(dtype).itemsize)
    return MemoryPlan(offset, top, top)


ACCUMULATE: dict[str, Rendered] = {
    t: render_contiguous("accumulate", [inp(0) + inp(1)], in_types=[t, t], out_types=[t])
    for t in ("float32", "float16", "bfloat16")}
"""``y = x0 + x1`` over contiguous arrays of each float dtype: ``grad_req='add'`` stores."""


@dataclass
class LoweredProgram:
    plan: MemoryPlan
    actions: list[list]      # per schedule step
    scratch_bytes: int       # workspace shared by all steps, placed after the arena
    source: str              # the CUDA module of this program, as one translation unit
    alias: list[tuple[int, int]]  # (slot, slot whose memory it shares), in step order
    key_steps: list[int]     # key k (``Ref("key", k)``) is refreshed before step key_steps[k]
    state_bytes: int = 0     # zeroed once, kept between runs (``StepCtx.new_state``)
    kernels: tuple = ()      # the Rendered kernels of ``source`` (``module_parts.split``)
    arena_bytes: int = 0     # the plan's arena and the scratch placed in it (scratch_plan)


def _alias_copies(schedule: Schedule, actions: list[list]) -> list[tuple[int, int]]:
    """Without a planner's plan nothing is ever overwritten, so a pure copy (Reshape, Flatten,
    identity...) can share its input's memory instead of moving bytes: its actions are dropped."""
    alias = []
    for k, (st, acts) in enumerate(zip(schedule.steps, actions)):
        if len(acts) == 1 and isinstance(acts[0], Copy) and acts[0].src.kind == "slot" \
                and acts[0].dst == Ref("slot", st.outputs[0]):
            alias.append((st.outputs[0], acts[0].src.index))
            actions[k] = []
    return alias


def _shared_refs(value: Any) -> bool:
    """Whether an action (or a field of one) reads the shared scratch region."""
    if isinstance(value, Ref):
        return value.kind == "scratch"
    if isinstance(value, (tuple, list)):
        return any(_shared_refs(v) for v in value)
    fields = getattr(value, "__dataclass_fields__", None)
    return fields is not None and not isinstance(value, Rendered) and \
        any(_shared_refs(getattr(value, f)) for f in fields)


def _chooses(acts: Sequence[Any]) -> bool:
    """Whether a step decides between branches by timing them (a ``Choice``): the timing runs
    when the program is prepared, before earlier steps free the arena bytes the step would
    use, so such a step keeps its scratch in the shared region."""
    return any(isinstance(a, Choice) or isinstance(a, Switch) and _chooses(a.train + a.infer)
               for a in acts)


def _place_large_scratch(schedule: Schedule, actions: list[list], sizes: dict[int, int],
                         sm_count: int) -> tuple[int, int]:
    """Lower again, with their scratch in the arena's free bytes (``scratch_plan``), the steps
    of ``sizes`` (of the planner's plan): (the arena's end with them, the shared scratch a
    step still needs: one whose lowering does not pass the placement on)."""
    plan = schedule.plan
    at = place_scratch(schedule, plan, sizes)
    shared = 0
    for k, base in at.items():
        actions[k] = lower_step(step_context(schedule.steps[k], schedule.shapes,
                                             schedule.dtypes, sm_count, [], [], [], base))
        if _shared_refs(actions[k]):
            shared = max(shared, sizes[k])
    return max(plan.arena_bytes, placed_top(at, sizes)), shared


def lower_schedule(schedule: Schedule, sm_count: int) -> LoweredProgram:
    """Lower every step and gather all generated kernels into one module source. Scratch of
    ``ARENA_SCRATCH`` bytes or more goes where the arena has room at its step; the rest
    shares one workspace after the arena."""
    actions, scratch_bytes, keys, key_steps, state = [], 0, [], [], []
    large: dict[int, int] = {}
    for k, st in enumerate(schedule.steps):
        scratch: list[int] = []
        n_keys, n_state = len(keys), len(state)
        actions.append(lower_step(step_context(st, schedule.shapes, schedule.dtypes, sm_count,
                                               scratch, keys, state)))
        if sum(scratch) >= ARENA_SCRATCH and len(keys) == n_keys and len(state) == n_state \
                and schedule.plan is not None and not _chooses(actions[-1]):
            large[k] = sum(scratch)  # (a step making keys or state is lowered once only)
        else:
            scratch_bytes = max(scratch_bytes, sum(scratch))
        key_steps += [k] * (len(keys) - len(key_steps))
    # Views (schedule.aliases) point at the bytes of the slot that owns them.
    alias: list[tuple[int, int]] = list(schedule.aliases.items())
    plan = schedule.plan
    if plan is None:
        alias += _alias_copies(schedule, actions)
        plan = trivial_plan(schedule, {a for a, _ in alias})
    arena = plan.arena_bytes
    if large:
        arena, shared = _place_large_scratch(schedule, actions, large, sm_count)
        scratch_bytes = max(scratch_bytes, shared)
    kernels = [a.kernel for acts in actions for a in flat_actions(acts) if isinstance(a, Kernel)]
    kernels += list(ACCUMULATE.values())
    return LoweredProgram(plan, actions, scratch_bytes, module_source(kernels),
                          alias, key_steps, sum(state), tuple(kernels), arena)


def segments(has_host: list[bool], start: int, stop: int) -> list[tuple[int, int, bool]]:
    """``[start, stop)`` cut into maximal runs of device-only steps and single host steps
    (a custom op's Python, a host stopgap), as ``(begin, end, is_host)``: the device runs are
    captured and replayed as CUDA graphs, the host steps run between them."""
    out: list[tuple[int, int, bool]] = []
    k = start
    while k < stop:
        j = k + 1
        if not has_host[k]:
            while j < stop and not has_host[j]:
                j += 1
        out.append((k, j, has_host[k]))
        k = j
    return out
