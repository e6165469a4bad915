"""Algebraic simplification: ``Graph -> Graph``.

Requires: the graph's types (``Graph.types``, or shapes declared on the variables); rules that
need a shape do not fire without. Guarantees: every entry keeps its shape, dtype and value (up to float rounding of
``x + 0``); nodes that compute nothing are bypassed.

Two kinds of rules:

* **Formula rules**, generic over every op with a scalar formula (``OpDef.expr``): the node's
  formula, with the formulas of elementwise producers spliced in, is simplified by ``EXPR_RULES``
  (``x*1``, ``x+0``, ``x-0``, ``x/1``, ``x**1``, ``-(-x)``); if what is left is one of the leaves
  and it already has the node's shape and dtype, the node is replaced by that leaf. So
  ``_mul_scalar(x, 1)``, ``_plus_scalar(x, 0)`` and ``negative(negative(x))`` all vanish without
  a rule naming them.
* **Graph rules**, the table ``RULES`` from op name to a rewrite, for ops whose meaning is not a
  scalar formula (reshapes, identities, ``_broadcast_backward``, ``add_n``, casts). A rewrite
  table keyed by op is the one place a pass names ops; each entry is a one-line statement of an
  identity.

Cast pairs (``Cast``, ``amp_cast``; AMP's ``convert_symbol`` makes many) cancel only when exact.
A cast to the dtype the data already has is the data, and so is an ``amp_multicast`` of inputs
that all have their output's dtype already. ``cast(cast(x, B), C)`` with ``x`` of dtype
``A`` drops the inner cast when ``B`` holds every value of ``A`` (``A`` narrower: float16 or
bfloat16 -> float32 -> float64): so ``f16 -> f32 -> f16`` is ``x``, and ``f16 -> f32 -> bf16`` is
one cast ``f16 -> bf16``. ``f32 -> f16 -> f32`` is *not* the identity (it rounds to float16) and
stays, as does ``f16 -> bf16 -> f16`` (neither holds the other).
"""
from __future__ import annotations

from functools import lru_cache
from typing import Callable, Optional

from ...core.attrs import Attrs
from ...core.expr import Expr, inp
from ...core.graph import VARIABLE, Entry, Graph, Node, Replacement, rewrite
from ..ops.indexing import rows_condition
from ...core.registry import generation, get_op
from ...core.types.table import TypeTable, types_of


def _is_const(e: Expr, v: float) -> bool:
    return e.op == "const" and e.value == v


# primitive -> rewrite of its (already simplified) operands, None when it does not apply.
EXPR_RULES: dict[str, Callable[[Expr, Expr], Optional[Expr]]] = {
    "add": lambda a, b: a if _is_const(b, 0.0) else (b if _is_const(a, 0.0) else None),
    "sub": lambda a, b: a if _is_const(b, 0.0) else None,
    "mul": lambda a, b: a if _is_const(b, 1.0) else (b if _is_const(a, 1.0) else None),
    "div": lambda a, b: a if _is_const(b, 1.0) else None,
    "pow": lambda a, b: a if _is_const(b, 1.0) else None,
    "neg": lambda a, b=None: a.args[0] if a.op == "neg" else None,
}


def simplify_expr(e: Expr) -> Expr:
    """Apply ``EXPR_RULES`` bottom-up."""
    memo: dict[Expr, Expr] = {}

    def go(x: Expr) -> Expr:
        if x not in memo:
            args = tuple(go(a) for a in x.args)
            rule = EXPR_RULES.get(x.op)
            out = rule(*args) if rule is not None else None
            memo[x] = out if out is not None else Expr(x.op, args, x.value)
        return memo[x]
    return go(e)


Position = tuple[int, Optional[int]]  # (input, input of that input's producer or None)


def _formula_key(node: Node) -> tuple:
    """What the formula rule's answer depends on: the registry's generation, op and attrs of
    the node, and op, attrs, arity and output count of each producer (``None``: variable)."""
    key: list = [generation(), node.op, node.attrs]
    for e in node.inputs:  # (a plain loop: this runs once per node of the graph)
        p = e.node
        key.append(None if p.op == VARIABLE
                   else (p.op, p.attrs, len(p.inputs), len(p.entries())))
    return tuple(key)


