"""MXNet's factorization ops of the ``linalg`` family: ``potrf``, ``potri``, ``gelqf``,
``syevd``, ``inverse``, ``det`` and ``slogdet`` (``_linalg_<name>``, alias ``linalg_<name>``;
``syevd`` has no alias in MXNet 1.9.1 and none here).

Leading axes are a batch; the trailing two are the matrices. The numpy references are LAPACK
through ``np.linalg`` in the input's dtype. ``potrf`` and ``syevd`` read the lower triangle of
their symmetric input (LAPACK's convention) and, as MXNet, give a symmetric gradient. Every
gradient is MXNet's formula composed of registered ops (gemm2, trsm, the triangle helper), so
gradients of gradients work. A matrix the factorization cannot take (not positive definite,
singular) is a DataError naming the op and the batch index.
"""
from __future__ import annotations

import numpy as np

from ...core.attrs import Attrs, Param
from ...core.base import DataError, ShapeError
from ...core.registry import OPAQUE, REDUCE, OpDef, RunCtx, alias, register
from ._util import fmt, forward_shape
from .linalg_tri import square_matrices, tri

Shape = tuple[int, ...]
CHOLESKY = {"lower": Param("bool", True, doc="Lower triangular factor (A = L L^T) if true, "
                                             "upper (A = U^T U) otherwise.")}
_REFUSED = "linalg_refused"


def _cusolver(what: str) -> tuple[str, dict]:
    return (_REFUSED, {"why": f"{what} needs cuSOLVER, which symgraph does not bind yet"})


def _square(op: str):
    def rule(a: Attrs, s: list) -> list:
        square_matrices(op, s[0])
        return [s[0]]
    return rule


def _per_matrix(op: str, x: np.ndarray, fn):
    """``fn`` on the batch, turning LAPACK's refusal into a DataError naming the matrix."""
    try:
        return fn(x)
    except np.linalg.LinAlgError as exc:
        flat = x.reshape((-1,) + x.shape[-2:])
        for i, m in enumerate(flat):
            try:
                fn(m)
            except np.linalg.LinAlgError:
                raise DataError(f"{op}: matrix {i} of the batch {fmt(x.shape)}: {exc}") from None
        raise DataError(f"{op}: {exc}") from None


def _potrf(a: Attrs, xs: list, ctx: RunCtx) -> list:
    low = _per_matrix("potrf", xs[0], np.linalg.cholesky)
    return [low if a["lower"] else np.ascontiguousarray(np.swapaxes(low, -1, -2))]


def _lower_view(S, f, lower: bool):
    """The Cholesky factor (or its head gradient) as the lower factor L: an upper U is L^T."""
    return f if lower else S.SwapAxis(f, dim1=-1, dim2=-2)


def _potrf_grad(c) -> list:
    """dA = 0.5 L^-T copyLTU(L^T dL) L^-1 (MXNet), with copyLTU(P) = tril(P) + triu(P^T, 1)."""
    S, a, l_, dl_ = c.sym, c.attrs, c.outputs[0], c.ograds[0]
    low, dlow = _lower_view(S, l_, a["lower"]), _lower_view(S, dl_, a["lower"])
    sym = (tri(S, S._linalg_gemm2(low, dlow, transpose_a=True), True)
           + tri(S, S._linalg_gemm2(dlow, low, transpose_a=True), False, 1))
    half = S._linalg_trsm(low, sym, transpose=True, alpha=0.5)
    return [S._linalg_trsm(low, half, rightside=True)]


def _potri(a: Attrs, xs: list, ctx: RunCtx) -> list:
    f = np.tril(xs[0]) if a["lower"] else np.triu(xs[0])
    ft = np.swapaxes(f, -1, -2)
    spd = f @ ft if a["lower"] else ft @ f
    return [_per_matrix("potri", spd, np.linalg.inv)]


