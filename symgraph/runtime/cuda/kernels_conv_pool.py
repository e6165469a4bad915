"""Kernels of ``_conv_act_pool`` (convolution -> activation -> non-overlapping max pooling, see
``ops/conv_act_pool.py``) and of its weight/bias gradient.

One thread owns one pooling window of one image: it loads the input patch under the window (the
receptive fields of the window's convolution outputs, at most a few dozen values) into registers
once, then for each of its filters computes the window's convolution outputs, applies the
activation and keeps the first maximum. Only the pooled map is written.

The gradient kernel recomputes the same window outputs with the same code (explicit ``fmaf`` in
a fixed order, so the maximum it finds is the one the forward kept), multiplies the output
gradient by the activation's derivative there, and accumulates that value times the patch into
per-thread sums of the filter's weight and bias gradients; blocks reduce their threads' sums
into one partial per (filter, chunk of windows), and a second kernel adds the partials. No
atomics: the result is deterministic. Data, weights and outputs are of ``ConvPool.dtype``
(float32, float16 or bfloat16), read through ``sg_ld``; sums and partials are float.
"""
from __future__ import annotations

from itertools import product

from ...core.expr import inp
from ...compiler.ops.conv_act_pool import ACT_GRAD, act_expr
from ...compiler.ops.geometry import ConvPoolWindow
from .codegen import (C_TYPES, THREADS, Rendered, c_float, dtype_helpers, expr_to_c,
                      grid_stride_kernel, index_type, kernel_name, kernel_source)

NEG_INF = c_float(float("-inf"))
BLOCK_SIZE_FREE = "// any block size works (the host tests run this kernel with one thread)"


def _act_helpers(g: ConvPoolWindow) -> tuple[str, str, tuple]:
    """Names and sources of the activation and of its derivative (of the output)."""
    out = []
    for stem, e in (("act", act_expr(g.act, inp(0))), ("dact", ACT_GRAD[g.act](inp(0)))):
        lines, (res,) = expr_to_c([e], ["v"])
        body = "".join(f"    {ln}\n" for ln in lines) + f"    return {res};\n"
        name = kernel_name(f"cap_{stem}", body)
        out.append((name, f"__device__ __forceinline__ float {name}(float v) {{\n{body}}}\n"))
    return out[0][0], out[1][0], tuple(out)


def _load_patch(g: ConvPoolWindow, img: str, indent: str, t: str) -> str:
    """``v[c][r][s]``: the input under the window (qh, qw) of image ``img``, 0 in the padding."""
    rows, cols = g.patch
    return (f"{indent}const int h0 = qh * {g.wh * g.sh} - {g.ph}, w0 = qw * {g.ww * g.sw} - "
            f"{g.pw};\n"
            f"{indent}const {t}* xp = x + (long long){img} * {g.c * g.h * g.w};\n"
            f"{indent}float v[{g.c}][{rows}][{cols}];\n"
            f"{indent}#pragma unroll\n"
            f"{indent}for (int c = 0; c < {g.c}; ++c)\n"
            f"{indent}#pragma unroll\n"
            f"{indent}for (int r = 0; r < {rows}; ++r)\n"
            f"{indent}#pragma unroll\n"
            f"{indent}for (int s = 0; s < {cols}; ++s) {{\n"
            f"{indent}    const int hh = h0 + r, ww = w0 + s;\n"
            f"{indent}    v[c][r][s] = (hh >= 0 && hh < {g.h} && ww >= 0 && ww < {g.w}) ? "
            f"sg_ld(xp[(c * {g.h} + hh) * {g.w} + ww]) : 0.f;\n"
            f"{indent}}}\n")


