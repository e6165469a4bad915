"""ONNX's Einsum, composed from transpose, Reshape, broadcast_mul and sum.

Each operand's labels are made distinct first (a repeated label keeps the diagonal: the
operand times an identity, summed over one of the two axes), labels only one operand has and
the output lacks are summed at once, every operand is laid out over all labels (size 1 where
absent), the product is taken with broadcasting and the labels the output lacks are summed. Two
operands whose shared output labels have equal sizes (a batched matrix product, the common
case) are instead one ``batch_dot`` between transposes and reshapes.
"""
from __future__ import annotations

from functools import reduce
from typing import Any, Optional

import numpy as np

from ...core.base import DataError
from .context import ImportCtx, node_label, op_name
from .import_ops import converter

Term = list[str]


def _split_term(text: str, rank: int, width: int, node: Any) -> Term:
    """The labels of one operand; ``...`` stands for its last ``rank - letters`` ellipsis
    axes, labelled ``.k`` right-aligned against the widest ellipsis (``width``)."""
    if "..." not in text:
        labels = list(text)
    else:
        head, tail = text.split("...")
        n = rank - len(head) - len(tail)
        labels = list(head) + [f".{k}" for k in range(width - n, width)] + list(tail)
    if len(labels) != rank or not all(ch.isalpha() for ch in text.replace("...", "")):
        raise DataError(f"{node_label(node)}: term {text!r} of the equation does not fit an "
                        f"operand of rank {rank}")
    return labels


def parse_equation(eq: str, ranks: list[int], node: Any) -> tuple[list[Term], Term]:
    """The operands' labels and the output's (implicit form: the ellipsis axes, then the
    letters used once, in alphabetical order)."""
    eq = eq.replace(" ", "")
    lhs, rhs = eq.split("->") if "->" in eq else (eq, None)
    texts = lhs.split(",")
    if len(texts) != len(ranks):
        raise DataError(f"{node_label(node)}: equation {eq!r} has {len(texts)} operand terms "
                        f"for {len(ranks)} inputs")
    width = max([r - len(t.replace("...", "")) for t, r in zip(texts, ranks) if "..." in t]
                + [0])
    terms = [_split_term(t, r, width, node) for t, r in zip(texts, ranks)]
    dots = [f".{k}" for k in range(width)]
    if rhs is None:
        letters = [ch for t in texts for ch in t if ch.isalpha()]
        return terms, dots + sorted(ch for ch in set(letters) if letters.count(ch) == 1)
    out = list(rhs.replace("...", "|"))
    return terms, [lab for ch in out for lab in (dots if ch == "|" else [ch])]


def _diagonals(c: ImportCtx, x: Any, term: Term, shape: list, dtype: np.dtype,
               name: str) -> tuple[Any, Term, list]:
    """``x`` with every repeated label reduced to one axis holding the diagonal."""
    while len(set(term)) < len(term):
        p = next(k for k, lab in enumerate(term) if term.count(lab) > 1)
        q = term.index(term[p], p + 1)
        eye_shape = [1] * len(term)
        eye_shape[p] = eye_shape[q] = shape[p]
        eye = c.param(f"{name}_eye{len(term)}", np.eye(shape[p], dtype=dtype).reshape(eye_shape))
        x = c.sym.sum(c.sym.broadcast_mul(x, eye), axis=(q,))
        term, shape = term[:q] + term[q + 1:], shape[:q] + shape[q + 1:]
    return x, term, shape


def _prepared(c: ImportCtx, node: Any, k: int, terms: list[Term],
              out: Term) -> tuple[Any, Term, list]:
    """Operand ``k`` with distinct labels, those no other operand and not the output has
    summed out: ``(symbol, labels, shape)``."""
    src = node.input[k]
    x, term, shape = _diagonals(c, c.get(src), list(terms[k]), list(c.static_shape(src, node)),
                                c.dtypes.get(src, np.dtype(np.float32)), f"{op_name(node)}_{k}")
    others = {lab for j, t in enumerate(terms) if j != k for lab in t} | set(out)
    alone = [p for p, lab in enumerate(term) if lab not in others]
    if alone:
        x = c.sym.sum(x, axis=tuple(alone))
        term = [lab for p, lab in enumerate(term) if p not in alone]
        shape = [d for p, d in enumerate(shape) if p not in alone]
    return x, term, shape