def _potri_grad(c) -> list:
    """dL = -tril(Out (dY + dY^T) L^-T) (MXNet); for an upper U: -triu(U^-T (dY + dY^T) Out)."""
    S, a, (f,), out, dy = c.sym, c.attrs, c.inputs, c.outputs[0], c.ograds[0]
    if a["lower"]:
        g = S._linalg_gemm2(out, dy) + S._linalg_gemm2(out, dy, transpose_b=True)
        return [tri(S, S._linalg_trsm(f, g, rightside=True, transpose=True, alpha=-1.0), True)]
    g = S._linalg_gemm2(dy, out) + S._linalg_gemm2(dy, out, transpose_a=True)
    return [tri(S, S._linalg_trsm(f, g, transpose=True, lower=False, alpha=-1.0), False)]


def _gelqf_shape(a: Attrs, s: list) -> list:
    if len(s[0]) < 2 or s[0][-2] > s[0][-1]:
        raise ShapeError(f"gelqf: A must be matrices (..., m, n) with m <= n, got {fmt(s[0])}")
    m = s[0][-2]
    return [s[0], s[0][:-2] + (m, m)]


def _gelqf(a: Attrs, xs: list, ctx: RunCtx) -> list:
    # A = L Q is A^T = Q^T L^T: numpy's (Householder) QR of A^T, the reflections LAPACK's
    # gelqf applies to A, so the signs are MXNet's.
    q, r = np.linalg.qr(np.swapaxes(xs[0], -1, -2))
    return [np.ascontiguousarray(np.swapaxes(q, -1, -2)),
            np.ascontiguousarray(np.swapaxes(r, -1, -2))]


def _gelqf_grad(c) -> list:
    """dA = L^-T (dQ + copyLTU(M) Q), M = L^T dL - dQ Q^T (MXNet's gelqf_backward)."""
    S, (q, low), (dq, dlow) = c.sym, c.outputs, c.ograds
    m = S._linalg_gemm2(low, dlow, transpose_a=True) - S._linalg_gemm2(dq, q, transpose_b=True)
    mt = S._linalg_gemm2(dlow, low, transpose_a=True) - S._linalg_gemm2(q, dq, transpose_b=True)
    sym = tri(S, m, True) + tri(S, mt, False, 1)
    return [S._linalg_trsm(low, dq + S._linalg_gemm2(sym, q), transpose=True)]


def _syevd_shape(a: Attrs, s: list) -> list:
    square_matrices("syevd", s[0])
    return [s[0], s[0][:-1]]


def _syevd(a: Attrs, xs: list, ctx: RunCtx) -> list:
    lam, v = np.linalg.eigh(xs[0])
    u = np.swapaxes(v, -1, -2)  # rows are eigenvectors
    # MXNet's sign rule: the entry of largest magnitude of each row is positive
    big = np.take_along_axis(u, np.abs(u).argmax(axis=-1)[..., None], axis=-1)
    return [np.ascontiguousarray(np.where(big < 0, -u, u)), lam]


def _syevd_grad(c) -> list:
    """dA = U^T Y U; Y = diag(dL) off-diagonal (X - X^T) / (2 (L_i - L_j)), X = dU U^T."""
    S, (u, lam), (du, dlam) = c.sym, c.outputs, c.ograds
    skew = S._linalg_gemm2(du, u, transpose_b=True) - S._linalg_gemm2(u, du, transpose_b=True)
    gaps = S.broadcast_sub(S.expand_dims(lam, axis=-1), S.expand_dims(lam, axis=-2))
    # the diagonal of the skew part is 0; adding I to the gaps keeps 0/0 out of it
    gaps = gaps + S._linalg_makediag(S.ones_like(lam))
    y = S._div_scalar(skew, scalar=2.0) / gaps + S._linalg_makediag(dlam)
    return [S._linalg_gemm2(S._linalg_gemm2(u, y, transpose_a=True), u)]


def _inverse(a: Attrs, xs: list, ctx: RunCtx) -> list:
    return [_per_matrix("inverse", xs[0], np.linalg.inv)]


def _inverse_grad(c) -> list:
    # dA = -B^T dB B^T with B = A^-1
    S, b, db = c.sym, c.outputs[0], c.ograds[0]
    return [S._linalg_gemm2(S._linalg_gemm2(b, db, transpose_a=True), b, transpose_b=True,
                            alpha=-1.0)]


