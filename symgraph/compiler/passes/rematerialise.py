"""Rematerialisation: backward recomputes cheap forward results instead of keeping them:
``Graph -> Graph``.

Why: a forward value the backward reads stays in the arena from its forward step to the end
of the schedule (``memory_plan``: ``backward()`` may run again on one forward). In a
convolution network most of those bytes are BatchNorm and ReLU outputs (and residual sums),
which are one elementwise pass away from the convolution output and the batch statistics
that the backward keeps anyway. Recomputed in the backward, they live from just before their
first backward reader to their last, and the forward copies die at their last forward
reader. The cost is one elementwise pass per recomputed value in the backward (memory-bound:
a read of its inputs and a write), fused with its neighbours by ``fuse_elementwise``.

Requires: a typed training graph whose first ``n_forward`` outputs are the forward's (the
other nodes are the backward: in general they do not all depend on the head gradients, as
``SoftmaxOutput`` ignores its own); before fusion. Copies carry the user attribute
``__remat__`` so that ``cse`` does not merge them back into their originals.

Guarantees: every graph output keeps its value, type and position; a backward node that read
a forward entry reads instead an entry computed by a copy of the forward node (or by the op's
``OpDef.extra["recompute"]`` rule: ``BatchNorm`` applies its saved batch statistics) from the
same inputs, recursively up to ``MAX_DEPTH`` nodes, whose leaves are variables or entries the
backward read already (so no value is kept that was not kept before); the forward is
unchanged. A node is recomputed only if its op has an elementwise formula (``op_role``) or a
recompute rule, is not ``train_dependent``, and only an entry that is no graph output is. The
graph is unchanged when ``SYMGRAPH_REMAT`` is 0 or nothing qualifies.
"""
from __future__ import annotations

from typing import Callable, Optional

from ...core import config
from ...core.attrs import Attrs
from ...core.graph import Entry, Graph, Node, topo_order
from ...core.registry import get_op
from .fuse_groups import FUSE, op_role

MAX_DEPTH = 8
"""Longest chain of recomputed nodes behind one backward read (a ResNet stage's residual
chain is 3-6 blocks of BatchNorm + add + ReLU)."""

Rule = Callable[[Node, int], Optional[Node]]
"""``OpDef.extra["recompute"]``: (node, output index) -> a node of the same outputs and types
whose output ``index`` equals the node's, from cheaper inputs; or None."""


def _copy_rule(node: Node, index: int) -> Optional[Node]:
    """Cheap ops recompute as themselves; others by their op's rule, or not at all."""
    opdef = get_op(node.op)
    rule: Optional[Rule] = opdef.extra.get("recompute")
    if rule is not None:
        return rule(node, index)
    return node if op_role(node.op) == FUSE and not opdef.train_dependent else None


class _Planner:
    """Decides which forward entries the backward gets recomputed, and makes the copies."""

    def __init__(self, graph: Graph, late: set[Node], saved: set[Entry]) -> None:
        self.types = graph.types
        self.late = late
        self.saved = saved  # forward entries the backward reads before this pass
        self.outputs = set(graph.outputs)
        self.copies: dict[Entry, Optional[Entry]] = {}

    def entry(self, e: Entry, depth: int = 0) -> Optional[Entry]:
        """The recomputed ``e``, or None where it is kept (a variable, a leaf, too deep)."""
        if e in self.copies:
            return self.copies[e]
        node = e.node
        if node.is_variable or node in self.late or e in self.outputs or depth >= MAX_DEPTH:
            return None
        self.copies[e] = None  # (until decided: a rule reading its own node's outputs)
        model = _copy_rule(node, e.index)
        if model is None or all(x.node.is_variable for x in model.inputs):
            return None  # (a parameter's cast or scale: small, batched with its kind)
        inputs = []
        for x in model.inputs:
            again = self.entry(x, depth + 1)
            if again is None and not (x.node.is_variable or x in self.saved):
                return None  # it would keep a value the backward did not keep
            inputs.append(x if again is None else again)
        extra = Attrs({**dict(model.extra.items()), "__remat__": "1"})
        copy = Node(model.op, f"{node.name}_remat", model.attrs, tuple(inputs), extra)
        if self.types is not None:  # (a rule's node has the original's outputs and types)
            self.types.copy(node, copy)
        self.copies[e] = out = copy.entries()[e.index]
        return out


def rematerialise(graph: Graph, n_forward: int) -> Graph:
    """Backward readers of cheap forward results read recomputed copies (module docstring)."""
    if not config.get("SYMGRAPH_REMAT") or n_forward >= len(graph.outputs):
        return graph
    forward = set(topo_order(graph.outputs[:n_forward]))
    nodes = graph.nodes()
    late = {n for n in nodes if n not in forward}
    saved = {e for n in late for e in n.inputs if e.node in forward}
    planner = _Planner(graph, late, saved)
    remap: dict[Node, Node] = {}
    for n in nodes:
        if n in forward:
            continue
        ins = tuple([remap[e.node].entries()[e.index] if e.node in remap
                     else (planner.entry(e) or e) if e.node in forward else e
                     for e in n.inputs])
        if ins != n.inputs:
            remap[n] = new = n.with_inputs(ins)
            if graph.types is not None:
                graph.types.copy(n, new)
    if not remap:
        return graph
    return Graph(tuple([remap[e.node].entries()[e.index] if e.node in remap else e
                        for e in graph.outputs]), graph.types)
