"""Kernel templates of the convolution layers: im2col / col2im and the (A, B, P) -> (B, A, P)
transpose with an optional per-channel bias (pooling is in ``kernels_pool``).

Convolution runs as GEMMs over a column matrix laid out (C*KH*KW, N*OH*OW): with that layout the
forward, data-gradient and weight-gradient products are each a single cuBLAS call, and the only
extra passes are im2col / col2im and one transpose between (F, N, P) and (N, F, P).
Groups are contiguous row blocks of the column matrix, the weight and the (F, N, P) product.
Every template takes the storage dtype (the GEMM's: float32, float16 or bfloat16); col2im
accumulates in float.
"""
from __future__ import annotations

from ...compiler.ops.geometry import ConvWindow
from .codegen import Rendered, dtype_helpers, grid_stride_kernel, ptr, with_dtype


def render_im2col(g: ConvWindow, dtype: str = "float32") -> Rendered:
    """col[((c*KD+kk)*KH+ki)*KW+kj][n*P + (od*OH+oh)*OW+ow] = x[n][c][d][h][w] at
    d = od*sd-pd+kk*dd (h, w alike), or 0 in the padding; 2-D layers have D = KD = OD = 1."""
    kk = g.kh * g.kw
    body = (f"        const long long q = i % {g.cols}LL, row = i / {g.cols}LL;\n"
            f"        const long long nn = q / {g.pix}LL, pp = q % {g.pix}LL;\n"
            f"        const int ow = (int)(pp % {g.ow}), oh = (int)((pp / {g.ow}) % {g.oh});\n"
            f"        const int od = (int)(pp / {g.oh * g.ow});\n"
            f"        const int kj = (int)(row % {g.kw}), ki = (int)((row / {g.kw}) % {g.kh});\n"
            f"        const int kk = (int)((row / {kk}) % {g.kd});\n"
            f"        const long long c = row / {g.kd * kk}LL;\n"
            f"        const int d = od * {g.sd} - {g.pd} + kk * {g.dd};\n"
            f"        const int h = oh * {g.sh} - {g.ph} + ki * {g.dh};\n"
            f"        const int w = ow * {g.sw} - {g.pw} + kj * {g.dw};\n"
            f"        col[i] = (d >= 0 && d < {g.d} && h >= 0 && h < {g.h} && w >= 0 && w < {g.w})"
            f" ? sg_ld(x[(((nn * {g.c} + c) * {g.d} + d) * {g.h} + h) * {g.w} + w]) : 0.f;\n")
    params = f"{ptr('col', dtype, False)}, {ptr('x', dtype)}"
    return grid_stride_kernel(with_dtype("im2col", dtype), repr(g) + dtype, params, body, 2,
                              helpers=dtype_helpers(dtype))


def _col2im_axis(o: str, t: str, k: str, x: str, size: int, kernel: int, stride: int, pad: int,
                 dilate: int, out: int, indent: str) -> str:
    """The loop over one kernel axis ``k``: output position ``o`` whose window reads ``x``."""
    return (f"{indent}for (int {k} = 0; {k} < {kernel}; ++{k}) {{\n"
            f"{indent}    const int {t} = {x} + {pad} - {k} * {dilate};\n"
            f"{indent}    if ({t} < 0 || {t} % {stride}) continue;\n"
            f"{indent}    const int {o} = {t} / {stride};\n"
            f"{indent}    if ({o} >= {out}) continue;\n")


def render_col2im(g: ConvWindow, dtype: str = "float32") -> Rendered:
    """dx[n][c][d][h][w] = sum of the column entries that im2col read from that cell."""
    loops = (_col2im_axis("od", "td", "kk", "d", g.d, g.kd, g.sd, g.pd, g.dd, g.od, " " * 8)
             + _col2im_axis("oh", "th", "ki", "h", g.h, g.kh, g.sh, g.ph, g.dh, g.oh, " " * 12)
             + _col2im_axis("ow", "tw", "kj", "w", g.w, g.kw, g.sw, g.pw, g.dw, g.ow, " " * 16))
    body = (f"        const int w = (int)(i % {g.w}), h = (int)((i / {g.w}) % {g.h});\n"
            f"        const int d = (int)((i / {g.h * g.w}LL) % {g.d});\n"
            f"        const long long c = (i / {g.d * g.h * g.w}LL) % {g.c}LL;\n"
            f"        const long long nn = i / {g.c * g.d * g.h * g.w}LL;\n"
            "        float acc = 0.f;\n" + loops +
            f"                    acc += sg_ld(col[(((c * {g.kd} + kk) * {g.kh} + ki) * {g.kw}"
            " + kj)"
            f" * {g.cols}LL + nn * {g.pix}LL + (od * {g.oh} + oh) * {g.ow} + ow]);\n"
            "                }\n            }\n        }\n"
            "        dx[i] = acc;\n")
    params = f"{ptr('dx', dtype, False)}, {ptr('col', dtype)}"
    return grid_stride_kernel(with_dtype("col2im", dtype), repr(g) + dtype, params, body, 2,
                              helpers=dtype_helpers(dtype))


def render_swap01(a: int, b: int, p: int, bias: bool, dtype: str = "float32") -> Rendered:
    """y[bb][aa][pp] = x[aa][bb][pp] (+ bias[aa] when ``bias``), one thread per element."""
    add = " + sg_ld(bias[aa])" if bias else ""
    body = (f"        const long long pp = i % {p}LL, aa = (i / {p}LL) % {a}LL;\n"
            f"        const long long bb = i / {a * p}LL;\n"
            f"        y[i] = sg_ld(x[(aa * {b}LL + bb) * {p}LL + pp]){add};\n")
    params = f"{ptr('y', dtype, False)}, {ptr('x', dtype)}"
    params += f", {ptr('bias', dtype)}" if bias else ""
    return grid_stride_kernel(with_dtype("swap01_bias" if bias else "swap01", dtype),
                              f"{a},{b},{p},{bias},{dtype}", params, body, 3 if bias else 2,
                              helpers=dtype_helpers(dtype))
