"""Cases for MXNet's ``linalg`` family and ``khatri_rao`` (ops/linalg_*.py, ops/khatri_rao.py).

References are float64 numpy written from MXNet's documented semantics: einsum products,
``np.linalg`` solves and decompositions, explicit loops for the packed triangles, a Householder
LQ written here (LAPACK's sign convention) for ``gelqf``. Gradients are checked against central
differences; symmetric-input ops (potrf, syevd) are differentiated through ``X + X^T`` or
``X X^T + I``, where their symmetric gradient convention and the true one agree. Values were
also compared with MXNet 1.9.1 live (tests/ops/test_linalg.py).
"""
from __future__ import annotations

import numpy as np

import symgraph as sg

from .case import Case, normal, uniform

S = sg.sym
L = S.linalg
a, b, c, x, eye = S.var("a"), S.var("b"), S.var("c"), S.var("x"), S.var("eye")


def t(m: np.ndarray) -> np.ndarray:
    return np.swapaxes(m, -1, -2)


def well_conditioned(*shape: int):
    """Random matrices plus 3 I (triangles and inverses far from singular)."""
    return lambda rng: rng.normal(size=shape) * 0.5 + 3 * np.eye(shape[-1])


def fixed_eye(n: int):
    return lambda rng: np.eye(n)


