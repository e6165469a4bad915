"""Kernel templates of the pooling layers: forward, backward and gather, for 1-D, 2-D and 3-D
windows (1-D as 2-D with H = KH = 1, 2-D as 3-D with D = KD = OD = 1: the constant axis folds
away when nvcc compiles the baked-in shape).

Pooling follows the numpy reference exactly: max pads with -inf and its gradient goes to the
first maximum of each window (in kernel order; a padding cell that comes first takes it, and it
is dropped); avg divides by the cells inside the padded input (``count_include_pad``) or inside
the input. The backward pass is a gather over the windows that contain each input cell, so no
atomics and the result is deterministic; when windows do not overlap (stride >= kernel on every
axis, the usual 2x2 / 2 max pool) one thread per *tile* (a window and the gap after it) finds the
window's first maximum once and writes every cell of its tile instead.

Pooling and its backward may be the head of a fused group: their kernels then apply the group's
formula where they store (``epilogue``, see ``codegen.epilogue_store``), to every cell written,
zeros included.

Every template takes the storage dtype (``dtype``: float32, float16 or bfloat16): reads go
through ``sg_ld``, windows are searched and summed in float.
"""
from __future__ import annotations

import textwrap
from typing import Optional

from ...core.expr import C_MAX, Expr
from ...compiler.ops.geometry import PoolWindow
from .codegen import (C_TYPES, Rendered, c_float, dtype_helpers, epilogue_params, epilogue_store,
                      grid_stride_kernel, index_type, with_dtype)

NEG_INF = c_float(float("-inf"))


def _window_loop(g: PoolWindow, inner: str) -> str:
    """Loop over the cells of window (od, oh, ow); ``inner`` sees d, h, w, ``inside`` and
    ``cell`` (the flat index in the plane)."""
    return (f"        const int ds = od * {g.sd} - {g.pd}, hs = oh * {g.sh} - {g.ph}, "
            f"ws = ow * {g.sw} - {g.pw};\n"
            f"        for (int kk = 0; kk < {g.kd}; ++kk) for (int ki = 0; ki < {g.kh}; ++ki) "
            f"for (int kj = 0; kj < {g.kw}; ++kj) {{\n"
            "            const int d = ds + kk, h = hs + ki, w = ws + kj;\n"
            f"            const bool inside = d >= 0 && d < {g.d} && h >= 0 && h < {g.h} && "
            f"w >= 0 && w < {g.w};\n"
            f"            const int cell = (d * {g.h} + h) * {g.w} + w;\n"
            f"{inner}"
            "        }\n")


def _count_fn(g: PoolWindow, tag: str) -> str:
    """Divisor of avg window (od, oh, ow), as the numpy reference counts it."""
    def span(start: str, size: int, pad: int, k: int) -> str:
        lo, hi = (-pad, size + pad) if g.include_pad else (0, size)
        return f"max(min({start} + {k}, {hi}) - max({start}, {lo}), 0)"
    return (f"__device__ __forceinline__ float {tag}_count(int od, int oh, int ow) {{\n"
            f"    const int ds = od * {g.sd} - {g.pd}, hs = oh * {g.sh} - {g.ph}, "
            f"ws = ow * {g.sw} - {g.pw};\n"
            f"    return fmaxf(1.f, (float)({span('ds', g.d, g.pd, g.kd)} * "
            f"{span('hs', g.h, g.ph, g.kh)} * {span('ws', g.w, g.pw, g.kw)}));\n}}\n")


def _find_first(g: PoolWindow) -> str:
    """Sets ``first`` (declared -1 before): the cell of window (od, oh, ow) of ``xp`` that is
    the first equal to its max ``m``; -2 when that is a padding cell (the gradient is dropped)."""
    return _window_loop(g, f"            const float v = inside ? sg_ld(xp[cell]) : {NEG_INF};\n"
                           "            if (first == -1 && v == m) first = inside ? cell : -2;\n")


def _first_max(g: PoolWindow) -> str:
    return "        int first = -1;\n" + _find_first(g)


def _out_index(g: PoolWindow) -> str:
    return f"(od * {g.oh} + oh) * {g.ow} + ow"


def _stem(stem: str, epilogue: Optional[Expr], dtype: str) -> str:
    return with_dtype(stem + ("_epilogue" if epilogue is not None else ""), dtype)


def _params(names: str, dtype: str) -> str:
    """``y, x...`` -> typed pointer parameters (the first written, the others read), each
    followed by a comma."""
    t = C_TYPES[dtype]
    first, *rest = names.split(", ")
    return f"{t}* __restrict__ {first}, " + "".join(f"const {t}* __restrict__ {r}, "
                                                     for r in rest)


