"""Densities ``_random_pdf_<law>(sample, *params, is_log)``: MXNet's names and parameter order.

Parameters have shape P, the sample P + S (each parameter set scores the S samples of its row),
the output P + S; ``_random_pdf_dirichlet`` takes alpha (P..., K) and sample (P..., S..., K)
and gives P + S. Each law is written once, as its log-density and the derivatives of that
log-density, over a small namespace ``F`` of functions: scalar formulas for the forward
(evaluated in float64 for the reference), the graph's ops for the gradient, so the gradient
is built from registered ops (elementwise, broadcast and sum: it fuses, and runs on the GPU).
``gamma``'s ``beta`` is a rate here, as in MXNet (its sampler's ``beta`` is a scale).
Discrete laws (Poisson, negative binomials) have no gradient in their integer sample: zero,
as in MXNet. On the GPU a density is one
elementwise kernel of its formula (``pdf_formula``), the parameters read along the leading
axes (``cuda/lowering_random_pdf``); Dirichlet's sums its last axis in one kernel.
"""
from __future__ import annotations

from functools import partial
from types import SimpleNamespace
from typing import Any, Callable

import numpy as np

from ...core import expr as E
from ...core.attrs import Attrs, Param
from ...core.base import ShapeError
from ...core.expr import PRIMS, Expr, evaluate, inp
from ...core.registry import OPAQUE, OpDef, RunCtx, register, alias as _alias
from ._util import fmt, known_input_shape

# The functions the formulas call, as scalar formulas: the forward is one formula.
EXPR = SimpleNamespace(log=E.log, lgamma=lambda v: E.call("lgamma", v),
                       digamma=lambda v: E.call("digamma", v))

LOG_2PI = float(np.log(2.0 * np.pi))

# law: (parameter names, log-density(F, x, *p), its derivatives [d/dx, d/dp...](F, x, *p))
PDFS: dict[str, tuple[tuple[str, ...], Callable, Callable]] = {
    "uniform": (("low", "high"),
                lambda F, x, lo, hi: 0.0 * x - F.log(hi - lo),
                lambda F, x, lo, hi: [0.0 * x, 1.0 / (hi - lo) + 0.0 * x,
                                      -1.0 / (hi - lo) + 0.0 * x]),
    "normal": (("mu", "sigma"),
               lambda F, x, m, s: -(x - m) * (x - m) / (2.0 * s * s) - F.log(s) - 0.5 * LOG_2PI,
               lambda F, x, m, s: [(m - x) / (s * s), (x - m) / (s * s),
                                   (x - m) * (x - m) / (s * s * s) - 1.0 / s]),
    "gamma": (("alpha", "beta"),
              lambda F, x, a, b: a * F.log(b) + (a - 1.0) * F.log(x) - b * x - F.lgamma(a),
              lambda F, x, a, b: [(a - 1.0) / x - b, F.log(b) + F.log(x) - F.digamma(a),
                                  a / b - x]),
    "exponential": (("lam",),
                    lambda F, x, lam: F.log(lam) - lam * x,
                    lambda F, x, lam: [0.0 * x - lam, 1.0 / lam - x]),
    "poisson": (("lam",),
                lambda F, x, lam: x * F.log(lam) - lam - F.lgamma(x + 1.0),
                lambda F, x, lam: [0.0 * x, x / lam - 1.0]),
    "negative_binomial": (
        ("k", "p"),
        lambda F, x, k, p: (F.lgamma(x + k) - F.lgamma(x + 1.0) - F.lgamma(k) + k * F.log(p)
                            + x * F.log(1.0 - p)),
        lambda F, x, k, p: [0.0 * x,
                            F.digamma(x + k) - F.digamma(k) + F.log(p),
                            k / p - x / (1.0 - p)]),
    "generalized_negative_binomial": (
        ("mu", "alpha"),
        # a negative binomial with k = 1/alpha, p = 1/(1 + alpha mu)
        lambda F, x, m, a: (F.lgamma(x + 1.0 / a) - F.lgamma(x + 1.0) - F.lgamma(1.0 / a)
                            - F.log(1.0 + a * m) / a + x * (F.log(a * m) - F.log(1.0 + a * m))),
        lambda F, x, m, a: [
            0.0 * x,
            (x - m) / (m * (1.0 + a * m)),
            (F.digamma(1.0 / a) - F.digamma(x + 1.0 / a) + F.log(1.0 + a * m)) / (a * a)
            - m / (a * (1.0 + a * m)) + x / a - x * m / (1.0 + a * m)]),
}


