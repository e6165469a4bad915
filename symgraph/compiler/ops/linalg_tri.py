"""MXNet's diagonal and triangle ops of the ``linalg`` family: ``extractdiag``, ``makediag``,
``extracttrian``, ``maketrian`` and ``sumlogdiag`` (registered as ``_linalg_<name>`` with the
alias ``linalg_<name>``, as MXNet 1.9.1 does; ``sg.sym.linalg.<name>`` is the same function).

Leading axes are a batch; the trailing two are the (square) matrix. ``offset < 0``, or
``offset == 0`` with ``lower``, names the lower triangle below the ``offset``-th diagonal,
packed row by row; otherwise the upper one, packed column by column (MXNet 1.9.1's order: the
upper triangle of A packs as the lower triangle of A^T).
Each op's gradient is its partner op (extract <-> make), so second derivatives work, and
:func:`tri` (the triangle of a matrix, others zero) is the composition the factorizations'
gradients use.
"""
from __future__ import annotations

from math import isqrt

import numpy as np

from ...core.attrs import Attrs, Param
from ...core.base import ShapeError
from ...core.registry import INJECTIVE, REDUCE, OpDef, RunCtx, alias, register
from ._util import fmt, forward_shape

Shape = tuple[int, ...]
DIAG_PARAMS = {"offset": Param("int", 0, doc="Offset of the diagonal versus the main "
                                             "diagonal: negative below, positive above.")}
TRIAN_PARAMS = {**DIAG_PARAMS, "lower": Param(
    "bool", True, doc="The lower triangle if true, the upper one otherwise (only read when "
                      "offset=0).")}


def square_matrices(op: str, shape: Shape, what: str = "A") -> int:
    """The side of the square matrices of ``shape`` (..., n, n); ShapeError otherwise."""
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise ShapeError(f"{op}: {what} must be square matrices (..., n, n), got {fmt(shape)}")
    return shape[-1]


def is_lower(attrs: Attrs) -> bool:
    """Whether the triangle the attributes name is the lower one."""
    return attrs["offset"] < 0 or (attrs["offset"] == 0 and attrs["lower"])


def trian_indices(n: int, attrs: Attrs) -> tuple[np.ndarray, np.ndarray]:
    """(rows, cols) of the triangle of an n x n matrix, in packed order."""
    k = attrs["offset"]
    if is_lower(attrs):
        return np.tril_indices(n, k)
    cols, rows = np.tril_indices(n, -k)
    return rows, cols


def _check_offset(op: str, n: int, offset: int) -> None:
    if abs(offset) >= n:
        raise ShapeError(f"{op}: offset={offset} leaves no diagonal in {n} x {n} matrices "
                         f"(allowed {1 - n}..{n - 1})")


def _extractdiag_shape(a: Attrs, s: list) -> list:
    n = square_matrices("extractdiag", s[0])
    _check_offset("extractdiag", n, a["offset"])
    return [s[0][:-2] + (n - abs(a["offset"]),)]


def _makediag_shape(a: Attrs, s: list) -> list:
    if not s[0]:
        raise ShapeError("makediag: A must have at least one axis (the diagonal), got ()")
    return [s[0][:-1] + (s[0][-1] + abs(a["offset"]),) * 2]