def _window_max(g: ConvPoolWindow, act: str, indent: str) -> str:
    """``best`` (the window's first maximum after the activation) and ``at`` (its position),
    for the filter whose weights are ``wr`` and bias ``bf``; the same code in both kernels."""
    lines = [f"{indent}float best = {NEG_INF};", f"{indent}int at = 0;"]
    for a, b in product(range(g.wh), range(g.ww)):
        lines.append(f"{indent}{{ float z = bf;")
        for c, i, j in product(range(g.c), range(g.kh), range(g.kw)):
            lines.append(f"{indent}  z = fmaf(wr[{(c * g.kh + i) * g.kw + j}], "
                         f"v[{c}][{a * g.sh + i}][{b * g.sw + j}], z);")
        lines.append(f"{indent}  const float y = {act}(z);")
        lines.append(f"{indent}  if (y > best) {{ best = y; at = {a * g.ww + b}; }} }}")
    return "\n".join(lines) + "\n"


def _weights(g: ConvPoolWindow, f: str, indent: str) -> str:
    bias = f"sg_ld(bias[{f}])" if g.bias else "0.f"
    return (f"{indent}float wr[{g.field}];\n"
            f"{indent}#pragma unroll\n"
            f"{indent}for (int k = 0; k < {g.field}; ++k)\n"
            f"{indent}    wr[k] = sg_ld(wt[{f} * {g.field} + k]);\n"
            f"{indent}const float bf = {bias};\n")


def _inputs(g: ConvPoolWindow, t: str) -> str:
    return (f"const {t}* __restrict__ x, const {t}* __restrict__ wt"
            + (f", const {t}* __restrict__ bias" if g.bias else ""))


