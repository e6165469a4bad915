"""MXNet's BLAS-3 ops of the ``linalg`` family: ``gemm``, ``gemm2``, ``syrk``, ``trmm`` and
``trsm`` (registered as ``_linalg_<name>``, alias ``linalg_<name>``, as MXNet 1.9.1).

Leading axes are a batch (the same on every operand); the trailing two are the matrices. For
``gemm``/``gemm2`` the rows lie along ``axis`` (default -2) and the columns along the last axis,
as if ``axis`` were swapped with -2 first. ``trmm``/``trsm`` read only the triangle of ``A``
that ``lower`` names. Every gradient is built from these ops and the triangle helper of
``linalg_tri`` (MXNet's backward formulas), so gradients of gradients work.
"""
from __future__ import annotations

import numpy as np

from ...core.attrs import Attrs, Param
from ...core.base import ShapeError
from ...core.registry import GEMM, OpDef, RunCtx, alias, register
from ._util import fmt, norm_axis
from .linalg_tri import square_matrices, tri

Shape = tuple[int, ...]
_T = "Multiply with the transposed "
ALPHA = {"alpha": Param("float", 1.0, doc="Scalar factor multiplied with the product.")}
GEMM2_PARAMS = {"transpose_a": Param("bool", False, doc=_T + "first input (A)."),
                "transpose_b": Param("bool", False, doc=_T + "second input (B)."), **ALPHA,
                "axis": Param("int", -2, doc="Axis of the matrix rows (columns are the last "
                                             "axis).")}
GEMM_PARAMS = {**GEMM2_PARAMS, "beta": Param("float", 1.0, doc="Scalar factor multiplied "
                                                                 "with C.")}
TRI_PARAMS = {"transpose": Param("bool", False, doc="Use the transposed triangular matrix."),
              "rightside": Param("bool", False, doc="The triangular matrix multiplies from "
                                                    "the right."),
              "lower": Param("bool", True, doc="A is lower triangular (upper if false)."),
              **ALPHA}
SYRK_PARAMS = {"transpose": Param("bool", False, doc="A^T A instead of A A^T."), **ALPHA}


def matrices(op: str, shape: Shape, what: str) -> None:
    if len(shape) < 2:
        raise ShapeError(f"{op}: {what} must have at least 2 axes (a matrix), got {fmt(shape)}")


def row_axis(a: Attrs, ndim: int) -> int:
    """``axis`` as a non-negative index; it may not be the column (last) axis."""
    ax = norm_axis(a["axis"], ndim, "axis")
    if ax == ndim - 1:
        raise ShapeError(f"axis={a['axis']} is the column axis of {ndim}-d matrices")
    return ax


def _swapped(shape: Shape, ax: int) -> Shape:
    s = list(shape)
    s[ax], s[-2] = s[-2], s[ax]
    return tuple(s)


def _op_dims(shape: Shape, trans: bool) -> tuple[int, int]:
    return (shape[-1], shape[-2]) if trans else (shape[-2], shape[-1])


def _gemm2_out(op: str, a: Attrs, sa: Shape, sb: Shape) -> Shape:
    matrices(op, sa, "A")
    matrices(op, sb, "B")
    if len(sa) != len(sb):
        raise ShapeError(f"{op}: A {fmt(sa)} and B {fmt(sb)} differ in rank")
    ax = row_axis(a, len(sa))
    ma, mb = _swapped(sa, ax), _swapped(sb, ax)
    (m, k), (k2, n) = _op_dims(ma, a["transpose_a"]), _op_dims(mb, a["transpose_b"])
    if ma[:-2] != mb[:-2] or k != k2:
        raise ShapeError(f"{op}: A {fmt(sa)} and B {fmt(sb)} do not multiply (transpose_a="
                         f"{a['transpose_a']}, transpose_b={a['transpose_b']}, axis={a['axis']})")
    return _swapped(ma[:-2] + (m, n), ax)