def _extracttrian_shape(a: Attrs, s: list) -> list:
    n = square_matrices("extracttrian", s[0])
    _check_offset("extracttrian", n, a["offset"])
    m = n - abs(a["offset"])
    return [s[0][:-2] + (m * (m + 1) // 2,)]


def trian_side(length: int, offset: int) -> int:
    """Side of the square matrix whose triangle packs ``length`` entries; ShapeError if
    ``length`` is not a triangular number."""
    m = (isqrt(8 * length + 1) - 1) // 2
    if m * (m + 1) // 2 != length or length == 0:
        raise ShapeError(f"maketrian: {length} entries are not a triangle (1, 3, 6, 10, ...)")
    return m + abs(offset)


def _maketrian_shape(a: Attrs, s: list) -> list:
    if not s[0]:
        raise ShapeError("maketrian: A must have at least one axis (the packed triangle)")
    n = trian_side(s[0][-1], a["offset"])
    return [s[0][:-1] + (n, n)]


def diag_view(a: Attrs, x: np.ndarray) -> np.ndarray:
    """The diagonals of ``x`` (..., n, n) as a strided view (read by the GPU lowering too)."""
    return np.diagonal(x, a["offset"], -2, -1)


def _extractdiag(a: Attrs, xs: list, ctx: RunCtx) -> list:
    return [diag_view(a, xs[0]).copy()]


def _makediag(a: Attrs, xs: list, ctx: RunCtx) -> list:
    (shape,) = _makediag_shape(a, [xs[0].shape])
    out = np.zeros(shape, xs[0].dtype)
    k, steps = a["offset"], np.arange(xs[0].shape[-1])
    out[..., steps + max(0, -k), steps + max(0, k)] = xs[0]
    return [out]


def _extracttrian(a: Attrs, xs: list, ctx: RunCtx) -> list:
    rows, cols = trian_indices(xs[0].shape[-1], a)
    return [xs[0][..., rows, cols].copy()]


def _maketrian(a: Attrs, xs: list, ctx: RunCtx) -> list:
    (shape,) = _maketrian_shape(a, [xs[0].shape])
    out = np.zeros(shape, xs[0].dtype)
    rows, cols = trian_indices(shape[-1], a)
    out[..., rows, cols] = xs[0]
    return [out]


def _sumlogdiag_shape(a: Attrs, s: list) -> list:
    square_matrices("sumlogdiag", s[0])
    return [s[0][:-2] or (1,)]


def _sumlogdiag(a: Attrs, xs: list, ctx: RunCtx) -> list:
    out = np.log(np.diagonal(xs[0], 0, -2, -1)).sum(axis=-1)
    return [np.asarray(out, xs[0].dtype).reshape(_sumlogdiag_shape(a, [xs[0].shape])[0])]


def _sumlogdiag_grad(c) -> list:
    # d/dA_ii = dy / A_ii on the diagonal, 0 elsewhere (MXNet's backward); dy is laid along
    # the diagonals' batch axes (a keepdims sum gives their shape, (1,) for one matrix).
    S, (x,), dy = c.sym, c.inputs, c.ograds[0]
    d = S._linalg_extractdiag(x)
    per_matrix = S.reshape_like(dy, S.sum(d, axis=-1, keepdims=True))
    return [S._linalg_makediag(S.broadcast_div(per_matrix, d))]


def tri(S, x, lower: bool, offset: int = 0):
    """The triangle of the matrices ``x`` (others zero), composed of registered ops. A strict
    triangle is ``x`` less the other full one: for 1x1 matrices its packed form would be empty."""
    if offset == (-1 if lower else 1):
        return x - tri(S, x, not lower)
    packed = S._linalg_extracttrian(x, offset=offset, lower=lower)
    return S._linalg_maketrian(packed, offset=offset, lower=lower)


def _views(fn):
    return lambda a, x, shapes: [fn(a, x)]


_OPS = [
    ("extractdiag", DIAG_PARAMS, _extractdiag_shape, _extractdiag,
     lambda c: [c.sym._linalg_makediag(c.ograds[0], **c.attrs)],
     ("gather_views", {"views": _views(diag_view)}),
     "Diagonal (offset-th) of each square matrix of A (..., n, n)."),
    ("makediag", DIAG_PARAMS, _makediag_shape, _makediag,
     lambda c: [c.sym._linalg_extractdiag(c.ograds[0], **c.attrs)],
     ("scatter_views", {"views": _views(diag_view), "zero": True}),
     "Square matrices with A's last axis on their offset-th diagonal, zeros elsewhere."),
    ("extracttrian", TRIAN_PARAMS, _extracttrian_shape, _extracttrian,
     lambda c: [c.sym._linalg_maketrian(c.ograds[0], **c.attrs)],
     ("linalg_trian", {"make": False}),
     "Triangle of each square matrix of A packed into the last axis (lower: row by row, "
     "upper: column by column)."),
    ("maketrian", TRIAN_PARAMS, _maketrian_shape, _maketrian,
     lambda c: [c.sym._linalg_extracttrian(c.ograds[0], **c.attrs)],
     ("linalg_trian", {"make": True}),
     "Square matrices whose triangle is A's last axis (packed as extracttrian packs), zeros "
     "elsewhere."),
]
for _name, _params, _shape, _compute, _grad, _lowering, _doc in _OPS:
    register(OpDef(f"_linalg_{_name}", _params, ("A",), forward_shape(_shape), _compute, _grad,
                   INJECTIVE, lowering=_lowering, doc=_doc))
    alias(f"linalg_{_name}", f"_linalg_{_name}")

register(OpDef(
    "_linalg_sumlogdiag", {}, ("A",), forward_shape(_sumlogdiag_shape), _sumlogdiag,
    _sumlogdiag_grad, REDUCE, lowering="linalg_sumlogdiag",
    doc="Sum of the natural logarithms of the diagonal of each square matrix of A; shape "
        "A.shape[:-2], or (1,) for one matrix."))
alias("linalg_sumlogdiag", "_linalg_sumlogdiag")
