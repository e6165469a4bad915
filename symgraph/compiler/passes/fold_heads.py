"""Attention heads without transposes: ``Graph -> Graph``.

A Transformer written from primitives splits heads as reshape (B, T, H, D) -> transpose
(0, 2, 1, 3) -> reshape (B*H, T, D) before a ``batch_dot``, scales the scores with
``_mul_scalar`` before ``softmax``, and merges a ``batch_dot``'s output back as reshape
(B, H, M, N) -> transpose (0, 2, 1, 3). Each transpose is a kernel that moves the whole tensor,
forward and backward. This pass gives each such ``batch_dot`` the layouts directly
(``ops/attention_heads._batch_dot_heads``: the GEMM addresses matrix (b, h) of the 4-D array),
folds the scale into the product's ``alpha``, and turns a softmax over the last axis of the
scores into ``_softmax_rows`` (whose gradient is one row op). It runs before autodiff: the new
ops' gradients are the same ops in the same layouts, so the backward has no transposes either.

Requires: the graph's types (without shapes nothing fires). Fires for a ``batch_dot`` that has
at least one of

* an operand that is, through casts to its own dtype, a view (B*H, T, D) of a transpose
  (0, 2, 1, 3) of a 4-D (B, T, H, D) entry (that entry becomes the split operand);
* a sole reader ``_mul_scalar`` (its scalar becomes ``alpha``);
* a sole reader chain view (B, H, M, N) -> transpose (0, 2, 1, 3) (the output is written
  split, (B, M, H, N), and replaces the transpose's)

with one head count among them. A ``softmax`` over the last axis, without length,
temperature or dtype, that reads such a product (through casts) becomes ``_softmax_rows``.
Guarantees: every output's value unchanged up to rounding (the scale is applied in the GEMM's
float accumulator), every other node unchanged; a graph without a matching ``batch_dot`` is
returned as it is.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from ...core.attrs import Attrs
from ...core.graph import Entry, Graph, Node, rewrite
from ...core.registry import get_op
from ...core.types.table import TypeTable, types_of
from ..ops.attention_heads import BATCH_DOT_HEADS, SOFTMAX_ROWS

# The primitives the pattern is written in (their own definitions are elsewhere).
BATCH_DOT, TRANSPOSE, MUL_SCALAR, SOFTMAX = "batch_dot", "transpose", "_mul_scalar", "softmax"
HEAD_AXES = (0, 2, 1, 3)


@dataclass(frozen=True)
class Fold:
    """What one ``batch_dot`` becomes: heads, the scale, and the node whose output the new
    product replaces (the batch_dot itself, its ``_mul_scalar`` or the merging transpose)."""

    heads: int
    alpha: float
    split_out: bool
    end: str


def _same_cast(node: Node, sc: TypeTable) -> bool:
    """A cast to the dtype its input already has (a no-op AMP leaves in place)."""
    return (not node.is_variable and get_op(node.op).cast
            and sc.dtype(node.inputs[0]) == sc.dtype(node.entries()[0]))


def _is_view(node: Node) -> bool:
    return not node.is_variable and get_op(node.op).view and len(node.inputs) >= 1


def _is_head_transpose(node: Node) -> bool:
    return node.op == TRANSPOSE and tuple(node.attrs["axes"] or ()) == HEAD_AXES


def split_source(e: Entry, sc: TypeTable) -> Optional[tuple[Entry, int]]:
    """(the 4-D (B, T, H, D) entry, H) when ``e`` is its heads split as (B*H, T, D)."""
    while _same_cast(e.node, sc):
        e = e.node.inputs[0]
    if not _is_view(e.node) or not _is_head_transpose(e.node.inputs[0].node):
        return None
    src = e.node.inputs[0].node.inputs[0]
    shape, want = sc.shape(src), sc.shape(e)
    if shape is None or want is None or len(shape) != 4:
        return None
    b, t, h, d = shape
    return (src, h) if tuple(want) == (b * h, t, d) else None


def _sole_reader(node: Node, users: dict, outputs: set) -> Optional[Node]:
    readers = users[node]
    return readers[0] if len(readers) == 1 and node not in outputs else None


def _merge_end(node: Node, users: dict, outputs: set, sc: TypeTable) -> Optional[tuple]:
    """(transpose node, H) when ``node``'s (G, M, N) output is merged back as (G/H, M, H, N)
    by a view to (G/H, H, M, N) and a head transpose, each the sole reader."""
    g_m_n = sc.shape(node.entries()[0])
    nxt = _sole_reader(node, users, outputs)
    while nxt is not None and _same_cast(nxt, sc):
        nxt = _sole_reader(nxt, users, outputs)
    if nxt is None or not _is_view(nxt) or g_m_n is None:
        return None
    shape = sc.shape(nxt.entries()[0])
    tr = _sole_reader(nxt, users, outputs)
    if shape is None or len(shape) != 4 or tr is None or not _is_head_transpose(tr):
        return None
    if shape[0] * shape[1] != g_m_n[0] or tuple(shape[2:]) != tuple(g_m_n[1:]):
        return None
    return tr, shape[1]


def _plan(bd: Node, users: dict, outputs: set, sc: TypeTable) -> Optional[Fold]:
    """The fold of one batch_dot, or None when nothing folds or head counts disagree."""
    heads = {s[1] for s in (split_source(e, sc) for e in bd.inputs) if s is not None}
    last, alpha = bd, 1.0
    mul = _sole_reader(bd, users, outputs)
    if mul is not None and mul.op == MUL_SCALAR:
        last, alpha = mul, float(mul.attrs["scalar"])
    merge = _merge_end(last, users, outputs, sc)
    if merge is not None:
        heads.add(merge[1])
    if len(heads) > 1 or (not heads and last is bd):
        return None
    end = merge[0] if merge is not None else last
    return Fold(heads.pop() if heads else 1, alpha, merge is not None, end.name)


def _softmax_reads_fold(node: Node, ends: set, sc: TypeTable) -> bool:
    """A plain softmax over the last axis whose data is (through casts) a folded product."""
    a = node.attrs
    ndim = len(sc.shape(node.entries()[0]) or ())
    if a["use_length"] or a["temperature"] is not None or a["dtype"] is not None \
            or a["axis"] not in (-1, ndim - 1):
        return False
    src = node.inputs[0].node
    while not src.is_variable and get_op(src.op).cast:
        src = src.inputs[0].node
    return src.name in ends


def _product(bd: Node, fold: Fold, sc: TypeTable) -> Node:
    """``_batch_dot_heads`` of the (rebuilt) batch_dot ``bd`` under ``fold``."""
    ins, split = [], []
    for e in bd.inputs:
        s = split_source(e, sc)
        ins.append(s[0] if s is not None and s[1] == fold.heads else e)
        split.append(s is not None and s[1] == fold.heads)
    attrs = Attrs({"transpose_a": bd.attrs["transpose_a"],
                   "transpose_b": bd.attrs["transpose_b"], "heads": fold.heads,
                   "split_lhs": split[0], "split_rhs": split[1],
                   "split_out": fold.split_out, "alpha": fold.alpha})
    return Node(BATCH_DOT_HEADS, bd.name, attrs, tuple(ins), bd.extra)


def fold_heads(graph: Graph) -> Graph:
    """Replace each matching batch_dot (and the transposes, scale and softmax around it)."""
    sc = types_of(graph)
    users, outputs = graph.consumers(), {e.node for e in graph.outputs}
    folds = {n.name: f for n in graph.nodes() if n.op == BATCH_DOT
             for f in [_plan(n, users, outputs, sc)] if f is not None}
    if not folds:
        return graph
    by_end = {f.end: name for name, f in folds.items()}
    softmaxes = {n.name for n in graph.nodes()
                 if n.op == SOFTMAX and _softmax_reads_fold(n, set(by_end), sc)}
    made: dict[str, Node] = {}

    def visit(node: Node) -> Optional[Node]:
        if node.name in folds:
            made[node.name] = _product(node, folds[node.name], sc)
        if node.name in by_end:
            return made[by_end[node.name]]
        if node.name in softmaxes:
            return Node(SOFTMAX_ROWS, node.name, Attrs({}), node.inputs[:1], node.extra)
        return None
    return rewrite(graph, visit)
