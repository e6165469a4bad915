"""Lowering: an optimised graph -> a :class:`Schedule`, the only thing an executor runs.

A schedule is an ordered list of steps over numbered value slots. Ops marked ``view`` (pure
reshapes) run no step: their output slot is an alias of the slot owning the bytes. Steps needed for the first
``n_forward`` graph outputs come first (the forward phase); the rest form the backward phase.
Shapes and dtypes come from the graph's types (``Graph.types``, carried from the bind's one
inference through every pass), or else from the variables' declared shapes and dtypes. Both backends consume the same schedule.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional, Sequence

import numpy as np

from ..core.base import ShapeError
from ..core.graph import VARIABLE, Entry, Graph, Node
from ..core.types.infer_shape import infer_shapes
from ..core.types.infer_type import infer_types
from ..core.registry import get_op
from ..core.types.table import TypeTable


@dataclass(frozen=True, slots=True)
class Step:
    """Run ``node``'s op reading slots ``inputs``, writing slots ``outputs``. (Slots: a
    schedule holds a step per graph node.)"""

    node: Node
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]


@dataclass
class MemoryPlan:
    """Where every intermediate slot lives: a byte ``offset`` into one arena per executor.

    Slots absent from ``offset`` are bound arrays (variables) and need no arena space. Two slots
    may share bytes only when their lifetimes do not overlap (or an elementwise step writes its
    output over an input that dies there). Made by ``memory_plan.py``.
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
    aliases: dict[int, int] = field(default_factory=dict)  # view slot -> slot owning the bytes
    info: dict = field(default_factory=dict)

    def describe(self, marks: Optional[dict[int, str]] = None) -> str:
        """One line per step: op, name, input and output slots with shapes (and arena offsets
        when planned); fused steps list their member ops; the memory plan's totals last.
        ``marks``: a note appended to the line of step ``k`` (the backend's, e.g. host steps)."""
        marks = marks or {}
        offset = self.plan.offset if self.plan is not None else {}
        var_slots = set(self.variables.values())

        def slot(i: int) -> str:
            where = f"@{offset[i]}" if i in offset else ("(var)" if i in var_slots else "")
            return f"%{i}{self.shapes[i]}{where}"
        lines = []
        for k, st in enumerate(self.steps):
            phase = "fwd" if k < self.n_forward_steps else "bwd"
            lines.append(f"[{phase} {k:3d}] {st.node.op} {st.node.name}: "
                         f"{', '.join(map(slot, st.inputs))} -> {', '.join(map(slot, st.outputs))}"
                         + (f"  [{marks[k]}]" if k in marks else ""))
            if "members" in st.node.attrs:
                lines.append(f"           members: {' -> '.join(st.node.attrs['members'])}")
        for a, root in self.aliases.items():
            lines.append(f"  view %{a}{self.shapes[a]} = bytes of %{root}{self.shapes[root]}")
        lines.append(f"{len(self.steps)} steps ({self.n_forward_steps} forward), "
                     f"{len(self.aliases)} zero-copy views")
        if self.plan is not None:
            lines.append(self.plan.describe())
        return "\n".join(lines)


def _forward_prefix(order: list[Node], forward_outputs: Sequence[Entry]) -> int:
    """How many nodes of ``order`` the forward outputs need. The depth-first order of the
    first outputs is a prefix of the whole graph's (outputs are walked in turn); it ends at
    the last of their nodes to be placed."""
    pending = {e.node for e in forward_outputs}
    n_fwd_nodes = 0
    for i, n in enumerate(order):
        if not pending:
            break
        pending.discard(n)
        n_fwd_nodes = i + 1
    return n_fwd_nodes


def lower(graph: Graph, n_forward: Optional[int] = None, plan: Any = None,
          views: bool = True) -> Schedule:
    """Number every entry, order the steps forward-phase first, attach shapes and dtypes.

    With ``views`` (the default; off only when all optimisations are off) view ops become
    aliases instead of steps."""
    n_forward = len(graph.outputs) if n_forward is None else n_forward
    table = graph.types
    if table is None:  # a graph lowered on its own: its variables declare their types
        table = TypeTable(infer_shapes(graph, {}), infer_types(graph, {}))
    order = graph.nodes()
    n_fwd_nodes = _forward_prefix(order, graph.outputs[:n_forward])
    slot_of: dict[Entry, int] = {}
    slot_shapes: list = []
    slot_dtypes: list = []
    aliases: dict[int, int] = {}
    steps: list[Step] = []
    variables: dict[Node, int] = {}
    n_fwd_steps = 0
    is_view: dict[str, bool] = {}  # op -> lowered as a view (asked once per op)
    for k, node in enumerate(order):  # one walk: slots, views, steps, variables
        entries = node.entries()
        for e in entries:
            shape, dtype = table.shape_dtype(e)
            if shape is None or dtype is None:
                raise ShapeError(f"{node.name} ({node.op}): {'dtype' if shape else 'shape'} of "
                                 f"output {e.index} is unknown")
            slot_of[e] = len(slot_shapes)
            slot_shapes.append(shape)
            slot_dtypes.append(dtype)
        if node.op == VARIABLE:
            variables[node] = slot_of[entries[0]]
            continue
        view = is_view.get(node.op)
        if view is None:
            view = is_view[node.op] = bool(get_op(node.op).view)
        if views and view:
            src = slot_of[node.inputs[0]]
            aliases[slot_of[entries[0]]] = aliases.get(src, src)
            continue
        steps.append(Step(node, tuple([slot_of[e] for e in node.inputs]),
                          tuple([slot_of[e] for e in entries])))
        if k < n_fwd_nodes:
            n_fwd_steps += 1
    return Schedule(graph, steps, n_fwd_steps, slot_of, slot_shapes, slot_dtypes, variables,
                    [slot_of[e] for e in graph.outputs], plan, aliases=aliases)