def _pdf_shape(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    """sample P + S, parameters P, output P + S (the sample's shape)."""
    sample = ins[0] if ins[0] is not None else outs[0]
    if sample is None:
        return ins, outs
    for i, p in enumerate(ins[1:], 1):
        if p is not None and tuple(sample[:len(p)]) != tuple(p):
            raise ShapeError(f"parameter {i} has shape {fmt(p)}; the sample {fmt(sample)} "
                             f"must start with it")
    return [sample] + list(ins[1:]), [sample]


def _expand(p: np.ndarray, ndim: int) -> np.ndarray:
    return np.reshape(p, p.shape + (1,) * (ndim - p.ndim))


def pdf_formula(law: str, a: Attrs, x: Expr, *params: Expr) -> Expr:
    """The density of ``law`` at ``x`` (its log with ``is_log``) as a scalar formula: the
    numpy reference evaluates it in float64, the GPU kernel in float."""
    logp = PDFS[law][1](EXPR, x, *params)
    if law == "uniform":  # outside [low, high] the density is 0
        inside = E.call("ge", x, params[0]) * E.call("le", x, params[1])
        logp = E.where(inside, logp, -np.inf)
    return logp if a["is_log"] else E.exp(logp)


def _pdf_compute(law: str, a: Attrs, xs: list, ctx: RunCtx) -> list:
    x = xs[0].astype(np.float64)
    params = [_expand(p.astype(np.float64), x.ndim) for p in xs[1:]]
    formula = pdf_formula(law, a, *(inp(k) for k in range(len(xs))))
    (out,) = evaluate([formula], [x, *params], np.float64)
    return [out.astype(xs[0].dtype)]


def _pdf_gradient(law: str, c: Any) -> list:
    """d/dsample = g * dlog/dx; d/dparam = sum over the S axes of g * dlog/dparam, where g is
    the output gradient (times the density unless is_log)."""
    x, params = c.inputs[0], c.inputs[1:]
    shape = known_input_shape(c, 0)
    pshape = known_input_shape(c, 1)
    lead = len(pshape)
    wide = [c.sym.reshape(p, shape=pshape + (1,) * (len(shape) - lead)) for p in params]
    g = c.ograds[0] if c.attrs["is_log"] else c.ograds[0] * c.outputs[0]
    derivs = PDFS[law][2](_graph_ns(c), x, *wide)
    grads = [g * derivs[0]]
    axes = tuple(range(lead, len(shape)))
    for d in derivs[1:]:
        grads.append(c.sym.sum(g * d, axis=axes) if axes else g * d)
    return grads


def _graph_ns(c: Any) -> SimpleNamespace:
    return SimpleNamespace(log=c.sym.log, lgamma=c.sym.gammaln, digamma=c.sym._digamma)


IS_LOG = {"is_log": Param("bool", False, doc="return the log-density")}

for _name, (_params, _, _) in PDFS.items():
    register(OpDef(
        f"_random_pdf_{_name}", IS_LOG, ("sample",) + _params, _pdf_shape,
        partial(_pdf_compute, _name), partial(_pdf_gradient, _name), OPAQUE,
        lowering=("leading_elementwise", {"formula": partial(pdf_formula, _name)}),
        doc=f"Density of the {_name} law at sample, one parameter set "
            f"({', '.join(_params)}) per leading index; log-density with is_log."))
    _alias(f"random_pdf_{_name}", f"_random_pdf_{_name}")


# -- Dirichlet: alpha (P..., K), sample (P..., S..., K), output P + S ----------------------------

def _dirichlet_shape(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    sample, alpha = ins
    if sample is None:
        return ins, outs
    if alpha is not None and (len(alpha) > len(sample) or sample[-1] != alpha[-1]
                              or tuple(sample[:len(alpha) - 1]) != tuple(alpha[:-1])):
        raise ShapeError(f"alpha has shape {fmt(alpha)}; the sample {fmt(sample)} must start "
                         f"with its leading axes and end with its {fmt(alpha[-1:])}")
    return ins, [tuple(sample[:-1])]


def _dirichlet_compute(a: Attrs, xs: list, ctx: RunCtx) -> list:
    x = xs[0].astype(np.float64)
    alpha = xs[1].astype(np.float64)
    alpha = alpha.reshape(alpha.shape[:-1] + (1,) * (x.ndim - alpha.ndim) + alpha.shape[-1:])
    lg = PRIMS["lgamma"].numpy
    with np.errstate(divide="ignore", invalid="ignore"):
        logp = ((alpha - 1.0) * np.log(x) - lg(alpha)).sum(axis=-1) \
            + lg(alpha.sum(axis=-1))
    return [(logp if a["is_log"] else np.exp(logp)).astype(xs[0].dtype)]


def _dirichlet_gradient(c: Any) -> list:
    """dlog/dx_k = (alpha_k - 1) / x_k; dlog/dalpha_k = log x_k + digamma(sum alpha)
    - digamma(alpha_k), summed over the S axes for alpha."""
    x, alpha = c.inputs
    shape, ashape = known_input_shape(c, 0), known_input_shape(c, 1)
    lead, s = len(ashape) - 1, len(shape) - len(ashape)
    wide = c.sym.reshape(alpha, shape=ashape[:-1] + (1,) * s + ashape[-1:])
    g = c.ograds[0] if c.attrs["is_log"] else c.ograds[0] * c.outputs[0]
    g = c.sym.reshape(g, shape=tuple(shape[:-1]) + (1,))
    total = c.sym.sum(wide, axis=-1, keepdims=True)
    dx = g * ((wide - 1.0) / x)
    da = g * (c.sym.log(x) + c.sym._digamma(total) - c.sym._digamma(wide))
    axes = tuple(range(lead, lead + s))
    return [dx, c.sym.reshape(c.sym.sum(da, axis=axes), shape=ashape) if axes else da]


register(OpDef(
    "_random_pdf_dirichlet", IS_LOG, ("sample", "alpha"), _dirichlet_shape, _dirichlet_compute,
    _dirichlet_gradient, OPAQUE, lowering="dirichlet_pdf",
    doc="Density of the Dirichlet law of concentrations alpha (..., K) at sample "
        "(..., S..., K); log-density with is_log."))
_alias("random_pdf_dirichlet", "_random_pdf_dirichlet")
