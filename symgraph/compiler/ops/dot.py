"""``dot`` with MXNet's N-D semantics, and its two gradient ops.

Every operand is read as a matrix: ``lhs`` (..., K) as (M, K), or with ``transpose_a`` as
(K, ...) = (K, M) transposed; ``rhs`` (K, ...) as (K, N), or with ``transpose_b`` as (..., K) =
(N, K) transposed. The output has the kept axes of both, ``lhs``'s first (``(1,)`` for two
vectors). The gradients are bilinear in their operands, so each one's gradient is ``dot`` or the
other gradient op again (second derivatives work).
"""
from __future__ import annotations

from math import prod

import numpy as np

from ...core.attrs import Attrs, Param
from ...core.base import ShapeError
from ...core.registry import GEMM, OpDef, RunCtx, register
from ._util import fmt, forward_shape

Shape = tuple[int, ...]
DOT_PARAMS = {"transpose_a": Param("bool", False), "transpose_b": Param("bool", False)}


def split_lhs(shape: Shape, trans: bool) -> tuple[Shape, int]:
    """(kept axes, contracted size) of the left operand."""
    return (shape[1:], shape[0]) if trans else (shape[:-1], shape[-1])


def split_rhs(shape: Shape, trans: bool) -> tuple[Shape, int]:
    """(kept axes, contracted size) of the right operand."""
    return (shape[:-1], shape[-1]) if trans else (shape[1:], shape[0])


def _dot_shape(a: Attrs, s: list) -> list:
    lhs, rhs = s
    if not lhs or not rhs:
        raise ShapeError(f"dot: operands must have at least one axis, got {fmt(lhs)} and "
                         f"{fmt(rhs)}")
    (keep_l, kl), (keep_r, kr) = split_lhs(lhs, a["transpose_a"]), split_rhs(rhs, a["transpose_b"])
    if kl != kr:
        raise ShapeError(f"dot: contracted dimensions differ: {kl} of {fmt(lhs)} "
                         f"(transpose_a={a['transpose_a']}) vs {kr} of {fmt(rhs)} "
                         f"(transpose_b={a['transpose_b']})")
    return [keep_l + keep_r or (1,)]


def lhs_matrix(x: np.ndarray, trans: bool) -> np.ndarray:
    """The (M, K) matrix the left operand stands for."""
    return x.reshape(x.shape[0], -1).T if trans else x.reshape(-1, x.shape[-1])


def rhs_matrix(x: np.ndarray, trans: bool) -> np.ndarray:
    """The (K, N) matrix the right operand stands for."""
    return x.reshape(-1, x.shape[-1]).T if trans else x.reshape(x.shape[0], -1)


def _dot_compute(a: Attrs, xs: list, ctx: RunCtx) -> list:
    lhs, rhs = xs
    out = lhs_matrix(lhs, a["transpose_a"]) @ rhs_matrix(rhs, a["transpose_b"])
    return [out.reshape(_dot_shape(a, [lhs.shape, rhs.shape])[0])]


def _grad_lhs_compute(a: Attrs, xs: list, ctx: RunCtx) -> list:
    """d lhs from (dy, rhs, lhs): dy2 B^T as (M, K), stored transposed with transpose_a."""
    dy, rhs, lhs = xs
    b = rhs_matrix(rhs, a["transpose_b"])
    g = dy.reshape(-1, b.shape[1]) @ b.T
    return [(g.T if a["transpose_a"] else g).reshape(lhs.shape)]


def _grad_rhs_compute(a: Attrs, xs: list, ctx: RunCtx) -> list:
    """d rhs from (dy, lhs, rhs): A^T dy2 as (K, N), stored transposed with transpose_b."""
    dy, lhs, rhs = xs
    m = lhs_matrix(lhs, a["transpose_a"])
    g = m.T @ dy.reshape(m.shape[0], -1)
    return [(g.T if a["transpose_b"] else g).reshape(rhs.shape)]


def _dot_grad(c) -> list:
    S, a, (lhs, rhs), dy = c.sym, c.attrs, c.inputs, c.ograds[0]
    return [S._backward_dot_lhs(dy, rhs, lhs, **a), S._backward_dot_rhs(dy, lhs, rhs, **a)]


def _grad_lhs_grad(c) -> list:
    # f(dy, B) = dy2 B^T is bilinear: d dy = g B (a dot), d B = g^T dy2 (the rhs gradient op).
    S, a, (dy, rhs, lhs), g = c.sym, c.attrs, c.inputs, c.ograds[0]
    return [S.dot(g, rhs, **a), S._backward_dot_rhs(dy, g, rhs, **a), None]


def _grad_rhs_grad(c) -> list:
    S, a, (dy, lhs, rhs), g = c.sym, c.attrs, c.inputs, c.ograds[0]
    return [S.dot(lhs, g, **a), S._backward_dot_lhs(dy, g, lhs, **a), None]


def _like_input(index: int):
    def rule(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
        return ins, [ins[index]] if ins[index] is not None else outs
    return rule


register(OpDef(
    "dot", DOT_PARAMS, ("lhs", "rhs"), forward_shape(_dot_shape), _dot_compute, _dot_grad,
    GEMM, lowering=("dot", {"call": "forward"}), partial_shapes=True,  # (kept axes may be 0)
    doc="Matrix product of N-d arrays read as matrices (MXNet's dot), optional transposes."))
register(OpDef(
    "_backward_dot_lhs", DOT_PARAMS, ("ograd", "rhs", "lhs"), _like_input(2),
    _grad_lhs_compute, _grad_lhs_grad, GEMM, lowering=("dot", {"call": "lhs"}),
    doc="Gradient of dot with respect to lhs (lhs is passed for its shape only)."))
register(OpDef(
    "_backward_dot_rhs", DOT_PARAMS, ("ograd", "lhs", "rhs"), _like_input(2),
    _grad_rhs_compute, _grad_rhs_grad, GEMM, lowering=("dot", {"call": "rhs"}),
    doc="Gradient of dot with respect to rhs (rhs is passed for its shape only)."))


def gemm_operands(call: str, shapes: list, ta: bool, tb: bool) -> tuple:
    """(trans_a, trans_b, m, n, k, index of A, index of B) of the one GEMM a dot step is, on
    row-major storage (used by the CUDA lowering)."""
    if call == "forward":
        sa, sb = shapes
    elif call == "lhs":
        sb, sa = shapes[1], shapes[2]
    else:
        sa, sb = shapes[1], shapes[2]
    (keep_l, k), (keep_r, _) = split_lhs(sa, ta), split_rhs(sb, tb)
    m, n = prod(keep_l), prod(keep_r)
    if call == "forward":    # C(M,N) = A(M,K) B(K,N)
        return ta, tb, m, n, k, 0, 1
    if call == "lhs":        # dA(M,K) = dy(M,N) B^T, or stored (K,M) = B dy^T
        return (tb, True, k, m, n, 1, 0) if ta else (False, not tb, m, k, n, 0, 1)
    # dB(K,N) = A^T dy(M,N), or stored (N,K) = dy^T A
    return (True, ta, n, k, m, 0, 1) if tb else (not ta, False, k, n, m, 1, 0)
