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

from dataclasses import dataclass, field

from .codegen import GRID_STRIDE_LOOP, Rendered, dtype_helpers, kernel_name, ptr, with_dtype


@dataclass(frozen=True)
class Window2d:
    """Batch, channels, input size, window, stride and padding of a sliding-window layer: 2-D;
    1-D with H = KH = 1; 3-D with the keyword-only depth fields (input ``d``, kernel ``kd``,
    stride ``sd``, pad ``pd``, output ``od``), which are 1 (pad 0) otherwise."""

    n: int
    c: int
    h: int
    w: int
    kh: int
    kw: int
    sh: int
    sw: int
    ph: int
    pw: int
    d: int = field(default=1, kw_only=True)
    kd: int = field(default=1, kw_only=True)
    sd: int = field(default=1, kw_only=True)
    pd: int = field(default=0, kw_only=True)
    od: int = field(default=1, kw_only=True)


@dataclass(frozen=True)
class Conv2d(Window2d):
    """Geometry of a convolution (3-D ones also set the depth dilation ``dd``). ``c`` counts all
    input channels; ``groups`` split the channels and the filters into independent
    convolutions."""

    dh: int
    dw: int
    oh: int
    ow: int
    groups: int = 1
    dd: int = field(default=1, kw_only=True)

    @property
    def is_3d(self) -> bool:
        return (self.d, self.kd, self.od) != (1, 1, 1)

    @property
    def pix(self) -> int:
        """Output positions per image."""
        return self.od * self.oh * self.ow

    @property
    def ckk(self) -> int:
        return self.c * self.kd * self.kh * self.kw

    @property
    def cols(self) -> int:
        return self.n * self.pix


def _kernel(tag: str, params: str, body: str) -> str:
    return f"extern \"C\" __global__ void {tag}({params}) {{\n{body}}}\n"


LOOP = GRID_STRIDE_LOOP


def render_im2col(g: Conv2d, dtype: str = "float32") -> Rendered:
    """col[((c*KD+kk)*KH+ki)*KW+kj][n*P + (od*OH+oh)*OW+ow] = x[n][c][d][h][w] at
    d = od*sd-pd+kk*dd (h, w alike), or 0 in the padding; 2-D layers have D = KD = OD = 1."""
    tag = kernel_name(with_dtype("im2col", dtype), repr(g) + dtype)
    kk = g.kh * g.kw
    body = (LOOP +
            f"        const long long q = i % {g.cols}LL, row = i / {g.cols}LL;\n"
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
            f" ? sg_ld(x[(((nn * {g.c} + c) * {g.d} + d) * {g.h} + h) * {g.w} + w]) : 0.f;\n"
            "    }\n")
    params = f"{ptr('col', dtype, False)}, {ptr('x', dtype)}, long long n"
    return Rendered(tag, _kernel(tag, params, body), 2, helpers=dtype_helpers(dtype))


def _col2im_axis(o: str, t: str, k: str, x: str, size: int, kernel: int, stride: int, pad: int,
                 dilate: int, out: int, indent: str) -> str:
    """The loop over one kernel axis ``k``: output position ``o`` whose window reads ``x``."""
    return (f"{indent}for (int {k} = 0; {k} < {kernel}; ++{k}) {{\n"
            f"{indent}    const int {t} = {x} + {pad} - {k} * {dilate};\n"
            f"{indent}    if ({t} < 0 || {t} % {stride}) continue;\n"
            f"{indent}    const int {o} = {t} / {stride};\n"
            f"{indent}    if ({o} >= {out}) continue;\n")


def render_col2im(g: Conv2d, dtype: str = "float32") -> Rendered:
    """dx[n][c][d][h][w] = sum of the column entries that im2col read from that cell."""
    tag = kernel_name(with_dtype("col2im", dtype), repr(g) + dtype)
    loops = (_col2im_axis("od", "td", "kk", "d", g.d, g.kd, g.sd, g.pd, g.dd, g.od, " " * 8)
             + _col2im_axis("oh", "th", "ki", "h", g.h, g.kh, g.sh, g.ph, g.dh, g.oh, " " * 12)
             + _col2im_axis("ow", "tw", "kj", "w", g.w, g.kw, g.sw, g.pw, g.dw, g.ow, " " * 16))
    body = (LOOP +
            f"        const int w = (int)(i % {g.w}), h = (int)((i / {g.w}) % {g.h});\n"
            f"        const int d = (int)((i / {g.h * g.w}LL) % {g.d});\n"
            f"        const long long c = (i / {g.d * g.h * g.w}LL) % {g.c}LL;\n"
            f"        const long long nn = i / {g.c * g.d * g.h * g.w}LL;\n"
            "        float acc = 0.f;\n" + loops +
            f"                    acc += sg_ld(col[(((c * {g.kd} + kk) * {g.kh} + ki) * {g.kw}"
            " + kj)"
            f" * {g.cols}LL + nn * {g.pix}LL + (od * {g.oh} + oh) * {g.ow} + ow]);\n"
            "                }\n            }\n        }\n"
            "        dx[i] = acc;\n"
            "    }\n")
    params = f"{ptr('dx', dtype, False)}, {ptr('col', dtype)}, long long n"
    return Rendered(tag, _kernel(tag, params, body), 2, helpers=dtype_helpers(dtype))


def render_swap01(a: int, b: int, p: int, bias: bool, dtype: str = "float32") -> Rendered:
    """y[bb][aa][pp] = x[aa][bb][pp] (+ bias[aa] when ``bias``), one thread per element."""
    tag = kernel_name(with_dtype("swap01_bias" if bias else "swap01", dtype),
                      f"{a},{b},{p},{bias},{dtype}")
    add = " + sg_ld(bias[aa])" if bias else ""
    body = (LOOP +
            f"        const long long pp = i % {p}LL, aa = (i / {p}LL) % {a}LL;\n"
            f"        const long long bb = i / {a * p}LL;\n"
            f"        y[i] = sg_ld(x[(aa * {b}LL + bb) * {p}LL + pp]){add};\n"
            "    }\n")
    params = f"{ptr('y', dtype, False)}, {ptr('x', dtype)}, "
    params += f"{ptr('bias', dtype)}, long long n" if bias else "long long n"
    return Rendered(tag, _kernel(tag, params, body), 3 if bias else 2,
                    helpers=dtype_helpers(dtype))
