"""The densities' GPU lowering (``ops/random_pdf``): family ``leading_elementwise``, one
elementwise kernel of the op's formula whose parameter inputs span the leading axes of input 0
(shape P of its P + S), and family ``dirichlet_pdf``, one thread per output element summing
the last axis.
"""
from __future__ import annotations

from math import prod

from ..expr import inp
from .actions import StepCtx, family, launch
from .codegen import Rendered, grid_stride_kernel, ptr
from .kernels_random_draw import read
from .lowering_elementwise import elementwise_actions


@family("leading_elementwise")
def _leading_elementwise(ctx: StepCtx, p: dict) -> list:
    """``p['formula'](attrs, x, *params)``: each input is read as its shape followed by ones
    up to the output's rank, so numpy-style broadcasting lines it up on the leading axes."""
    out = ctx.out_shapes[0]
    if not prod(out):
        return []
    shapes = [tuple(s) + (1,) * (len(out) - len(s)) for s in ctx.in_shapes]
    e = p["formula"](ctx.attrs, *(inp(i) for i in range(len(ctx.ins))))
    return elementwise_actions(ctx, ctx.stem, [e], shapes, ctx.ins, out, ctx.outs)


def render_dirichlet_pdf(k: int, per_row: int, is_log: bool, x_t: str, a_t: str,
                         y_t: str) -> Rendered:
    """y[i] = the Dirichlet log-density (density unless ``is_log``) of sample row ``i`` (``k``
    values) under alpha row ``i / per_row``, computed in float."""
    body = (f"        const long long xrow = i * {k}LL, arow = i / {per_row}LL * {k}LL;\n"
            "        float acc = 0.f, total = 0.f;\n"
            f"        for (long long c = 0; c < {k}LL; ++c) {{\n"
            f"            const float a = {read('alpha[arow + c]', a_t)};\n"
            f"            acc += (a - 1.f) * logf({read('x[xrow + c]', x_t)}) - lgammaf(a);\n"
            "            total += a;\n        }\n"
            "        const float logp = acc + lgammaf(total);\n"
            f"        y[i] = {'logp' if is_log else 'expf(logp)'};\n")
    params = f"{ptr('y', y_t, False)}, {ptr('x', x_t)}, {ptr('alpha', a_t)}"
    return grid_stride_kernel("pdf_dirichlet", f"{k},{per_row},{is_log}", params, body, 3)


@family("dirichlet_pdf")
def _dirichlet_pdf(ctx: StepCtx, p: dict) -> list:
    """sample (P..., S..., K), alpha (P..., K) -> (P..., S...)."""
    n = prod(ctx.out_shapes[0])
    if not n:
        return []
    per_row = n // max(prod(ctx.in_shapes[1][:-1]), 1)
    kern = render_dirichlet_pdf(ctx.in_shapes[0][-1], per_row, ctx.attrs["is_log"],
                                *(ctx.dt(r) for r in (*ctx.ins, ctx.outs[0])))
    return [launch(ctx, kern, (ctx.outs[0], *ctx.ins), n)]