def _arranged(c: ImportCtx, x: Any, term: Term, shape: list, labels: Term,
              full: bool) -> Any:
    """``x`` transposed to the order of ``labels``; ``full``: reshaped to all of them (size 1
    where it lacks one), else with its axes merged in the groups ``labels`` lists."""
    order = sorted(range(len(term)), key=lambda p: labels.index(term[p]))
    if order != list(range(len(term))):
        x = c.sym.transpose(x, axes=tuple(order))
    size = {term[p]: shape[p] for p in order}
    target = tuple(size.get(lab, 1) for lab in labels)
    return c.sym.Reshape(x, shape=target) if full and target != tuple(size.values()) else x


def _contract_two(c: ImportCtx, parts: list, out: Term, name: str) -> Optional[Any]:
    """Two operands as one batch_dot: (batch, free of A, contracted) times (batch,
    contracted, free of B); None when a batch label broadcasts (sizes differ)."""
    (xa, ta, sa), (xb, tb, sb) = parts
    da, db = dict(zip(ta, sa)), dict(zip(tb, sb))
    batch = [lab for lab in out if lab in da and lab in db]
    if any(da[lab] != db[lab] for lab in batch):
        return None
    summed = [lab for lab in ta if lab in db and lab not in out]
    free_a = [lab for lab in out if lab in da and lab not in db]
    free_b = [lab for lab in out if lab in db and lab not in da]

    def size(d: dict, labs: Term) -> int:
        return int(np.prod([d[lab] for lab in labs], dtype=np.int64))
    a3 = c.sym.Reshape(_arranged(c, xa, ta, sa, batch + free_a + summed, False),
                       shape=(size(da, batch), size(da, free_a), size(da, summed)))
    b3 = c.sym.Reshape(_arranged(c, xb, tb, sb, batch + summed + free_b, False),
                       shape=(size(db, batch), size(db, summed), size(db, free_b)))
    got = batch + free_a + free_b
    y = c.sym.Reshape(c.sym.batch_dot(a3, b3),
                      shape=tuple({**da, **db}[lab] for lab in got) or (1,))
    perm = tuple(got.index(lab) for lab in out)
    return c.sym.transpose(y, axes=perm, name=name) if perm != tuple(range(len(out))) else \
        c.sym.identity(y, name=name)


@converter("Einsum")
def _einsum(c: ImportCtx, node: Any, a: dict) -> Optional[list]:
    """Einsum of any number of operands, ellipses, diagonals and implicit outputs."""
    eq = a["equation"]
    eq = eq.decode() if isinstance(eq, bytes) else eq
    terms, out = parse_equation(eq, [c.rank(n, node) for n in node.input], node)
    missing = [lab for lab in out if not any(lab in t for t in terms)]
    if missing or len(set(out)) < len(out):
        raise DataError(f"{node_label(node)}: the output of {eq!r} names labels no operand has "
                        f"or repeats one ({out})")
    name = op_name(node)
    parts = [_prepared(c, node, k, terms, out) for k in range(len(terms))]
    floats = all(np.issubdtype(c.dtypes.get(n, np.dtype(np.float32)), np.floating)
                 for n in node.input)
    if len(parts) == 2 and out and floats:  # batch_dot multiplies floats only
        y = _contract_two(c, parts, out, name)
        if y is not None:
            return [y]
    rest = [lab for _, t, _ in parts for lab in t if lab not in out]
    labels = out + list(dict.fromkeys(rest))
    y = reduce(c.sym.broadcast_mul, [_arranged(c, x, t, sh, labels, True) for x, t, sh in parts])
    if len(labels) > len(out):
        return [c.sym.sum(y, axis=tuple(range(len(out), len(labels))), name=name)]
    return [c.sym.identity(y, name=name)]