@lru_cache(maxsize=4096)  # graphs repeat a few combinations many times (bind time)
def _formula_leaf(key: tuple) -> Optional[Position]:
    """Where the leaf sits that an elementwise node's formula, with the formulas of
    elementwise producers spliced in, simplifies to, if it is just one leaf."""
    leaves: list[Position] = []
    args = []
    for i, producer in enumerate(key[3:]):
        inner = get_op(producer[0]) if producer is not None else None
        if inner is not None and inner.expr is not None and producer[3] == 1:
            sub = [inp(len(leaves) + j) for j in range(producer[2])]
            leaves += [(i, j) for j in range(producer[2])]
            args.append(inner.expr(producer[1], *sub))
        else:
            args.append(inp(len(leaves)))
            leaves.append((i, None))
    out = simplify_expr(get_op(key[1]).expr(key[2], *args))
    return leaves[int(out.value)] if out.op == "input" else None


def _formula_rule(node: Node, sc: TypeTable) -> Replacement:
    """Replace an elementwise node whose (spliced) formula is just one of its leaves."""
    where = _formula_leaf(_formula_key(node))
    if where is None:
        return None
    i, j = where
    leaf = node.inputs[i] if j is None else node.inputs[i].node.inputs[j]
    me = Entry(node)
    same = sc.shape(leaf) == sc.shape(me) is not None and sc.dtype(leaf) == sc.dtype(me)
    return [leaf] if same else None


def _same_shape(sc: TypeTable, a: Entry, b: Entry) -> bool:
    return sc.shape(a) is not None and sc.shape(a) == sc.shape(b)


def _identity_if_same(node: Node, sc: TypeTable) -> Replacement:
    """Forward-identity ops and reshapes to the shape the data already has."""
    return [node.inputs[0]] if _same_shape(sc, node.inputs[0], Entry(node)) else None


RESHAPES = ("Reshape", "Flatten", "reshape_like")


def _reshape_rule(node: Node, sc: TypeTable) -> Replacement:
    """Reshape to the input's shape -> input; reshape of a reshape -> one Reshape."""
    done = _identity_if_same(node, sc)
    src = node.inputs[0]
    if done is not None or src.node.op not in RESHAPES or sc.shape(Entry(node)) is None:
        return done
    inner = src.node.inputs[0]
    out = sc.shape(Entry(node))
    if sc.shape(inner) == out:
        return [inner]
    attrs = Attrs({"shape": out, "reverse": False})
    return Node("Reshape", node.name, attrs, (inner,), node.extra)


def _transpose_rule(node: Node, sc: TypeTable) -> Replacement:
    """transpose of a transpose -> one transpose with the composed axes (none if identity)."""
    src = node.inputs[0]
    shape = sc.shape(src)
    if src.node.op != "transpose" or shape is None:
        return None
    from ..ops.shape import transpose_axes
    inner = transpose_axes(src.node.attrs, len(shape))
    outer = transpose_axes(node.attrs, len(shape))
    axes = tuple(inner[i] for i in outer)
    if axes == tuple(range(len(shape))):
        return [src.node.inputs[0]]
    return Node("transpose", node.name, Attrs({"axes": axes}), (src.node.inputs[0],), node.extra)


def _add_n_rule(node: Node, sc: TypeTable) -> Replacement:
    """``add_n`` of one input is that input; ``zeros_like`` terms drop out."""
    keep = [e for e in node.inputs if e.node.op != "zeros_like"] or [node.inputs[0]]
    if len(keep) == 1:
        return [keep[0]] if _same_shape(sc, keep[0], Entry(node)) else None
    if len(keep) == len(node.inputs):
        return None
    return Node(node.op, node.name, node.attrs.replace(num_args=len(keep)), tuple(keep),
                node.extra)


def _mul_ones_rule(node: Node, sc: TypeTable) -> Replacement:
    """``x * ones_like(y)`` is ``x`` when ``x`` already has the result's shape."""
    for i, e in enumerate(node.inputs):
        other = node.inputs[1 - i]
        if e.node.op == "ones_like" and _same_shape(sc, other, Entry(node)):
            return [other]
    return _formula_rule(node, sc)


