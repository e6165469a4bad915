"""Placing a step's scratch in the arena's free bytes at that step (analysis):
``(Schedule, MemoryPlan, sizes) -> offsets``.

Why: a backend's step-local workspace (a convolution's unfolded input, split-K partials) lives
only while its step runs. Kept in a region of its own after the arena, it costs the largest
step's workspace on top of the arena's peak; placed where no slot is live at its step, it
costs nothing where the arena has room there (a forward convolution's workspace, early on).

Requires: a lowered schedule and its memory plan (``memory_plan.py``: offsets, lifetimes).
Guarantees: for each step ``k`` of ``sizes``, an offset such that ``[offset, offset +
sizes[k])`` overlaps no planned slot live at step ``k`` (its inputs and outputs included:
lifetimes are inclusive), aligned to ``ALIGN``; the lowest such offset (first fit), which may
lie past the arena's end (the program then allocates up to it: ``placed_top``).
"""
from __future__ import annotations

from typing import Mapping

from .memory_plan import ALIGN, lifetimes, slot_bytes
from .schedule import MemoryPlan, Schedule


def _first_fit(busy: list[tuple[int, int]], size: int) -> int:
    """The lowest aligned offset where ``size`` bytes overlap no ``(start, end)`` of ``busy``."""
    at = 0
    for start, end in sorted(busy):
        if start - at >= size:
            return at
        at = max(at, -(-end // ALIGN) * ALIGN)
    return at


def place_scratch(schedule: Schedule, plan: MemoryPlan,
                  sizes: Mapping[int, int]) -> dict[int, int]:
    """Step index -> arena offset of its ``sizes[step]`` bytes of scratch (module docstring).

    Example: a step whose scratch fits below the slots live there gets offset 0."""
    if not sizes:
        return {}
    first, last = lifetimes(schedule)
    placed = [(first[s], last[s], off, off + slot_bytes(schedule, s))
              for s, off in plan.offset.items() if s in first]
    out = {}
    for k, size in sizes.items():
        busy = [(lo, hi) for f, la, lo, hi in placed if f <= k <= la]
        out[k] = _first_fit(busy, size)
    return out


def placed_top(offsets: Mapping[int, int], sizes: Mapping[int, int]) -> int:
    """The end of the highest placed scratch (0 when none)."""
    return max([offsets[k] + sizes[k] for k in offsets], default=0)
