"""Memory planning (analysis): ``Schedule -> MemoryPlan``.

Requires: a lowered :class:`~symgraph.compiler.schedule.Schedule` (steps in run order, shapes, dtypes).
Guarantees, for the :class:`~symgraph.compiler.schedule.MemoryPlan` it returns:

* every slot a step writes gets a byte offset in one arena, aligned to ``ALIGN``; variables
  (bound arrays) and views (``schedule.aliases``) get none: a read of a view is a read of the
  slot that owns its bytes, which therefore lives as long as any view of it is read;
* two slots share bytes only if their lifetimes [first write, last read] do not overlap, or an
  elementwise step writes an output over an input of the same shape and dtype that dies at that
  very step (``inplace``; only inputs the op reads elementwise, ``OpDef.expr`` or
  ``OpDef.extra["elementwise_inputs"]``);
* slots the executor reads after a phase (graph outputs: forward outputs, aux updates,
  gradients) and forward values the backward phase reads live to the end of the schedule, so
  ``backward()`` may run again on the same forward and nothing it reads has been reused;
* reuse is best fit over a free list that coalesces neighbours; ``naive_bytes`` is the sum of
  all slot sizes (what one buffer per value costs).
"""
from __future__ import annotations

from math import prod
from typing import Iterable

from . import passes
from ..core.registry import get_op
from .schedule import MemoryPlan, Schedule, Step

ALIGN = 256


def slot_bytes(schedule: Schedule, slot: int) -> int:
    """Size of ``slot`` rounded up to ``ALIGN`` (at least one block, so offsets stay distinct)."""
    raw = prod(schedule.shapes[slot]) * schedule.dtypes[slot].itemsize
    return max(ALIGN, -(-raw // ALIGN) * ALIGN)


def lifetimes(schedule: Schedule) -> tuple[dict[int, int], dict[int, int]]:
    """First and last step index of every slot a step writes (see module docstring)."""
    first: dict[int, int] = {}
    last: dict[int, int] = {}
    n, nf = len(schedule.steps), schedule.n_forward_steps
    root = schedule.aliases
    for k, st in enumerate(schedule.steps):
        for s in st.outputs:
            first[s] = last[s] = k
        for s in st.inputs:
            s = root.get(s, s)
            if s in first:
                last[s] = k
    for s in schedule.outputs:
        s = root.get(s, s)
        if s in first:
            last[s] = n
    for s, k in first.items():
        if k < nf <= last[s]:
            last[s] = n
    return first, last


def _elementwise_inputs(step: Step) -> Iterable[int]:
    """The inputs ``step`` reads elementwise (a range or tuple: asked once per step and
    iterated once per output)."""
    opdef = get_op(step.node.op)
    if opdef.expr is not None:
        return range(len(step.inputs))
    rule = opdef.extra.get("elementwise_inputs")
    if rule is None:
        return ()
    found = rule(step.node.attrs)
    return found if isinstance(found, (range, tuple)) else tuple(found)


class _Arena:
    """Best-fit allocator over a free list of (offset, size) blocks, sorted by offset."""

    def __init__(self) -> None:
        self.free: list[list[int]] = []
        self.top = 0

    def alloc(self, size: int) -> int:
        fits = [b for b in self.free if b[1] >= size]
        if fits:
            b = min(fits, key=lambda blk: blk[1])
            off = b[0]
            b[0], b[1] = b[0] + size, b[1] - size
            if b[1] == 0:
                self.free.remove(b)
            return off
        if self.free and sum(self.free[-1]) == self.top:
            off = self.free.pop()[0]
        else:
            off = self.top
        self.top = off + size
        return off

    def release(self, off: int, size: int) -> None:
        i = 0
        while i < len(self.free) and self.free[i][0] < off:
            i += 1
        self.free.insert(i, [off, size])
        if i + 1 < len(self.free) and sum(self.free[i]) == self.free[i + 1][0]:
            self.free[i][1] += self.free.pop(i + 1)[1]
        if i > 0 and sum(self.free[i - 1]) == self.free[i][0]:
            self.free[i - 1][1] += self.free.pop(i)[1]


def _inplace_source(schedule: Schedule, st: Step, k: int, out: int, last: dict[int, int],
                    offset: dict[int, int], taken: set[int], elementwise: Iterable[int]) -> int:
    """An input slot ``out`` may overwrite at step ``k`` (``elementwise``: the step's inputs
    read elementwise), or -1."""
    for i in elementwise:
        s = st.inputs[i]
        if s in offset and s not in taken and last[s] == k \
                and schedule.shapes[s] == schedule.shapes[out] \
                and schedule.dtypes[s] == schedule.dtypes[out] \
                and st.inputs.count(s) == 1:
            return s
    return -1


def memory_plan(schedule: Schedule) -> MemoryPlan:
    """Place every intermediate slot of ``schedule`` in one arena."""
    first, last = lifetimes(schedule)
    dying: dict[int, list[int]] = {}
    for s, k in last.items():
        dying.setdefault(k, []).append(s)
    arena, offset, inplace = _Arena(), {}, {}
    size_of: dict[int, int] = {}  # slot -> slot_bytes, asked up to three times per slot
    for k, st in enumerate(schedule.steps):
        taken: set[int] = set()
        elementwise = _elementwise_inputs(st)  # (once per step: a fused step has many outputs)
        for out in st.outputs:
            src = _inplace_source(schedule, st, k, out, last, offset, taken, elementwise)
            if src >= 0:
                taken.add(src)
                offset[out], inplace[out] = offset[src], src
            else:
                size = size_of[out] = slot_bytes(schedule, out)
                offset[out] = arena.alloc(size)
        for s in dying.get(k, ()):
            if s not in taken:
                size = size_of.get(s)
                arena.release(offset[s], slot_bytes(schedule, s) if size is None else size)
    naive = sum([size_of.get(s) or slot_bytes(schedule, s) for s in first])
    return MemoryPlan(offset, arena.top, naive, inplace)


def freed_after(schedule: Schedule, plan: MemoryPlan) -> list[list[int]]:
    """For each step, the slots whose bytes hold nothing live once it has run (for poisoning)."""
    _, last = lifetimes(schedule)
    donated = set(plan.inplace.values())
    out: list[list[int]] = [[] for _ in schedule.steps]
    for s, k in last.items():
        if k < len(schedule.steps) and s not in donated:
            out[k].append(s)
    return out


def plan_memory(schedule: Schedule) -> MemoryPlan | None:
    """The memory plan of a lowered schedule, or None when passes are off."""
    return memory_plan(schedule) if passes.ENABLED else None
