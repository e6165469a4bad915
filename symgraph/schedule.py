"""Lowering: an optimised graph -> a :class:`Schedule`, the only thing an executor runs.

A schedule is an ordered list of steps over numbered value slots. Steps needed for the first
``n_forward`` graph outputs come first (the forward phase); the rest form the backward phase.
Shapes and dtypes come from the variables' declared ``__shape__``/``__dtype__``, so the graph is
self-describing and lowering needs nothing else. Both backends consume the same schedule.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np

from .base import ShapeError
from .graph import Entry, Graph, Node, topo_order
from .passes.infer_shape import infer_shapes
from .passes.infer_type import infer_types


@dataclass(frozen=True)
class Step:
    """Run ``node``'s op reading slots ``inputs``, writing slots ``outputs``."""

    node: Node
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]


@dataclass
class MemoryPlan:
    """Where every intermediate slot lives: a byte ``offset`` into one arena per executor.

    Slots absent from ``offset`` are bound arrays (variables) and need no arena space. Two slots
    may share bytes only when their lifetimes do not overlap (or an elementwise step writes its
    output over an input that dies there). Made by ``passes/memory_plan.py``.
    """

    offset: dict[int, int]
    arena_bytes: int
    naive_bytes: int
    inplace: dict[int, int] = field(default_factory=dict)  # output slot -> input slot it reuses

    def describe(self) -> str:
        saved = 1 - self.arena_bytes / self.naive_bytes if self.naive_bytes else 0.0
        return (f"memory plan: planned peak {self.arena_bytes} bytes, naive {self.naive_bytes} "
                f"bytes ({saved:.0%} less), {len(self.offset)} slots, "
                f"{len(self.inplace)} in place")


@dataclass
class Schedule:
    graph: Graph
    steps: list[Step]
    n_forward_steps: int
    slot_of: dict[Entry, int]
    shapes: list[tuple[int, ...]]
    dtypes: list[np.dtype]
    variables: dict[Node, int]
    outputs: list[int]
    plan: Optional[MemoryPlan] = None  # set when the memory planner ran
    info: dict = field(default_factory=dict)

    def describe(self) -> str:
        """One line per step: op, name, input and output slots with shapes (and arena offsets
        when planned); fused steps list their member ops; the memory plan's totals last."""
        offset = self.plan.offset if self.plan is not None else {}
        var_slots = set(self.variables.values())

        def slot(i: int) -> str:
            where = f"@{offset[i]}" if i in offset else ("(var)" if i in var_slots else "")
            return f"%{i}{self.shapes[i]}{where}"
        lines = []
        for k, st in enumerate(self.steps):
            phase = "fwd" if k < self.n_forward_steps else "bwd"
            lines.append(f"[{phase} {k:3d}] {st.node.op} {st.node.name}: "
                         f"{', '.join(map(slot, st.inputs))} -> {', '.join(map(slot, st.outputs))}")
            if "members" in st.node.attrs:
                lines.append(f"           members: {' -> '.join(st.node.attrs['members'])}")
        lines.append(f"{len(self.steps)} steps ({self.n_forward_steps} forward)")
        if self.plan is not None:
            lines.append(self.plan.describe())
        return "\n".join(lines)


def lower(graph: Graph, n_forward: Optional[int] = None, plan: Any = None) -> Schedule:
    """Number every entry, order the steps forward-phase first, attach shapes and dtypes."""
    n_forward = len(graph.outputs) if n_forward is None else n_forward
    shapes = infer_shapes(graph, {})
    dtypes = infer_types(graph, {})
    fwd = topo_order(graph.outputs[:n_forward])
    fwd_set = set(fwd)
    order = fwd + [n for n in graph.nodes() if n not in fwd_set]
    slot_of: dict[Entry, int] = {}
    slot_shapes: list = []
    slot_dtypes: list = []
    for node in order:
        for e in node.entries():
            if e not in shapes:
                raise ShapeError(f"{node.name} ({node.op}): shape of output {e.index} is unknown")
            slot_of[e] = len(slot_shapes)
            slot_shapes.append(shapes[e])
            slot_dtypes.append(dtypes[e])
    steps = [Step(n, tuple(slot_of[e] for e in n.inputs),
                  tuple(slot_of[e] for e in n.entries())) for n in order if not n.is_variable]
    n_fwd_steps = sum(1 for n in fwd if not n.is_variable)
    variables = {n: slot_of[Entry(n)] for n in order if n.is_variable}
    return Schedule(graph, steps, n_fwd_steps, slot_of, slot_shapes, slot_dtypes, variables,
                    [slot_of[e] for e in graph.outputs], plan)