def render_pool(g: PoolWindow, gather: bool, epilogue: Optional[Expr] = None,
                n_epi: int = 0, dtype: str = "float32") -> Rendered:
    """Forward pooling; with ``gather``: each window's value of ``grad`` where its output came
    from (max: the first maximum; avg/sum: pooling of ``grad``). ``epilogue``: a fused group's
    formula applied to each result, reading ``n_epi`` operands (``codegen.epilogue_store``)."""
    tag = "TAG"  # the kernel's name, filled in by grid_stride_kernel
    t = C_TYPES[dtype]
    idx = index_type(g.n * g.c * max(g.cells, g.outs))
    head = (f"        const {idx} j = ({idx})i;\n"
            f"        const int ow = (int)(j % {g.ow}u), oh = (int)((j / {g.ow}u) % {g.oh}u);\n"
            f"        const int od = (int)((j / {g.oh * g.ow}u) % {g.od}u);\n"
            f"        const {idx} plane = j / {g.outs}u;\n"
            f"        const {t}* xp = x + plane * {g.cells}u;\n")
    if gather:
        head += f"        const {t}* gp = grad + plane * {g.cells}u;\n"
    helper = _count_fn(g, tag) if g.kind == "avg" else ""
    if g.kind == "max" and gather:
        body = head + "        const float m = sg_ld(out[i]);\n" + _first_max(g)
        result = "first >= 0 ? sg_ld(gp[first]) : 0.f"
    else:
        rd = "gp" if gather else "xp"
        if g.kind == "max":
            pick = C_MAX.format("acc", f"inside ? sg_ld({rd}[cell]) : {NEG_INF}")
            init, acc = NEG_INF, f"acc = {pick};\n"  # a NaN in the window wins (numpy)
        else:
            init, acc = "0.f", f"if (inside) acc += sg_ld({rd}[cell]);\n"
        result = f"acc / {tag}_count(od, oh, ow)" if g.kind == "avg" else "acc"
        body = head + f"        float acc = {init};\n" + _window_loop(g, "            " + acc)
    body += epilogue_store(epilogue, "y", "i", result, " " * 8)
    params = _params("y, grad, x, out" if gather else "y, x", dtype)
    params += epilogue_params(n_epi, dtype)
    return grid_stride_kernel(_stem("pool_gather" if gather else "pool", epilogue, dtype),
                              f"{g!r},{epilogue!r},{n_epi},{dtype}", params.rstrip(", "), body,
                              (4 if gather else 2) + n_epi, helper, dtype_helpers(dtype))


BACKWARD_PARAMS = "dx, dy, x, out"


def _windows_of_cell(axis: str, cell: str, pad: int, k: int, stride: int, out: int) -> str:
    """First and last output position along one axis whose window contains ``cell``."""
    return (f"        const int {axis}0 = max(0, ({cell} + {pad} - {k} + {stride}) / {stride});\n"
            f"        const int {axis}1 = min({out - 1}, ({cell} + {pad}) / {stride});\n")


def render_pool_backward(g: PoolWindow, epilogue: Optional[Expr] = None, n_epi: int = 0,
                         dtype: str = "float32") -> Rendered:
    """dx[cell] = sum over windows containing the cell of its share of dy (gather form, one
    thread per input cell); ``epilogue`` as in :func:`render_pool` (relu's backward mask...)."""
    tag = "TAG"  # the kernel's name, filled in by grid_stride_kernel
    t = C_TYPES[dtype]
    dy_at = f"sg_ld(dyp[{_out_index(g)}])"
    share = {"max": f"(first == here) ? {dy_at} : 0.f",
             "avg": f"{dy_at} / {tag}_count(od, oh, ow)",
             "sum": dy_at}[g.kind]
    find = ""
    if g.kind == "max":  # the window's first maximum decides whether this cell gets dy
        find = f"            const float m = sg_ld(yp[{_out_index(g)}]);\n" + _first_max(g)
    idx = index_type(g.n * g.c * max(g.cells, g.outs))
    body = (f"        const {idx} j = ({idx})i;\n"
            f"        const int w = (int)(j % {g.w}u), h = (int)((j / {g.w}u) % {g.h}u);\n"
            f"        const int d = (int)((j / {g.h * g.w}u) % {g.d}u);\n"
            f"        const int here = (d * {g.h} + h) * {g.w} + w;\n"
            f"        const {idx} plane = j / {g.cells}u;\n"
            f"        const {t}* xp = x + plane * {g.cells}u;\n"
            f"        const {t}* yp = out + plane * {g.outs}u;\n"
            f"        const {t}* dyp = dy + plane * {g.outs}u;\n"
            + _windows_of_cell("od", "d", g.pd, g.kd, g.sd, g.od)
            + _windows_of_cell("oh", "h", g.ph, g.kh, g.sh, g.oh)
            + _windows_of_cell("ow", "w", g.pw, g.kw, g.sw, g.ow) +
            "        float acc = 0.f;\n"
            "        for (int od = od0; od <= od1; ++od) for (int oh = oh0; oh <= oh1; ++oh) "
            "for (int ow = ow0; ow <= ow1; ++ow) {\n"
            f"{find}"
            f"            acc += {share};\n"
            "        }\n"
            + epilogue_store(epilogue, "dx", "i", "acc", " " * 8))
    helper = _count_fn(g, tag) if g.kind == "avg" else ""
    params = _params(BACKWARD_PARAMS, dtype) + epilogue_params(n_epi, dtype)
    return grid_stride_kernel(_stem("pool_backward", epilogue, dtype),
                              f"{g!r},{epilogue!r},{n_epi},{dtype}", params.rstrip(", "), body,
                              4 + n_epi, helper, dtype_helpers(dtype))