# (narrow, wide): every value of ``narrow`` is exactly a value of ``wide``.
_HOLDS = {("float16", "float32"), ("float16", "float64"), ("bfloat16", "float32"),
          ("bfloat16", "float64"), ("float32", "float64")}
CASTS = ("Cast", "amp_cast")


def _cast_rule(node: Node, sc: TypeTable) -> Replacement:
    """Same-dtype cast -> its input; a cast of an exact (widening) cast skips the inner one."""
    src = node.inputs[0]
    t_in, t_out = sc.dtype(src), sc.dtype(Entry(node))
    if t_in is None or t_out is None:
        return None
    if t_in == t_out:
        return [src]
    if src.node.is_variable or src.node.op not in CASTS:
        return None
    x = src.node.inputs[0]
    t_x = sc.dtype(x)
    if t_x is None or (t_x.name, t_in.name) not in _HOLDS:
        return None
    if t_x == t_out:
        return [x]
    return Node(node.op, node.name, node.attrs, (x,), node.extra)


def _same_dtype_rule(node: Node, sc: TypeTable) -> Replacement:
    """``_backward_Cast`` to the dtype its gradient already has (the forward cast was a no-op)."""
    t_in, t_out = sc.dtype(node.inputs[0]), sc.dtype(Entry(node))
    return [node.inputs[0]] if t_in is not None and t_in == t_out else None


def _multicast_rule(node: Node, sc: TypeTable) -> Replacement:
    """``amp_multicast`` whose inputs all have their output's dtype already (the residual add
    of two narrow values) -> its inputs: the copies would change nothing."""
    for i, src in enumerate(node.inputs):
        t_in = sc.dtype(src)
        if t_in is None or t_in != sc.dtype(Entry(node, i)):
            return None
    return list(node.inputs)


def _where_rows_rule(node: Node, sc: TypeTable) -> Replacement:
    """``where`` with a 1-D condition picking rows -> ``where`` of that condition reshaped to
    (rows, 1, ...) and broadcast to the data's shape: fusion and the fused kernels then see
    only conditions of the data's shape."""
    cond, data = sc.shape(node.inputs[0]), sc.shape(Entry(node))
    if cond is None or data is None or not rows_condition(cond, data):
        return None
    column = (cond[0],) + (1,) * (len(data) - 1)
    shaped = Node("Reshape", node.name + "_cond_rows", Attrs({"shape": column, "reverse": False}),
                  (node.inputs[0],))
    full = Node("broadcast_to", node.name + "_cond", Attrs({"shape": data}), (Entry(shaped),))
    return Node(node.op, node.name, node.attrs, (Entry(full),) + node.inputs[1:], node.extra)


RULES: dict[str, Callable[[Node, TypeTable], Replacement]] = {
    "Cast": _cast_rule,
    "amp_cast": _cast_rule,
    "_backward_Cast": _same_dtype_rule,
    "amp_multicast": _multicast_rule,
    "Reshape": _reshape_rule,
    "Flatten": _reshape_rule,
    "reshape_like": _reshape_rule,
    "identity": _identity_if_same,
    "BlockGrad": _identity_if_same,   # after autodiff, BlockGrad is a plain copy
    "_broadcast_backward": _identity_if_same,  # nothing was broadcast: nothing to sum
    "transpose": _transpose_rule,
    "add_n": _add_n_rule,
    "broadcast_mul": _mul_ones_rule,
    "elemwise_mul": _mul_ones_rule,
    "where": _where_rows_rule,
}


def simplify(graph: Graph) -> Graph:
    """Apply the formula rules and ``RULES`` once, bottom-up (rewrites see simplified inputs)."""
    sc = types_of(graph)
    # op -> its rule: a RULES entry, the formula rule, or None (asked once per op, not per node)
    rule_of: dict[str, Optional[Callable[[Node, TypeTable], Replacement]]] = {VARIABLE: None}

    def visit(node: Node) -> Replacement:
        op = node.op
        rule = rule_of.get(op, _UNKNOWN)
        if rule is _UNKNOWN:
            rule = rule_of[op] = RULES.get(op) or \
                (_formula_rule if get_op(op).expr is not None else None)
        return None if rule is None else rule(node, sc)
    return rewrite(graph, visit)


_UNKNOWN = object()