def _householder_lq(m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A = L Q by Householder reflections from the right, beta = -sign(alpha) |x| (LAPACK)."""
    rows, cols = m.shape
    r, q = m.astype(np.float64).copy(), np.eye(cols)
    for k in range(rows):
        v = r[k, k:].copy()
        beta = -np.copysign(np.linalg.norm(v), v[0])
        v[0] -= beta
        v /= np.linalg.norm(v)
        h = np.eye(cols)
        h[k:, k:] -= 2 * np.outer(v, v)
        r, q = r @ h, h @ q
    return q[:rows], np.tril(r[:, :rows])


def _lq(a: np.ndarray) -> list:
    pairs = [_householder_lq(m) for m in a.reshape((-1,) + a.shape[-2:])]
    return [np.stack([p[0] for p in pairs]).reshape(a.shape),
            np.stack([p[1] for p in pairs]).reshape(a.shape[:-1] + (a.shape[-2],))]


def _eig_rows(m: np.ndarray) -> list:
    lam, v = np.linalg.eigh(m)
    u = t(v).copy()
    for row in u.reshape(-1, u.shape[-1]):
        if row[np.argmax(np.abs(row))] < 0:
            row *= -1
    return [u, lam]


def _spots(n: int, keep, upper: bool) -> list:
    """The triangle's (row, col) in MXNet's packing: lower row by row, upper column by column."""
    pairs = [(i, j) for i in range(n) for j in range(n) if keep(i, j)]
    return sorted(pairs, key=lambda p: (p[1], p[0])) if upper else pairs


def _packed(m: np.ndarray, keep, upper: bool) -> np.ndarray:
    return np.stack([m[..., i, j] for i, j in _spots(m.shape[-1], keep, upper)], -1)


def _unpacked(p: np.ndarray, n: int, keep, upper: bool) -> np.ndarray:
    out = np.zeros(p.shape[:-1] + (n, n))
    spots = _spots(n, keep, upper)
    for k, (i, j) in enumerate(spots):
        out[..., i, j] = p[..., k]
    return out


def _kr(**named: np.ndarray) -> np.ndarray:
    ms = [named[k] for k in sorted(named)]
    rows = np.ones((1, ms[0].shape[1]))
    for m in ms:
        rows = np.einsum("ic,jc->ijc", rows, m).reshape(-1, m.shape[1])
    return rows


_BLAS = [
    Case("_linalg_gemm2", lambda: L.gemm2(a, b, alpha=0.7), {
        "a": normal(3, 4), "b": normal(4, 5)}, lambda a, b: 0.7 * a @ b, id="gemm2"),
    Case("_linalg_gemm2", lambda: S.linalg_gemm2(a, b, transpose_a=True, transpose_b=True), {
        "a": normal(2, 4, 3), "b": normal(2, 5, 4)}, lambda a, b: t(a) @ t(b), id="gemm2-tt"),
    Case("_linalg_gemm2", lambda: L.gemm2(a, b, axis=1, transpose_b=True), {
        "a": normal(2, 3, 4, 5), "b": normal(2, 6, 4, 5)},
        lambda a, b: np.einsum("xiyk,xjyk->xiyj", a, b), id="gemm2-axis1"),
    Case("_linalg_gemm", lambda: L.gemm(a, b, c, transpose_b=True, alpha=2.0, beta=-0.5), {
        "a": normal(2, 3, 4), "b": normal(2, 5, 4), "c": normal(2, 3, 5)},
        lambda a, b, c: 2.0 * a @ t(b) - 0.5 * c, id="gemm"),
    Case("_linalg_gemm", lambda: S.linalg_gemm(a, b, c, axis=0, transpose_a=True), {
        "a": normal(4, 2, 3), "b": normal(4, 2, 5), "c": normal(3, 2, 5)},
        lambda a, b, c: np.einsum("kxi,kxj->ixj", a, b) + c, id="gemm-axis0"),
    Case("_linalg_syrk", lambda: L.syrk(a, alpha=1.5), {"a": normal(3, 4)},
         lambda a: 1.5 * a @ a.T, id="syrk"),
    Case("_linalg_syrk", lambda: L.syrk(a, transpose=True), {"a": normal(2, 3, 4)},
         lambda a: t(a) @ a, id="syrk-t"),
    Case("_linalg_trmm", lambda: L.trmm(a, b, alpha=2.0), {"a": normal(2, 3, 3),
         "b": normal(2, 3, 4)}, lambda a, b: 2.0 * np.tril(a) @ b, id="trmm"),
    Case("_linalg_trmm", lambda: L.trmm(a, b, transpose=True, rightside=True, lower=False), {
        "a": normal(3, 3), "b": normal(4, 3)}, lambda a, b: b @ np.triu(a).T, id="trmm-rtu"),
    Case("_linalg_trmm", lambda: L.trmm(a, b, rightside=True), {
        "a": normal(3, 3), "b": normal(2, 3)}, lambda a, b: b @ np.tril(a), id="trmm-r"),
    Case("_linalg_trsm", lambda: L.trsm(a, b, alpha=0.5), {"a": well_conditioned(2, 3, 3),
         "b": normal(2, 3, 4)}, lambda a, b: np.linalg.solve(np.tril(a), 0.5 * b), id="trsm"),
    Case("_linalg_trsm", lambda: L.trsm(a, b, transpose=True, lower=False), {
        "a": well_conditioned(3, 3), "b": normal(3, 2)},
        lambda a, b: np.linalg.solve(np.triu(a).T, b), id="trsm-tu"),
    Case("_linalg_trsm", lambda: L.trsm(a, b, rightside=True, alpha=-2.0), {
        "a": well_conditioned(3, 3), "b": normal(4, 3)},
        lambda a, b: np.linalg.solve(np.tril(a).T, -2.0 * b.T).T, id="trsm-r"),
]

_FACTOR = [
    Case("_linalg_potrf", lambda: L.potrf(L.syrk(x) + eye), {"x": normal(3, 3),
         "eye": fixed_eye(3)}, lambda x, eye: np.linalg.cholesky(x @ x.T + eye),
         grad_nodes=["x"], id="potrf"),
    Case("_linalg_potrf", lambda: L.potrf(L.syrk(x) + eye, lower=False), {
        "x": normal(2, 3, 3), "eye": fixed_eye(3)},
        lambda x, eye: t(np.linalg.cholesky(x @ t(x) + eye)), grad_nodes=["x"],
        id="potrf-upper"),
    Case("_linalg_potri", lambda: L.potri(a), {"a": well_conditioned(2, 3, 3)},
         lambda a: np.linalg.inv(np.tril(a) @ t(np.tril(a))), id="potri"),
    Case("_linalg_potri", lambda: L.potri(a, lower=False), {"a": well_conditioned(3, 3)},
         lambda a: np.linalg.inv(np.triu(a).T @ np.triu(a)), id="potri-upper"),
    Case("_linalg_gelqf", lambda: L.gelqf(a), {"a": normal(2, 3)}, _lq, id="gelqf"),
    Case("_linalg_gelqf", lambda: L.gelqf(a), {"a": normal(2, 2, 4)}, _lq, id="gelqf-batch"),
    Case("_linalg_syevd", lambda: L.syevd(x + S.SwapAxis(x, dim1=-1, dim2=-2)), {
        "x": normal(2, 3, 3)}, lambda x: _eig_rows(x + t(x)), id="syevd"),
    Case("_linalg_inverse", lambda: L.inverse(a), {"a": well_conditioned(2, 3, 3)},
         lambda a: np.linalg.inv(a), id="inverse"),
    Case("_linalg_det", lambda: L.det(a), {"a": normal(2, 3, 3)},
         lambda a: np.linalg.det(a), id="det"),
    Case("_linalg_det", lambda: S.linalg_det(a), {"a": normal(3, 3)},
         lambda a: np.linalg.det(a).reshape(1), id="det-one"),
    Case("_linalg_slogdet", lambda: L.slogdet(a), {"a": normal(3, 3, 3)},
         lambda a: list(np.linalg.slogdet(a)), id="slogdet"),
]

_LOWER = (lambda i, j: j <= i, lambda i, j: j >= i, lambda i, j: j >= i + 1,
          lambda i, j: j <= i - 2)
_TRIAN = [({}, _LOWER[0], False), ({"lower": False}, _LOWER[1], True),
          ({"offset": 1}, _LOWER[2], True), ({"offset": -2, "lower": False}, _LOWER[3], False)]

_DIAG = [
    Case("_linalg_sumlogdiag", lambda: L.sumlogdiag(a), {"a": uniform(2, 3, 3, low=0.5, high=2)},
         lambda a: np.log(np.einsum("bii->bi", a)).sum(-1), id="sumlogdiag"),
    Case("_linalg_sumlogdiag", lambda: L.sumlogdiag(a), {"a": uniform(3, 3, low=0.5, high=2)},
         lambda a: np.log(np.diag(a)).sum().reshape(1), id="sumlogdiag-one"),
    Case("_linalg_extractdiag", lambda: L.extractdiag(a), {"a": normal(2, 3, 3)},
         lambda a: np.einsum("bii->bi", a), id="extractdiag"),
    Case("_linalg_extractdiag", lambda: L.extractdiag(a, offset=-1), {"a": normal(3, 3)},
         lambda a: np.array([a[1, 0], a[2, 1]]), id="extractdiag-below"),
    Case("_linalg_makediag", lambda: L.makediag(a, offset=1), {"a": normal(2, 3)},
         lambda a: np.stack([np.diag(r, 1) for r in a]), id="makediag"),
    Case("_linalg_makediag", lambda: S.linalg_makediag(a), {"a": normal(3)},
         lambda a: np.diag(a), id="makediag-one"),
] + [
    Case("_linalg_extracttrian", lambda k=k: L.extracttrian(a, **k), {"a": normal(2, 4, 4)},
         lambda a, f=f, u=u: _packed(a, f, u), id=f"extracttrian-{n}")
    for n, (k, f, u) in enumerate(_TRIAN)
] + [
    Case("_linalg_maketrian", lambda k=k: L.maketrian(a, **k), {"a": normal(2, size)},
         lambda a, f=f, u=u: _unpacked(a, 4, f, u), id=f"maketrian-{n}")
    for n, ((k, f, u), size) in enumerate(zip(_TRIAN, (10, 10, 6, 3)))
] + [
    Case("khatri_rao", lambda: S.khatri_rao(a, b), {"a": normal(2, 3), "b": normal(4, 3)},
         _kr, id="khatri_rao"),
    Case("khatri_rao", lambda: S.khatri_rao(a, b, c), {"a": normal(2, 2), "b": normal(3, 2),
         "c": normal(2, 2)}, _kr, id="khatri_rao-3"),
]

CASES = _BLAS + _FACTOR + _DIAG