def render_pool_backward_tiles(g: PoolWindow, epilogue: Optional[Expr] = None,
                               n_epi: int = 0, dtype: str = "float32") -> Rendered:
    """The backward pass when windows do not overlap (``g.disjoint``): one thread per tile
    (``PoolWindow.tiles``, launched over N * C * tiles threads) reads its window's dy (and, for max,
    finds the window's first maximum) once, then writes every input cell of its tile: its share
    inside the window, 0 in the gap after it and in tiles past the last window.
    ``epilogue`` as in :func:`render_pool`, applied to every cell written."""
    tag = "TAG"  # the kernel's name, filled in by grid_stride_kernel
    t = C_TYPES[dtype]
    td, th, tw = g.tiles
    idx = index_type(g.n * g.c * max(g.cells, g.outs, td * th * tw))
    at = f"plane * {g.outs}u + {_out_index(g)}"
    window = {"max": f"            const {t}* xp = x + plane * {g.cells}u;\n"
                     f"            const float m = sg_ld(out[{at}]);\n"
                     + textwrap.indent(_find_first(g), "    "),
              "avg": f"            share /= {tag}_count(od, oh, ow);\n", "sum": ""}[g.kind]
    # Tile cell (kk, ki, kj) is in the window when below the kernel on every axis where the
    # stride leaves a gap (elsewhere that always holds).
    gap = [f"{v} < {k}" for v, k, s in (("kk", g.kd, g.sd), ("ki", g.kh, g.sh),
                                          ("kj", g.kw, g.sw)) if s > k]
    value = ("(cell == first) ? share : 0.f" if g.kind == "max"
             else f"({' && '.join(gap)}) ? share : 0.f" if gap else "share")
    body = (f"        const {idx} j = ({idx})i;\n"
            f"        const int ow = (int)(j % {tw}u), oh = (int)((j / {tw}u) % {th}u);\n"
            f"        const int od = (int)((j / {th * tw}u) % {td}u);\n"
            f"        const {idx} plane = j / {td * th * tw}u;\n"
            "        float share = 0.f;  // no window past the last one: its tile is all 0\n"
            + ("        int first = -1;\n" if g.kind == "max" else "")
            + f"        if (od < {g.od} && oh < {g.oh} && ow < {g.ow}) {{\n"
            f"            share = sg_ld(dy[{at}]);\n{window}"
            "        }\n"
            "#pragma unroll\n"
            f"        for (int kk = 0; kk < {g.sd}; ++kk) for (int ki = 0; ki < {g.sh}; ++ki) "
            f"for (int kj = 0; kj < {g.sw}; ++kj) {{\n"
            f"            const int d = od * {g.sd} - {g.pd} + kk, h = oh * {g.sh} - {g.ph} + ki, "
            f"w = ow * {g.sw} - {g.pw} + kj;\n"
            f"            if (d < 0 || d >= {g.d} || h < 0 || h >= {g.h} || w < 0 || w >= {g.w}) "
            "continue;\n"
            f"            const int cell = (d * {g.h} + h) * {g.w} + w;\n"
            + epilogue_store(epilogue, "dx", f"plane * {g.cells}u + cell", value, " " * 12)
            + "        }\n")
    helper = _count_fn(g, tag) if g.kind == "avg" else ""
    params = _params(BACKWARD_PARAMS, dtype) + epilogue_params(n_epi, dtype)
    return grid_stride_kernel(_stem("pool_backward_tiles", epilogue, dtype),
                              f"{g!r},{epilogue!r},{n_epi},{dtype}", params.rstrip(", "), body,
                              4 + n_epi, helper, dtype_helpers(dtype))