def _gemm2_shape(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    if ins[0] is None or ins[1] is None:
        return ins, outs
    return ins, [_gemm2_out("gemm2", a, ins[0], ins[1])]


def _gemm_shape(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    """C and the output share one shape, known from either side or from A and B."""
    out = outs[0] if outs[0] is not None else ins[2]
    if ins[0] is not None and ins[1] is not None:
        prod = _gemm2_out("gemm", a, ins[0], ins[1])
        if out is not None and tuple(out) != prod:
            raise ShapeError(f"gemm: C has shape {fmt(out)}, A {fmt(ins[0])} times B "
                             f"{fmt(ins[1])} gives {fmt(prod)}")
        out = prod
    return [ins[0], ins[1], out], [out]


def product(a: Attrs, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """alpha * op(A) @ op(B) over the row axis ``axis`` (the numpy reference of gemm2)."""
    ax = row_axis(a, x.ndim)
    ma, mb = np.swapaxes(x, ax, -2), np.swapaxes(y, ax, -2)
    ma = np.swapaxes(ma, -1, -2) if a["transpose_a"] else ma
    mb = np.swapaxes(mb, -1, -2) if a["transpose_b"] else mb
    return np.ascontiguousarray(np.swapaxes(a["alpha"] * (ma @ mb), ax, -2))


def _gemm2_grad(c) -> list:
    """dA and dB of alpha op(A) op(B): MXNet's gemm_backward as two gemm2 calls."""
    S, a, (x, y), dy = c.sym, c.attrs, c.inputs[:2], c.ograds[0]
    ta, tb, kw = a["transpose_a"], a["transpose_b"], {"alpha": a["alpha"], "axis": a["axis"]}
    da = (S._linalg_gemm2(y, dy, transpose_a=tb, transpose_b=True, **kw) if ta
          else S._linalg_gemm2(dy, y, transpose_a=False, transpose_b=not tb, **kw))
    db = (S._linalg_gemm2(dy, x, transpose_a=True, transpose_b=ta, **kw) if tb
          else S._linalg_gemm2(x, dy, transpose_a=not ta, transpose_b=False, **kw))
    return [da, db]


def _gemm_grad(c) -> list:
    return _gemm2_grad(c) + [c.sym._mul_scalar(c.ograds[0], scalar=c.attrs["beta"])]


def _gemm(a: Attrs, xs: list, ctx: RunCtx) -> list:
    return [(product(a, xs[0], xs[1]) + a["beta"] * xs[2]).astype(xs[2].dtype)]


def _syrk_shape(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    if ins[0] is None:
        return ins, outs
    matrices("syrk", ins[0], "A")
    n = ins[0][-1] if a["transpose"] else ins[0][-2]
    return ins, [tuple(ins[0][:-2]) + (n, n)]


def _syrk(a: Attrs, xs: list, ctx: RunCtx) -> list:
    x = xs[0]
    xt = np.swapaxes(x, -1, -2)
    return [a["alpha"] * (xt @ x if a["transpose"] else x @ xt)]


def _syrk_grad(c) -> list:
    # out = alpha A A^T: dA = alpha (dY + dY^T) A, two GEMMs instead of a transpose
    S, a, (x,), dy = c.sym, c.attrs, c.inputs, c.ograds[0]
    al = a["alpha"]
    if a["transpose"]:
        return [S._linalg_gemm2(x, dy, alpha=al) + S._linalg_gemm2(x, dy, transpose_b=True,
                                                                   alpha=al)]
    return [S._linalg_gemm2(dy, x, alpha=al) + S._linalg_gemm2(dy, x, transpose_a=True,
                                                               alpha=al)]


def _tri_shape(op: str):
    def rule(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
        if ins[0] is None or ins[1] is None:  # B and the output share one shape
            b = ins[1] if ins[1] is not None else outs[0]
            return [ins[0], b], [b]
        n = square_matrices(op, ins[0])
        matrices(op, ins[1], "B")
        side = ins[1][-1] if a["rightside"] else ins[1][-2]
        if ins[0][:-2] != ins[1][:-2] or side != n:
            raise ShapeError(f"{op}: triangular A {fmt(ins[0])} does not fit B {fmt(ins[1])} "
                             f"(rightside={a['rightside']})")
        return ins, [ins[1]]
    return rule


def triangle(a: Attrs, x: np.ndarray) -> np.ndarray:
    """op(tri(A)): the triangle ``lower`` names, transposed if ``transpose``."""
    t = np.tril(x) if a["lower"] else np.triu(x)
    return np.swapaxes(t, -1, -2) if a["transpose"] else t


def _trmm(a: Attrs, xs: list, ctx: RunCtx) -> list:
    t, b = triangle(a, xs[0]), xs[1]
    return [a["alpha"] * (b @ t if a["rightside"] else t @ b)]


def _trsm(a: Attrs, xs: list, ctx: RunCtx) -> list:
    t, b = triangle(a, xs[0]), a["alpha"] * xs[1]
    if a["rightside"]:  # X T = B  <=>  T^T X^T = B^T
        x = np.swapaxes(np.linalg.solve(np.swapaxes(t, -1, -2), np.swapaxes(b, -1, -2)), -1, -2)
    else:
        x = np.linalg.solve(t, b)
    return [np.ascontiguousarray(x)]


def _tri_factor_grad(S, a: Attrs, u, v, alpha: float):
    """tri(alpha * (u v^T-ish)): the factor's gradient of trmm/trsm, as MXNet forms it (the
    GEMM's operand order and transposes depend on ``rightside`` and ``transpose``)."""
    t = a["transpose"]
    g = (S._linalg_gemm2(u, v, transpose_a=t, transpose_b=not t, alpha=alpha)
         if a["rightside"] == t
         else S._linalg_gemm2(v, u, transpose_a=not t, transpose_b=t, alpha=alpha))
    return tri(S, g, a["lower"])


def _trmm_grad(c) -> list:
    S, a, (x, b), dy = c.sym, c.attrs, c.inputs, c.ograds[0]
    db = S._linalg_trmm(x, dy, **{**a, "transpose": not a["transpose"]})
    return [_tri_factor_grad(S, a, dy, b, a["alpha"]), db]


def _trsm_grad(c) -> list:
    S, a, (x, _), dy = c.sym, c.attrs, c.inputs, c.ograds[0]
    db = S._linalg_trsm(x, dy, **{**a, "transpose": not a["transpose"]})
    return [_tri_factor_grad(S, a, db, c.outputs[0], -1.0 / a["alpha"]), db]


register(OpDef(
    "_linalg_gemm", GEMM_PARAMS, ("A", "B", "C"), _gemm_shape, _gemm, _gemm_grad, GEMM,
    lowering=("linalg_gemm", {"accumulate": True}),
    doc="alpha * op(A) op(B) + beta * C over a batch of matrices (rows along axis)."))
register(OpDef(
    "_linalg_gemm2", GEMM2_PARAMS, ("A", "B"), _gemm2_shape,
    lambda a, xs, ctx: [product(a, xs[0], xs[1])], _gemm2_grad, GEMM,
    lowering=("linalg_gemm", {"accumulate": False}),
    doc="alpha * op(A) op(B) over a batch of matrices (rows along axis)."))
register(OpDef(
    "_linalg_syrk", SYRK_PARAMS, ("A",), _syrk_shape, _syrk, _syrk_grad, GEMM,
    lowering="linalg_syrk", doc="alpha * A A^T (or alpha * A^T A) over a batch of matrices."))
register(OpDef(
    "_linalg_trmm", TRI_PARAMS, ("A", "B"), _tri_shape("trmm"), _trmm, _trmm_grad, GEMM,
    lowering="linalg_trmm",
    doc="alpha * op(A) B (or alpha * B op(A)) with A triangular (only its triangle is read)."))
register(OpDef(
    "_linalg_trsm", TRI_PARAMS, ("A", "B"), _tri_shape("trsm"), _trsm, _trsm_grad, GEMM,
    lowering=("linalg_refused", {"why": "a triangular solve needs cuBLAS trsm, not bound yet"}),
    doc="Solves op(A) X = alpha * B (or X op(A) = alpha * B) for X, A triangular."))
for _name in ("gemm", "gemm2", "syrk", "trmm", "trsm"):
    alias(f"linalg_{_name}", f"_linalg_{_name}")
