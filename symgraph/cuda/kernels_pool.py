"""Kernel templates of the pooling layers: forward, backward and gather, for 1-D, 2-D and 3-D
windows (1-D as 2-D with H = KH = 1, 2-D as 3-D with D = KD = OD = 1: the constant axis folds
away when nvcc compiles the baked-in shape).

Pooling follows the numpy reference exactly: max pads with -inf and its gradient goes to the
first maximum of each window (in kernel order; a padding cell that comes first takes it, and it
is dropped); avg divides by the cells inside the padded input (``count_include_pad``) or inside
the input. The backward pass is a gather over the windows that contain each input cell, so no
atomics and the result is deterministic.
"""
from __future__ import annotations

from dataclasses import dataclass

from .codegen import Rendered, c_float, kernel_name
from .kernels_nn import LOOP, Window2d, _kernel

NEG_INF = c_float(float("-inf"))


@dataclass(frozen=True)
class Pool2d(Window2d):
    """Geometry of a pooling layer (3-D ones set the depth fields of :class:`Window2d`)."""

    oh: int
    ow: int
    kind: str            # max | avg | sum
    include_pad: bool

    @property
    def cells(self) -> int:
        """Input cells of one (n, c) plane."""
        return self.d * self.h * self.w

    @property
    def outs(self) -> int:
        """Output cells of one (n, c) plane."""
        return self.od * self.oh * self.ow


def _window_loop(g: Pool2d, inner: str) -> str:
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


def _count_fn(g: Pool2d, tag: str) -> str:
    """Divisor of avg window (od, oh, ow), as the numpy reference counts it."""
    def span(start: str, size: int, pad: int, k: int) -> str:
        lo, hi = (-pad, size + pad) if g.include_pad else (0, size)
        return f"max(min({start} + {k}, {hi}) - max({start}, {lo}), 0)"
    return (f"__device__ __forceinline__ float {tag}_count(int od, int oh, int ow) {{\n"
            f"    const int ds = od * {g.sd} - {g.pd}, hs = oh * {g.sh} - {g.ph}, "
            f"ws = ow * {g.sw} - {g.pw};\n"
            f"    return fmaxf(1.f, (float)({span('ds', g.d, g.pd, g.kd)} * "
            f"{span('hs', g.h, g.ph, g.kh)} * {span('ws', g.w, g.pw, g.kw)}));\n}}\n")


def _first_max(g: Pool2d) -> str:
    """Sets ``first``: the cell of window (od, oh, ow) of ``x`` that is the first equal to its
    max ``m``; -2 when that is a padding cell, -1 when none."""
    return ("        int first = -1;\n" + _window_loop(
        g, f"            const float v = inside ? xp[cell] : {NEG_INF};\n"
           "            if (first == -1 && v == m) first = inside ? cell : -2;\n"))


def _out_index(g: Pool2d) -> str:
    return f"(od * {g.oh} + oh) * {g.ow} + ow"


def render_pool(g: Pool2d, gather: bool) -> Rendered:
    """Forward pooling; with ``gather``: each window's value of ``grad`` where its output came
    from (max: the first maximum; avg/sum: pooling of ``grad``)."""
    tag = kernel_name("pool_gather" if gather else "pool", repr(g))
    head = (LOOP + f"        const int ow = (int)(i % {g.ow}), oh = (int)((i / {g.ow}) % {g.oh});\n"
            f"        const int od = (int)((i / {g.oh * g.ow}LL) % {g.od});\n"
            f"        const long long plane = i / {g.outs}LL;\n"
            f"        const float* xp = x + plane * {g.cells}LL;\n")
    if gather:
        head += f"        const float* gp = grad + plane * {g.cells}LL;\n"
    helper = _count_fn(g, tag) if g.kind == "avg" else ""
    if g.kind == "max" and gather:
        body = (head + "        const float m = out[i];\n" + _first_max(g)
                + "        y[i] = first >= 0 ? gp[first] : 0.f;\n    }\n")
    else:
        rd = "gp" if gather else "xp"
        if g.kind == "max":
            init, acc = NEG_INF, f"acc = fmaxf(acc, inside ? {rd}[cell] : {NEG_INF});\n"
        else:
            init, acc = "0.f", f"if (inside) acc += {rd}[cell];\n"
        fin = f"acc / {tag}_count(od, oh, ow)" if g.kind == "avg" else "acc"
        body = (head + f"        float acc = {init};\n"
                + _window_loop(g, "            " + acc) + f"        y[i] = {fin};\n    }}\n")
    params = ("float* __restrict__ y, const float* __restrict__ grad, const float* __restrict__ x, "
              "const float* __restrict__ out, long long n" if gather
              else "float* __restrict__ y, const float* __restrict__ x, long long n")
    return Rendered(tag, helper + _kernel(tag, params, body), 4 if gather else 2)


def _windows_of_cell(axis: str, cell: str, pad: int, k: int, stride: int, out: int) -> str:
    """First and last output position along one axis whose window contains ``cell``."""
    return (f"        const int {axis}0 = max(0, ({cell} + {pad} - {k} + {stride}) / {stride});\n"
            f"        const int {axis}1 = min({out - 1}, ({cell} + {pad}) / {stride});\n")


def render_pool_backward(g: Pool2d) -> Rendered:
    """dx[cell] = sum over windows containing the cell of its share of dy (gather form)."""
    tag = kernel_name("pool_backward", repr(g))
    dy_at = f"dyp[{_out_index(g)}]"
    share = {"max": f"(first == here) ? {dy_at} : 0.f",
             "avg": f"{dy_at} / {tag}_count(od, oh, ow)",
             "sum": dy_at}[g.kind]
    find = ""
    if g.kind == "max":  # the window's first maximum decides whether this cell gets dy
        find = f"            const float m = yp[{_out_index(g)}];\n" + _first_max(g)
    body = (LOOP + f"        const int w = (int)(i % {g.w}), h = (int)((i / {g.w}) % {g.h});\n"
            f"        const int d = (int)((i / {g.h * g.w}LL) % {g.d});\n"
            f"        const int here = (d * {g.h} + h) * {g.w} + w;\n"
            f"        const long long plane = i / {g.cells}LL;\n"
            f"        const float* xp = x + plane * {g.cells}LL;\n"
            f"        const float* yp = out + plane * {g.outs}LL;\n"
            f"        const float* dyp = dy + plane * {g.outs}LL;\n"
            + _windows_of_cell("od", "d", g.pd, g.kd, g.sd, g.od)
            + _windows_of_cell("oh", "h", g.ph, g.kh, g.sh, g.oh)
            + _windows_of_cell("ow", "w", g.pw, g.kw, g.sw, g.ow) +
            "        float acc = 0.f;\n"
            "        for (int od = od0; od <= od1; ++od) for (int oh = oh0; oh <= oh1; ++oh) "
            "for (int ow = ow0; ow <= ow1; ++ow) {\n"
            f"{find}"
            f"            acc += {share};\n"
            "        }\n"
            "        dx[i] = acc;\n"
            "    }\n")
    params = ("float* __restrict__ dx, const float* __restrict__ dy, const float* __restrict__ x, "
              "const float* __restrict__ out, long long n")
    helper = _count_fn(g, tag) if g.kind == "avg" else ""
    return Rendered(tag, helper + _kernel(tag, params, body), 4)
