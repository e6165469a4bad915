"""C template of LRN's forward (``lowering_norm``): one thread per element sums the squares of
its ``nsize`` channel neighbours, in float."""
from __future__ import annotations

from .codegen import Rendered, c_float, grid_stride_kernel, ptr


def render_lrn(channels: int, rest: int, nsize: int, alpha: float, beta: float, knorm: float,
               dtype: str = "float32") -> Rendered:
    """``norm = knorm + alpha / nsize * sum of x^2 over the channels c - nsize//2 .. c +
    nsize//2 that exist`` and ``y = x * norm^-beta`` over an (N, channels, rest) array; both
    outputs (y, norm) in ``dtype``."""
    half = nsize // 2
    body = (f"        const long long c = (i / {rest}LL) % {channels}LL;\n"
            f"        const long long row = i - c * {rest}LL;\n"
            f"        const long long lo = c < {half} ? 0 : c - {half};\n"
            f"        const long long hi = c + {half} < {channels} ? c + {half} : {channels - 1};\n"
            "        float acc = 0.f;\n"
            "        for (long long j = lo; j <= hi; ++j) {\n"
            f"            const float v = sg_ld(x[row + j * {rest}LL]);\n"
            "            acc += v * v;\n"
            "        }\n"
            f"        const float norm = {c_float(knorm)} + {c_float(alpha / nsize)} * acc;\n"
            f"        y[i] = sg_ld(x[i]) * powf(norm, {c_float(-beta)});\n"
            "        t[i] = norm;\n")
    params = f"{ptr('y', dtype, False)}, {ptr('t', dtype, False)}, {ptr('x', dtype)}"
    return grid_stride_kernel("lrn", f"{channels},{rest},{nsize},{alpha},{beta},{knorm},{dtype}",
                              params, body, 3)