def filters_per_thread(g: ConvPoolWindow, sm_count: int) -> int:
    """Filters one forward thread computes: all of them (one patch load serves every filter)
    unless that leaves too few threads to fill the device."""
    fpt = g.filters
    while fpt % 2 == 0 and fpt > 4 and g.n * g.windows * (g.filters // fpt) < sm_count * 1024:
        fpt //= 2
    return fpt


def render_forward(g: ConvPoolWindow, fpt: int, dtype: str = "float32") -> Rendered:
    """y[img][f][qh][qw]: one thread per (image, group of ``fpt`` filters, window); data,
    weights and output of ``dtype``."""
    t = C_TYPES[dtype]
    act, _, helpers = _act_helpers(g)
    groups = g.filters // fpt
    it = index_type(g.n * g.windows * groups)
    body = (f"    for ({it} i = blockIdx.x * blockDim.x + threadIdx.x; i < n; "
            f"i += blockDim.x * gridDim.x) {{\n"
            f"        const int q = (int)(i % {g.windows}), fg = (int)((i / {g.windows}) % "
            f"{groups});\n"
            f"        const {it} img = i / {g.windows * groups};\n"
            f"        const int qh = q / {g.qw}, qw = q % {g.qw};\n"
            + _load_patch(g, "img", " " * 8, t) +
            f"        {t}* yp = y + ((long long)img * {g.filters} + fg * {fpt}) * "
            f"{g.windows} + q;\n"
            f"        for (int k = 0; k < {fpt}; ++k) {{\n"
            f"            const int f = fg * {fpt} + k;\n"
            + _weights(g, "f", " " * 12) + _window_max(g, act, " " * 12) +
            f"            yp[k * {g.windows}] = best;\n"
            "        }\n"
            "    }\n")
    tag = kernel_name("conv_act_pool", repr(g) + body)
    src = kernel_source(tag, f"{t}* __restrict__ y, {_inputs(g, t)}, long long n", body)
    return Rendered(tag, src, 4 if g.bias else 3, helpers=dtype_helpers(dtype) + helpers)


def chunks_for(g: ConvPoolWindow, sm_count: int) -> int:
    """Chunks of windows per filter in the gradient's first stage: enough blocks to fill the
    device, each thread still visiting several windows."""
    per_filter = g.n * g.windows
    return max(1, min(-(-sm_count * 8 // g.filters), per_filter // (THREADS * 4)))


def render_param_grad(g: ConvPoolWindow, chunks: int, dtype: str = "float32") -> Rendered:
    """part[(f * chunks + chunk) * (field + 1) + k]: the sums of one (filter, chunk) unit, k <
    field the weight gradient's, k = field the bias gradient's; one block per unit."""
    act, dact, helpers = _act_helpers(g)
    t = C_TYPES[dtype]
    k1 = g.field + 1
    total = g.n * g.windows
    per = -(-total // chunks)
    it = index_type(total)
    positions = list(product(range(g.wh), range(g.ww)))
    accumulate = []
    for a, b in positions:
        accumulate.append(f"            {{ const float m = at == {a * g.ww + b} ? grad : 0.f;")
        for c, i, j in product(range(g.c), range(g.kh), range(g.kw)):
            accumulate.append(f"              acc[{(c * g.kh + i) * g.kw + j}] = fmaf(m, "
                              f"v[{c}][{a * g.sh + i}][{b * g.sw + j}], "
                              f"acc[{(c * g.kh + i) * g.kw + j}]);")
        accumulate.append("            }")
    body = (f"    {BLOCK_SIZE_FREE}\n"
            f"    __shared__ float red[{k1}][{THREADS}];\n"
            "    for (int unit = blockIdx.x; unit < n; unit += gridDim.x) {\n"
            f"        const int f = (int)(unit / {chunks});\n"
            f"        const {it} lo = (unit % {chunks}) * {per};\n"
            f"        const {it} hi = min(lo + {per}, ({it}){total});\n"
            + _weights(g, "f", " " * 8) +
            f"        float acc[{k1}];\n"
            "        #pragma unroll\n"
            f"        for (int k = 0; k < {k1}; ++k) acc[k] = 0.f;\n"
            f"        for ({it} p = lo + threadIdx.x; p < hi; p += blockDim.x) {{\n"
            f"            const int q = (int)(p % {g.windows});\n"
            f"            const {it} img = p / {g.windows};\n"
            f"            const int qh = q / {g.qw}, qw = q % {g.qw};\n"
            + _load_patch(g, "img", " " * 12, t) + _window_max(g, act, " " * 12) +
            f"            const float grad = "
            f"sg_ld(dy[((long long)img * {g.filters} + f) * {g.windows} + q]) * "
            f"{dact}(best);\n"
            + "\n".join(accumulate) + "\n"
            f"            acc[{g.field}] += grad;\n"
            "        }\n"
            "        #pragma unroll\n"
            f"        for (int k = 0; k < {k1}; ++k) red[k][threadIdx.x] = acc[k];\n"
            "        __syncthreads();\n"
            "        for (int s = blockDim.x / 2; s > 0; s >>= 1) {\n"
            "            if (threadIdx.x < s)\n"
            f"                for (int k = 0; k < {k1}; ++k) red[k][threadIdx.x] += "
            "red[k][threadIdx.x + s];\n"
            "            __syncthreads();\n"
            "        }\n"
            "        if (threadIdx.x == 0)\n"
            f"            for (int k = 0; k < {k1}; ++k) part[unit * {k1} + k] = red[k][0];\n"
            "        __syncthreads();\n"
            "    }\n")
    tag = kernel_name("conv_act_pool_wgrad", repr(g) + body)
    params = (f"float* __restrict__ part, const {t}* __restrict__ dy, {_inputs(g, t)}, "
              "long long n")
    return Rendered(tag, kernel_source(tag, params, body), 5 if g.bias else 4,
                    helpers=dtype_helpers(dtype) + helpers)


def render_param_grad_sum(g: ConvPoolWindow, chunks: int, dtype: str = "float32") -> Rendered:
    """dw[f][k] and db[f]: the sums over chunks of the first stage's partials."""
    t = C_TYPES[dtype]
    k1 = g.field + 1
    body = (f"        const int f = (int)(i / {k1}), k = (int)(i % {k1});\n"
            f"        const float* pp = part + (long long)f * {chunks * k1} + k;\n"
            "        float s = 0.f;\n"
            f"        for (int c = 0; c < {chunks}; ++c) s += pp[c * {k1}];\n"
            f"        if (k < {g.field}) dw[f * {g.field} + k] = s; else db[f] = s;\n")
    params = f"{t}* __restrict__ dw, {t}* __restrict__ db, const float* __restrict__ part"
    return grid_stride_kernel("conv_act_pool_wgrad_sum",
                              f"{g.filters},{g.field},{chunks},{dtype}", params, body, 3,
                              helpers=dtype_helpers(dtype))
