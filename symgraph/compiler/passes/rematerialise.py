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
from ...core.registry import INJECTIVE, get_op
from .fuse_groups import FUSE, op_role

MAX_DEPTH = 20
"""Longest chain of recomputed nodes behind one backward read: a ResNet stage's residual
chain (up to 6 blocks of BatchNorm, add, ReLU) from its first convolution outputs. Values
deeper than that are kept, so a long elementwise chain costs a bounded number of copies."""
NEVER = MAX_DEPTH + 1

Rule = Callable[[Node, int], Optional[Node]]
"""``OpDef.extra["recompute"]``: (node, output index) -> a node of the same outputs and types
whose output ``index`` equals the node's, from cheaper inputs; or None."""


def _copy_rule(node: Node, index: int) -> Optional[Node]:
    """Cheap ops recompute as themselves; others by their op's rule, or not at all."""
    opdef = get_op(node.op)
    rule: Optional[Rule] = opdef.extra.get("recompute")
    if rule is not None:
        return rule(node, index)
    cheap = op_role(node.op) == FUSE or opdef.pattern == INJECTIVE  # (casts, layout moves)
    return node if cheap and not opdef.train_dependent else None


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
        self.models: dict[Entry, Node] = {}
        self.height: dict[Entry, int] = {}
        for node in forward:
            for e in reversed(node.entries()):  # (a rule may read the node's later outputs)
                model = None if node.is_variable or e in outputs else _copy_rule(node, e.index)
                if model is None or all(x.node.is_variable for x in model.inputs):
                    # (a parameter's cast or scale: small, batched with its kind)
                    self.height[e] = 0 if node.is_variable or e in saved else NEVER
                    continue
                h = 1 + max(self.height[x] for x in model.inputs)
                # Only chains from a rule (a BatchNorm's normalisation) are recomputed: in a
                # pure elementwise chain every value is read by its own gradient anyway.
                ruled = model is not node or any(x in self.models for x in model.inputs)
                if h > MAX_DEPTH or not ruled:
                    self.height[e] = 0 if e in saved else NEVER
                    continue
                self.height[e] = h
                self.models[e] = model
        self.copies: dict[tuple[Entry, Entry], Entry] = {}

    def entry(self, e: Entry, root: Optional[Entry] = None) -> Optional[Entry]:
        """The recomputed ``e`` for the backward reader of ``root`` (None: of ``e`` itself),
        or None where ``e`` is kept."""
        model = self.models.get(e)
        if model is None:
            return None
        key = (e, root or e)
        if key in self.copies:
            return self.copies[key]
        inputs = tuple([self.entry(x, root or e) or x for x in model.inputs])
        # (the marker keeps cse from merging a copy into its original or another root's)
        mark = "" if root is None else f"{root.node.name}:{root.index}"
        extra = Attrs({**dict(model.extra.items()), "__remat__": mark})
        copy = Node(model.op, f"{e.node.name}_remat", model.attrs, inputs, extra)
        if self.types is not None:  # (a rule's node has the original's outputs and types)
            self.types.copy(e.node, copy)
        self.copies[key] = out = copy.entries()[e.index]
        return out


def rematerialise(graph: Graph, n_forward: int) -> Graph:
    """Backward readers of cheap forward results read recomputed copies (module docstring)."""
    if not config.get("SYMGRAPH_REMAT") or n_forward >= len(graph.outputs):
        return graph
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
