"""The monitor's view of a backward pass: the gradient each op node sends to each of its inputs,
reported as MXNet's graph executor names its backward nodes' outputs
(``<node>_backward_output<i>``; ``<node>_backward_output`` for a one-input node).

Fused and simplified backward programs hold no such per-edge value, so a probe program is
compiled once per executor: the executor's graph with every monitored edge ``e -> node`` read
through ``e + z`` for a zero variable ``z`` of ``e``'s type. The gradient with respect to ``z``
is then exactly what ``node`` sends back along that edge (the sum over consumers that the real
program forms for ``e`` is split again by edge), and the values the forward computes are
unchanged. Monitored nodes are those MXNet builds backward nodes for: the op nodes that depend
on an argument whose gradient is requested. Auxiliary inputs (BatchNorm's moving statistics)
have no gradient and are not probed.
"""
from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np

from ..core.attrs import Attrs
from ..core.context import Context
from ..core.graph import Entry, Graph, Node, rewrite, variable
from ..core.registry import get_op
from .compile import Stage, build_stage
from .ndarray import NDArray, array

__all__ = ["BackwardProbe"]

ZERO_PREFIX = "__monitor_zero"  # names of the probe's zero variables (never a user name)


def _monitored(graph: Graph, needs_grad: set[str]) -> list[Node]:
    """Op nodes that depend on an argument in ``needs_grad``, in graph order."""
    reached: set[Node] = set()
    for node in graph.nodes():
        if node.is_variable:
            if node.name in needs_grad:
                reached.add(node)
        elif any(e.node in reached for e in node.inputs):
            reached.add(node)
    return [n for n in graph.nodes() if n in reached and not n.is_variable]


def _probed_slots(node: Node) -> list[int]:
    """Input positions of ``node`` that carry a gradient (not its auxiliary states)."""
    opdef = get_op(node.op)
    aux = set(opdef.aux_names(node.attrs)) if opdef.aux != () else set()
    names = opdef.input_names(node.attrs)
    return [i for i in range(len(node.inputs)) if i >= len(names) or names[i] not in aux]


def report_names(node: Node) -> list[str]:
    """MXNet's names for the gradients ``node`` sends to its inputs."""
    slots = _probed_slots(node)
    if len(slots) == 1:
        return [f"{node.name}_backward_output"]
    return [f"{node.name}_backward_output{k}" for k in range(len(slots))]


class BackwardProbe:
    """The probe program of one executor's graph; :meth:`run` returns ``[(name, value)]`` in
    the order MXNet's backward runs (last node first)."""

    def __init__(self, graph: Graph, ctx: Context, needs_grad: set[str]) -> None:
        self.ctx = ctx
        self.nodes = _monitored(graph, needs_grad)
        table = graph.types
        wanted = set(self.nodes)
        order = iter(graph.nodes())  # rewrite calls probe_edges once per node, in this order
        self.zeros: dict[tuple[Node, int], str] = {}
        self.shapes: dict[str, tuple] = {}

        def probe_edges(node: Node) -> Optional[Node]:
            original = next(order)
            if original not in wanted:
                return None
            inputs = list(node.inputs)
            for i in _probed_slots(original):
                old = original.inputs[i]
                z = variable(f"{ZERO_PREFIX}{len(self.zeros)}")
                table.add(Entry(z), table.shape(old), table.dtype(old))
                self.zeros[(original, i)] = z.name
                self.shapes[z.name] = (table.shape(old), table.dtype(old))
                add = Node("elemwise_add", f"{z.name}_add", Attrs(), (inputs[i], Entry(z)))
                inputs[i] = Entry(add)
            new = Node(node.op, node.name, node.attrs, tuple(inputs), node.extra)
            table.copy(original, new)
            return new
        probe = rewrite(graph, probe_edges)
        self.stage: Stage = build_stage(probe, list(self.zeros.values()), True, ctx)

    def run(self, arrays: Sequence[dict[str, NDArray]], is_train: bool,
            out_grads: Optional[Sequence[Any]]) -> list[tuple[str, NDArray]]:
        """Forward and backward on ``arrays`` (arguments, aux copies) with ``out_grads``."""
        zeros = {name: array(np.zeros(shape, dtype), self.ctx, dtype)
                 for name, (shape, dtype) in self.shapes.items()}
        stage = self.stage
        env, run_ctx = stage.start((*arrays, zeros), is_train)
        stage.bind_heads(env, stage.head_arrays(out_grads, self.ctx, {}))
        stage.run(env, run_ctx, "all")
        sch = stage.schedule
        found: list[tuple[str, NDArray]] = []
        for node in reversed(self.nodes):
            names = report_names(node)
            for name, i in zip(names, _probed_slots(node)):
                z = self.zeros[(node, i)]
                slot = stage.grads.get(z)
                if slot is None:  # no gradient reaches this edge: MXNet's buffer holds zeros
                    value = zeros[z]
                else:
                    value = array(stage.program.read(env, slot), self.ctx, sch.dtypes[slot])
                found.append((name, value))
        return found