def _reduce_shape(op: str, n_out: int):
    def rule(a: Attrs, s: list) -> list:
        square_matrices(op, s[0])
        return [s[0][:-2] or (1,)] * n_out
    return rule


def _det(a: Attrs, xs: list, ctx: RunCtx) -> list:
    return [np.asarray(np.linalg.det(xs[0]), xs[0].dtype).reshape(xs[0].shape[:-2] or (1,))]


def _slogdet(a: Attrs, xs: list, ctx: RunCtx) -> list:
    sign, logabs = np.linalg.slogdet(xs[0])
    shape = xs[0].shape[:-2] or (1,)
    return [np.asarray(sign, xs[0].dtype).reshape(shape),
            np.asarray(logabs, xs[0].dtype).reshape(shape)]


def _times_inverse_t(c, scale):
    """scale (one value per matrix) times A^-T: Jacobi's formula for det and slogdet."""
    S, (x,) = c.sym, c.inputs
    inv_t = S.SwapAxis(S._linalg_inverse(x), dim1=-1, dim2=-2)
    per_matrix = S.reshape_like(scale, S.sum(S.sum(inv_t, axis=-1, keepdims=True), axis=-2,
                                             keepdims=True))
    return S.broadcast_mul(per_matrix, inv_t)


def _det_grad(c) -> list:
    return [_times_inverse_t(c, c.ograds[0] * c.outputs[0])]


def _slogdet_grad(c) -> list:
    # the sign is piecewise constant: only logabsdet's head gradient flows
    return [_times_inverse_t(c, c.ograds[1])]


register(OpDef(
    "_linalg_potrf", CHOLESKY, ("A",), forward_shape(_square("potrf")), _potrf, _potrf_grad,
    OPAQUE, lowering=_cusolver("Cholesky factorization (potrf)"),
    doc="Cholesky factor of symmetric positive-definite matrices (their lower triangle is "
        "read)."))
register(OpDef(
    "_linalg_potri", CHOLESKY, ("A",), forward_shape(_square("potri")), _potri, _potri_grad,
    OPAQUE, lowering=_cusolver("inversion from a Cholesky factor (potri)"),
    doc="Inverse of B = A A^T (or A^T A if not lower) from its triangular Cholesky factor A."))
register(OpDef(
    "_linalg_gelqf", {}, ("A",), forward_shape(_gelqf_shape), _gelqf, _gelqf_grad, OPAQUE,
    outputs=("Q", "L"), lowering=_cusolver("LQ factorization (gelqf)"),
    doc="LQ factorization A = L Q of (m, n) matrices, m <= n: outputs Q (row-orthonormal) "
        "and L (lower triangular)."))
register(OpDef(
    "_linalg_syevd", {}, ("A",), forward_shape(_syevd_shape), _syevd, _syevd_grad, OPAQUE,
    outputs=("U", "L"), lowering=_cusolver("symmetric eigendecomposition (syevd)"),
    doc="Eigendecomposition A = U^T diag(L) U of symmetric matrices: U (eigenvectors as "
        "rows), L (eigenvalues, ascending)."))
register(OpDef(
    "_linalg_inverse", {}, ("A",), forward_shape(_square("inverse")), _inverse, _inverse_grad,
    OPAQUE, lowering=_cusolver("matrix inversion (getrf/getri)"),
    doc="Inverse of each square matrix."))
register(OpDef(
    "_linalg_det", {}, ("A",), forward_shape(_reduce_shape("det", 1)), _det, _det_grad,
    REDUCE, lowering=_cusolver("the determinant (LU, getrf)"),
    doc="Determinant of each square matrix; shape A.shape[:-2], or (1,) for one matrix."))
register(OpDef(
    "_linalg_slogdet", {}, ("A",), forward_shape(_reduce_shape("slogdet", 2)), _slogdet,
    _slogdet_grad, REDUCE, outputs=("sign", "logabsdet"),
    lowering=_cusolver("the log-determinant (LU, getrf)"),
    doc="Sign and log of the absolute determinant of each square matrix."))
for _name in ("potrf", "potri", "gelqf", "inverse", "det", "slogdet"):
    alias(f"linalg_{_name}", f"_linalg_{_name}")
