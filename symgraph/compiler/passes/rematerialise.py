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
``OpDef.extra["recompute"]`` rule: ``BatchNorm``'s normalisation as elementwise ops on its
saved batch statistics, which fusion merges with the ReLU and residual adds after it) from the
same inputs, recursively up to ``MAX_DEPTH`` nodes, whose leaves are variables or entries the
backward read already (so no value is kept that was not kept before); the forward is
unchanged. A node is recomputed only if its op has a recompute rule, or an elementwise formula
(``op_role``) or an injective pattern (AMP's casts, layout moves), is not ``train_dependent``
and has an input recomputed so; an entry that is a graph output never is. The
graph is unchanged when ``SYMGRAPH_REMAT`` is 0 or nothing qualifies.
"""
from __future__ import annotations

from typing import Callable, Optional

from ...core import config
from ...core.attrs import Attrs
from ...core.graph import Entry, Graph, Node, topo_order
from ...core.registry import INJECTIVE, OpDef, get_op, ops_where
from ...core.types.table import TypeTable
from .fuse_groups import FUSE, op_role

MAX_DEPTH = 20
"""Longest chain of recomputed nodes behind one backward read: a ResNet stage's residual
chain (up to 6 blocks of BatchNorm, add, ReLU) from its first convolution outputs. Values
deeper than that are kept, so a long elementwise chain costs a bounded number of copies."""
NEVER = MAX_DEPTH + 1

Rule = Callable[[Node, int, tuple, TypeTable, dict], Optional[Entry]]
"""``OpDef.extra["recompute"]`` is ``(outputs, rule)``: the outputs it recomputes, and
``rule(node, output index, inputs, types, extra)`` -> an entry
equal to the node's output ``index`` (same type), built from ``inputs`` (the node's inputs,
or their recomputed copies) and the node's other outputs (its saved statistics), its nodes
carrying the user attributes ``extra``; or None where it cannot."""


def _has_rule(opdef: OpDef) -> bool:
    return "recompute" in opdef.extra


def _cheap(node: Node) -> bool:
    """Whether ``node`` is recomputed as a copy of itself (no rule: elementwise, casts,
    layout moves)."""
    opdef = get_op(node.op)
    return (op_role(node.op) == FUSE or opdef.pattern == INJECTIVE) and \
        not opdef.train_dependent


class _Planner:
    """Decides which forward entries the backward gets recomputed, and makes the copies.

    ``height[e]``: how many recomputed nodes deep ``e``'s recomputation goes (0: a leaf the
    backward keeps anyway, ``NEVER``: it cannot be recomputed without keeping a value the
    backward did not keep, or is deeper than ``MAX_DEPTH``), found once in topological order.
    Copies are made per backward reader of a value (``root``), not shared between readers: a
    copy shared by two readers far apart would live from the first to the last, as long as the
    forward value it replaces (a residual chain's block outputs)."""

    def __init__(self, graph: Graph, forward: list[Node], saved: set[Entry]) -> None:
        self.types = graph.types
        outputs = set(graph.outputs)
        self.rules: dict[Entry, Optional[Rule]] = {}  # None: a copy of the node itself
        self.height: dict[Entry, int] = {}
        for node in forward:
            ruled = None if node.is_variable else get_op(node.op).extra.get("recompute")
            for e in node.entries():
                rule = ruled[1] if ruled is not None and e.index in ruled[0] else None
                ok = not node.is_variable and e not in outputs and \
                    (rule is not None or ruled is None and _cheap(node)) and \
                    not all(x.node.is_variable for x in node.inputs)  # (a parameter's cast)
                h = 1 + max([self.height[x] for x in node.inputs], default=0)
                # Only chains from a rule (a BatchNorm's normalisation) are recomputed: in a
                # pure elementwise chain every value is read by its own gradient anyway.
                if ok and h <= MAX_DEPTH and \
                        (rule is not None or any(x in self.rules for x in node.inputs)):
                    self.height[e], self.rules[e] = h, rule
                else:
                    self.height[e] = 0 if node.is_variable or e in saved else NEVER
        self.copies: dict[tuple[Entry, Entry], Entry] = {}

    def entry(self, e: Entry, root: Optional[Entry] = None) -> Optional[Entry]:
        """The recomputed ``e`` for the backward reader of ``root`` (None: of ``e`` itself),
        or None where ``e`` is kept."""
        if e not in self.rules:
            return None
        key = (e, root or e)
        if key in self.copies:
            return self.copies[key]
        node = e.node
        inputs = tuple([self.entry(x, root or e) or x for x in node.inputs])
        # (the marker keeps cse from merging a copy into its original or another root's)
        mark = {"__remat__": "" if root is None else f"{root.node.name}:{root.index}"}
        rule = self.rules[e]
        out = rule(node, e.index, inputs, self.types, mark) if rule is not None else None
        if out is None:
            extra = Attrs({**dict(node.extra.items()), **mark})
            copy = Node(node.op, f"{node.name}_remat", node.attrs, inputs, extra)
            if self.types is not None:
                self.types.copy(node, copy)
            out = copy.entries()[e.index]
        self.copies[key] = out
        return out


def rematerialise(graph: Graph, n_forward: int) -> Graph:
    """Backward readers of cheap forward results read recomputed copies (module docstring)."""
    if not config.get("SYMGRAPH_REMAT") or n_forward >= len(graph.outputs) or \
            graph.op_names().isdisjoint(ops_where(_has_rule)):
        return graph  # (every recomputed chain starts at a rule: none, nothing to walk)
    order = topo_order(graph.outputs[:n_forward])
    forward = set(order)
    nodes = graph.nodes()
    saved = {e for n in nodes if n not in forward for e in n.inputs if e.node in forward}
    planner = _Planner(graph, order, saved)
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
