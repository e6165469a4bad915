"""Lowering families of the ``linalg`` ops (``ops/linalg_*.py``) and ``khatri_rao``.

gemm, gemm2, syrk and trmm are strided-batched cuBLAS GEMMs (the ``Gemm`` action, alpha 1)
followed by one scaling kernel when alpha is not 1; gemm first writes ``beta / alpha * C``
into the output and accumulates the product onto it, so an output sharing C's buffer is safe.
trmm first copies A's triangle (the rest zeroed) into scratch. The triangle ops and sumlogdiag
are kernels of ``kernels_linalg``; extractdiag / makediag are strided views
(``gather_views`` / ``scatter_views``, declared on the ops). Rows along an axis other than -2
(gemm's ``axis``) and the factorizations are refused with a BindError naming node, op and
reason (``linalg_refused``): with ``SYMGRAPH_ALLOW_HOST=1`` they run their numpy reference on
the host instead, with a warning.
"""
from __future__ import annotations

from math import prod

from ...core import config
from ...core.base import BindError, where
from ...core.log import LOGGER
from ...compiler.ops.linalg_tri import is_lower
from .actions import Gemm, Host, StepCtx, family, launch
from .kernels_linalg import render_khatri_rao, render_scale, render_sumlogdiag, render_trian

_WARNED: set[str] = set()


@family("linalg_refused")
def _refused(ctx: StepCtx, p: dict) -> list:
    """BindError with the op's stated reason, or the host path under SYMGRAPH_ALLOW_HOST=1."""
    node = ctx.step.node
    what = f"{where(node.name, node.op)}no GPU lowering: {p['why']}"
    if not config.get("SYMGRAPH_ALLOW_HOST"):
        raise BindError(f"{what}; SYMGRAPH_ALLOW_HOST=1 runs it on the host with its numpy "
                        f"reference")
    if node.op not in _WARNED:
        _WARNED.add(node.op)
        LOGGER.warning("%s: running on the host (SYMGRAPH_ALLOW_HOST=1)", what)
    return [Host(ctx.step)]


def _scaled(ctx: StepCtx, gemm: Gemm, alpha: float) -> list:
    """The GEMM, then y *= alpha in place unless alpha is 1."""
    n = prod(ctx.out_shapes[0])
    out, dt = ctx.outs[0], ctx.storage
    return [gemm] + ([] if alpha == 1.0 else
                     [launch(ctx, render_scale(alpha, "y", dt), (out, out), n)])


@family("linalg_gemm")
def _gemm(ctx: StepCtx, p: dict) -> list:
    """gemm2 (``accumulate`` False) or gemm: one strided-batched GEMM over the batch."""
    a = ctx.attrs
    sa, sb = ctx.in_shapes[0], ctx.in_shapes[1]
    if a["axis"] % len(sa) != len(sa) - 2:
        return _refused(ctx, {"why": f"rows along axis={a['axis']} (only -2 is lowered: "
                                     f"swap the axes first)"})
    m, k = (sa[-1], sa[-2]) if a["transpose_a"] else (sa[-2], sa[-1])
    n = sb[-2] if a["transpose_b"] else sb[-1]
    out, dt, size = ctx.outs[0], ctx.storage, prod(ctx.out_shapes[0])
    gemm = Gemm(a["transpose_a"], a["transpose_b"], m, n, k, ctx.ins[0], ctx.ins[1], out,
                batch=prod(sa[:-2]), dtype=dt, accumulate=p["accumulate"])
    if not p["accumulate"]:
        return _scaled(ctx, gemm, a["alpha"])
    if a["alpha"] == 0.0:  # beta * C only
        return [launch(ctx, render_scale(a["beta"], "x", dt), (out, ctx.ins[2]), size)]
    first = launch(ctx, render_scale(a["beta"] / a["alpha"], "x", dt), (out, ctx.ins[2]), size)
    return [first] + _scaled(ctx, gemm, a["alpha"])


@family("linalg_syrk")
def _syrk(ctx: StepCtx, p: dict) -> list:
    """alpha A A^T (or alpha A^T A) as a GEMM of A with itself."""
    sa, x = ctx.in_shapes[0], ctx.ins[0]
    rows, cols = sa[-2], sa[-1]
    ta = ctx.attrs["transpose"]
    m, k = (cols, rows) if ta else (rows, cols)
    gemm = Gemm(ta, not ta, m, m, k, x, x, ctx.outs[0], batch=prod(sa[:-2]), dtype=ctx.storage)
    return _scaled(ctx, gemm, ctx.attrs["alpha"])


@family("linalg_trmm")
def _trmm(ctx: StepCtx, p: dict) -> list:
    """A's triangle into scratch, then alpha op(T) B (or alpha B op(T)) as one GEMM."""
    a, (sa, sb) = ctx.attrs, ctx.in_shapes
    side, batch, dt = sa[-1], prod(sa[:-2]), ctx.storage
    tri = ctx.new_array(prod(sa), dt)
    mask = launch(ctx, render_trian(side, 0, a["lower"], 0, "mask", dt), (tri, ctx.ins[0]),
                  prod(sa))
    m, n, t = sb[-2], sb[-1], a["transpose"]
    gemm = (Gemm(False, t, m, n, side, ctx.ins[1], tri, ctx.outs[0], batch=batch, dtype=dt)
            if a["rightside"] else
            Gemm(t, False, m, n, side, tri, ctx.ins[1], ctx.outs[0], batch=batch, dtype=dt))
    return [mask] + _scaled(ctx, gemm, a["alpha"])


@family("linalg_trian")
def _trian(ctx: StepCtx, p: dict) -> list:
    """extracttrian (``make`` False) or maketrian: one kernel over the square matrices."""
    square, packed = ((ctx.out_shapes[0], ctx.in_shapes[0]) if p["make"]
                      else (ctx.in_shapes[0], ctx.out_shapes[0]))
    n, dt = square[-1], ctx.storage
    kern = render_trian(n, ctx.attrs["offset"], is_lower(ctx.attrs), packed[-1],
                        "make" if p["make"] else "extract", dt)
    return [launch(ctx, kern, (ctx.outs[0], ctx.ins[0]), prod(square))]


@family("linalg_sumlogdiag")
def _sumlogdiag(ctx: StepCtx, p: dict) -> list:
    shape = ctx.in_shapes[0]
    kern = render_sumlogdiag(shape[-1], ctx.storage)
    return [launch(ctx, kern, (ctx.outs[0], ctx.ins[0]), prod(shape[:-2]))]


@family("khatri_rao")
def _khatri_rao(ctx: StepCtx, p: dict) -> list:
    rows = tuple(s[0] for s in ctx.in_shapes)
    kern = render_khatri_rao(rows, ctx.out_shapes[0][1], ctx.storage)
    return [launch(ctx, kern, (ctx.outs[0], *ctx.ins), prod(ctx.out_shapes[0]))]
