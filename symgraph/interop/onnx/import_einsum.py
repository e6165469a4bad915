"""ONNX's Einsum, composed from transpose, Reshape, broadcast_mul and sum.

Each operand's labels are made distinct first (a repeated label keeps the diagonal: the
operand times an identity, summed over one of the two axes), labels only one operand has and
the output lacks are summed at once, every operand is laid out over all labels (size 1 where
absent), the product is taken with broadcasting and the labels the output lacks are summed.
This materialises the full product: exact, but no GEMM (a large contraction is slow).
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


def _laid_out(c: ImportCtx, node: Any, k: int, terms: list[Term], out: Term,
              labels: Term) -> Any:
    """Operand ``k`` over all ``labels`` (in that order, size 1 where it lacks one)."""
    name, src = op_name(node), node.input[k]
    shape = list(c.static_shape(src, node))
    x, term, shape = _diagonals(c, c.get(src), list(terms[k]), shape,
                                c.dtypes.get(src, np.dtype(np.float32)), f"{name}_{k}")
    others = {lab for j, t in enumerate(terms) if j != k for lab in t} | set(out)
    alone = [p for p, lab in enumerate(term) if lab not in others]
    if alone:
        x = c.sym.sum(x, axis=tuple(alone))
        term = [lab for p, lab in enumerate(term) if p not in alone]
        shape = [d for p, d in enumerate(shape) if p not in alone]
    order = sorted(range(len(term)), key=lambda p: labels.index(term[p]))
    if order != list(range(len(term))):
        x = c.sym.transpose(x, axes=tuple(order))
    size = {term[p]: shape[p] for p in order}
    full = tuple(size.get(lab, 1) for lab in labels)
    return c.sym.Reshape(x, shape=full) if full != tuple(shape[p] for p in order) else x


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
    rest = [lab for t in terms for lab in t if lab not in out]
    labels = out + list(dict.fromkeys(rest))
    parts = [_laid_out(c, node, k, terms, out, labels) for k in range(len(terms))]
    y = reduce(c.sym.broadcast_mul, parts)
    name = op_name(node)
    if len(labels) > len(out):
        return [c.sym.sum(y, axis=tuple(range(len(out), len(labels))), name=name)]
    return [c.sym.identity(y, name=name)]
