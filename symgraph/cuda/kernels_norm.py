"""C templates of ``lowering_norm``: LRN's forward (one thread per element sums the squares of its
``nsize`` channel neighbours, in float), BatchNorm's training statistics and its backward sums
(each a two-stage per-channel pair of sums in one pass over the data: ``x - shift`` and its
square; ``dy`` and ``dy * xhat``): a block per chunk of a channel with channels not last, and
column sums whose consecutive threads read consecutive channels with channels last (see that
section's comment)."""
from __future__ import annotations

from .codegen import (Rendered, c_float, dtype_helpers, grid_stride_kernel, index_type,
                      kernel_name, kernel_source, ptr, with_dtype)
from .kernels_conv_pool import BLOCK_SIZE_FREE


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


def _pair_sums(outer: int, channels: int, inner: int, chunks: int, setup: str,
               element: str) -> str:
    """Body of stage one of a two-stage per-channel pair of sums over an (outer, channels,
    inner) array: block ``v`` takes chunk ``v % chunks`` of channel ``c = v / chunks``, runs
    ``setup`` once, then for each of its elements (index ``at``) ``element``, which adds to the
    float accumulators ``a`` and ``b``; the block's totals go to ``part[2v]``, ``part[2v + 1]``.
    Any block size that is a multiple of 32 (at most 1024)."""
    m = outer * inner
    clen = -(-m // chunks)
    return (
        "    __shared__ float s1[32], s2[32];\n"
        f"    for (long long v = blockIdx.x; v < {channels * chunks}LL; v += gridDim.x) {{\n"
        f"        const long long c = v / {chunks}LL, r0 = (v % {chunks}LL) * {clen}LL;\n"
        f"        const long long r1 = r0 + {clen}LL < {m}LL ? r0 + {clen}LL : {m}LL;\n"
        f"{setup}"
        "        float a = 0.f, b = 0.f;\n"
        "        for (long long r = r0 + threadIdx.x; r < r1; r += blockDim.x) {\n"
        f"            const long long at = ((r / {inner}LL) * {channels}LL + c) * {inner}LL"
        f" + r % {inner}LL;\n"
        f"{element}"
        "        }\n"
        "        for (int s = 16; s > 0; s >>= 1) {\n"
        "            a += __shfl_down_sync(0xffffffffu, a, s);\n"
        "            b += __shfl_down_sync(0xffffffffu, b, s);\n"
        "        }\n"
        "        if ((threadIdx.x & 31) == 0) {\n"
        "            s1[threadIdx.x >> 5] = a;\n"
        "            s2[threadIdx.x >> 5] = b;\n"
        "        }\n"
        "        __syncthreads();\n"
        "        if (threadIdx.x < 32) {\n"
        "            const bool on = threadIdx.x < (blockDim.x >> 5);\n"
        "            a = on ? s1[threadIdx.x] : 0.f;\n"
        "            b = on ? s2[threadIdx.x] : 0.f;\n"
        "            for (int s = 16; s > 0; s >>= 1) {\n"
        "                a += __shfl_down_sync(0xffffffffu, a, s);\n"
        "                b += __shfl_down_sync(0xffffffffu, b, s);\n"
        "            }\n"
        "            if (threadIdx.x == 0) { part[2 * v] = a; part[2 * v + 1] = b; }\n"
        "        }\n"
        "        __syncthreads();\n"
        "    }\n")


def render_bn_backward_sums(outer: int, channels: int, inner: int, chunks: int, eps: float,
                            dtype: str = "float32", stat_dtype: str = "") -> Rendered:
    """Stage one of BatchNorm's backward over an (outer, channels, inner) array: the sums of
    ``dy`` and ``dy * xhat``, ``xhat = (x - mean[c]) / sqrt(var[c] + eps)``, per chunk of a
    channel (``_pair_sums``). ``dy`` and ``x`` are of ``dtype``, the statistics of
    ``stat_dtype`` (default: the same)."""
    stat_dtype = stat_dtype or dtype
    tag = kernel_name("bn_backward_sums",
                      f"{outer},{channels},{inner},{chunks},{eps},{dtype},{stat_dtype}")
    body = _pair_sums(outer, channels, inner, chunks,
                      "        const float mu = sg_ld(mean[c]);\n"
                      f"        const float rstd = rsqrtf(sg_ld(var[c]) + {c_float(eps)});\n",
                      "            const float g = sg_ld(dy[at]);\n"
                      "            a += g;\n"
                      "            b += g * (sg_ld(x[at]) - mu) * rstd;\n")
    params = (f"float* __restrict__ part, {ptr('dy', dtype)}, {ptr('x', dtype)}, "
              f"{ptr('mean', stat_dtype)}, {ptr('var', stat_dtype)}")
    src = f"extern \"C\" __global__ void {tag}({params}, long long n) {{\n{body}}}\n"
    return Rendered(tag, src, 5, helpers=dtype_helpers(dtype, stat_dtype))


def render_bn_stats(outer: int, channels: int, inner: int, chunks: int,
                    dtype: str = "float32") -> Rendered:
    """Stage one of BatchNorm's training statistics: per chunk of a channel, the sums of
    ``d`` and ``d * d`` with ``d = x - x[c's first element]`` (a shift inside the channel's
    values keeps the one-pass variance accurate in float, where the sum of squares of large
    values would cancel)."""
    tag = kernel_name("bn_stats", f"{outer},{channels},{inner},{chunks},{dtype}")
    body = _pair_sums(outer, channels, inner, chunks,
                      f"        const float s = sg_ld(x[c * {inner}LL]);\n",
                      "            const float d = sg_ld(x[at]) - s;\n"
                      "            a += d;\n"
                      "            b += d * d;\n")
    params = f"float* __restrict__ part, {ptr('x', dtype)}"
    src = f"extern \"C\" __global__ void {tag}({params}, long long n) {{\n{body}}}\n"
    return Rendered(tag, src, 2, helpers=dtype_helpers(dtype))


def _sum_partials(chunks: int) -> str:
    """C statements of a block-per-channel stage two: channel ``i``'s ``chunks`` partial pairs
    (laid ``part[2 * (i * chunks + k)]``, ``+ 1``) summed into the floats ``a`` and ``b``."""
    return ("        float a = 0.f, b = 0.f;\n"
            f"        for (int k = 0; k < {chunks}; ++k) {{\n"
            f"            a += part[2 * (i * {chunks}LL + k)];\n"
            f"            b += part[2 * (i * {chunks}LL + k) + 1];\n"
            "        }\n")


def _stats_store(count: int, momentum: float, shift: str, i: str, ind: str) -> str:
    """C statements of both stat finishes: from the float sums ``a`` of ``x - shift`` and
    ``b`` of its square over ``count`` values, the mean and biased variance (clamped at 0: the
    subtraction may round below) into ``mean[i]``, ``var[i]``, and the moving statistics
    ``mm * momentum + stat * (1 - momentum)`` into ``new_mm[i]``, ``new_mv[i]``."""
    m = c_float(momentum)
    return (f"{ind}const float d = a / {count}.f;\n"
            f"{ind}const float mu = {shift} + d;\n"
            f"{ind}const float v = fmaxf(b / {count}.f - d * d, 0.f);\n"
            f"{ind}mean[{i}] = mu;\n"
            f"{ind}var[{i}] = v;\n"
            f"{ind}new_mm[{i}] = sg_ld(mm[{i}]) * {m} + mu * (1.f - {m});\n"
            f"{ind}new_mv[{i}] = sg_ld(mv[{i}]) * {m} + v * (1.f - {m});\n")


def render_bn_stats_finish(channels: int, inner: int, chunks: int, count: int, momentum: float,
                           dtype: str = "float32", stat_dtype: str = "float32") -> Rendered:
    """Stage two of the statistics: per channel, the mean and (biased) variance of its
    ``count`` values from the partial pairs and the shift, and the moving statistics updated
    with ``momentum`` (``mm * momentum + mean * (1 - momentum)``), all of ``stat_dtype``."""
    body = _sum_partials(chunks) + _stats_store(count, momentum, f"sg_ld(x[i * {inner}LL])", "i",
                                                " " * 8)
    params = (f"{ptr('mean', stat_dtype, False)}, {ptr('var', stat_dtype, False)}, "
              f"{ptr('new_mm', stat_dtype, False)}, {ptr('new_mv', stat_dtype, False)}, "
              f"const float* __restrict__ part, {ptr('x', dtype)}, {ptr('mm', stat_dtype)}, "
              f"{ptr('mv', stat_dtype)}")
    return grid_stride_kernel("bn_stats_finish",
                              f"{channels},{inner},{chunks},{count},{momentum},{dtype}", params,
                              body, 8, helpers=dtype_helpers(dtype, stat_dtype))


def render_bn_backward_finish(channels: int, chunks: int, dtype: str = "float32") -> Rendered:
    """Stage two: per channel, the sums of its ``chunks`` partial pairs into ``dgamma[c]``
    (of dy * xhat) and ``dbeta[c]`` (of dy), of ``dtype``."""
    body = (_sum_partials(chunks)
            + "        dbeta[i] = a;\n"
            "        dgamma[i] = b;\n")
    params = (f"{ptr('dgamma', dtype, False)}, {ptr('dbeta', dtype, False)}, "
              "const float* __restrict__ part")
    return grid_stride_kernel("bn_backward_finish", f"{channels},{chunks},{dtype}", params,
                              body, 3)


# -- BatchNorm over the last axis (channel-last data: NHWC, or (N, C)) ----------------------------
#
# The data is a (rows, cols) matrix whose columns are the channels; a block per channel would
# read addresses ``cols`` elements apart. Here a block lays its threads as ``lanes = min(cols,
# blockDim.x)`` consecutive columns by ``blockDim.x / lanes`` row lanes, so a warp reads
# consecutive addresses of one or a few rows; each thread sums, in float, a strided set of rows
# of one row chunk, and the row lanes' sums meet in shared memory through a halving fold that
# takes any count (a 256-thread block over 48 channels has 5 row lanes). Lanes, row lanes and
# column tiles come from ``blockDim.x`` at run time: any block size (one thread on the host)
# works. Stage one writes float partial pairs laid (chunks, 2, cols); the finishes sum them by
# column with the same frame (rows: chunks, row stride 2 * cols).


def _column_pair_kernel(tag: str, params: str, rows: int, cols: int, chunks: int, setup: str,
                        accumulate: str, store: str, stride: int = 0) -> str:
    """The frame: unit ``u`` (column tile ``u / chunks``, row chunk ``k = u % chunks``) sums
    two floats per column, ``a`` and ``b``, over its rows of a matrix with rows ``stride``
    (default ``cols``) elements apart; ``setup`` runs per column before the loop (``c`` known),
    ``accumulate`` per element (``at``: its offset), ``store`` once per column of the unit,
    with ``a`` and ``b`` the unit's totals."""
    stride = stride or cols
    clen = -(-rows // chunks)
    it = index_type(rows * stride)  # 32-bit offsets where they fit: fewer registers
    body = (
        f"    {BLOCK_SIZE_FREE}\n"
        "    __shared__ float ra[1024], rb[1024];\n"
        f"    const int lanes = blockDim.x < {cols} ? (int)blockDim.x : {cols};\n"
        "    const int lines = (int)blockDim.x / lanes;  // row lanes\n"
        "    const int lane = (int)threadIdx.x % lanes, line = (int)threadIdx.x / lanes;\n"
        f"    const long long units = ({cols}LL + lanes - 1) / lanes * {chunks}LL;\n"
        "    for (long long u = blockIdx.x; u < units; u += gridDim.x) {\n"
        f"        const long long c = u / {chunks}LL * lanes + lane, k = u % {chunks}LL;\n"
        f"        const long long r0 = k * {clen}LL;\n"
        f"        const long long r1 = r0 + {clen}LL < {rows}LL ? r0 + {clen}LL : {rows}LL;\n"
        "        float a = 0.f, b = 0.f;\n"
        f"        if (c < {cols} && line < lines) {{\n"
        f"{setup}"
        f"            const {it} step = ({it})lines * {stride}u, end = ({it})r1 * {stride}u;\n"
        "            #pragma unroll 8  // loads in flight: the sums are memory-bound\n"
        f"            for ({it} at = ({it})(r0 + line) * {stride}u + ({it})c; at < end; "
        "at += step) {\n"
        f"{accumulate}"
        "            }\n"
        "        }\n"
        "        ra[threadIdx.x] = a;\n"
        "        rb[threadIdx.x] = b;\n"
        "        __syncthreads();\n"
        "        for (int h = lines; h > 1;) {  // fold the upper half of the row lanes\n"
        "            const int half = (h + 1) / 2;\n"
        "            if (line < h - half) {\n"
        "                ra[threadIdx.x] += ra[threadIdx.x + half * lanes];\n"
        "                rb[threadIdx.x] += rb[threadIdx.x + half * lanes];\n"
        "            }\n"
        "            h = half;\n"
        "            __syncthreads();\n"
        "        }\n"
        f"        if (line == 0 && c < {cols}) {{\n"
        "            a = ra[threadIdx.x];\n"
        "            b = rb[threadIdx.x];\n"
        f"{store}"
        "        }\n"
        "        __syncthreads();\n"
        "    }\n")
    return kernel_source(tag, f"{params}, long long n", body)


def render_bn_column_sums(rows: int, cols: int, chunks: int, kind: str, eps: float = 0.0,
                          x_t: str = "float32", s_t: str = "float32") -> Rendered:
    """Stage one over a (rows, cols) channel-last matrix: ``part[(k * 2 + j) * cols + c]``,
    the sum ``j`` of column ``c`` over row chunk ``k`` (``chunks`` of ``ceil(rows / chunks)``
    rows), in float. ``kind`` "stats" (parameters ``part, x``): ``d = x - x[0][c]`` and
    ``d * d`` (the shift of ``render_bn_stats``); "grad" (``part, dy, x, mean, var``): ``dy``
    and ``dy * (x - mean) / sqrt(var + eps)``. Data of ``x_t``, statistics of ``s_t``."""
    ind = " " * 16
    if kind == "grad":
        params = (f"float* __restrict__ part, {ptr('dy', x_t)}, {ptr('x', x_t)}, "
                  f"{ptr('mean', s_t)}, {ptr('var', s_t)}")
        setup = (f"{ind[4:]}const float mu = sg_ld(mean[c]);\n"  # 1/sqrt: dx's formula
                 f"{ind[4:]}const float rstd = 1.f / sqrtf(sg_ld(var[c]) + {c_float(eps)});\n")
        accumulate = (f"{ind}const float g = sg_ld(dy[at]);\n"
                      f"{ind}a += g;\n"
                      f"{ind}b += g * (sg_ld(x[at]) - mu) * rstd;\n")
    else:
        assert kind == "stats", kind
        params = f"float* __restrict__ part, {ptr('x', x_t)}"
        setup = f"{ind[4:]}const float s = sg_ld(x[c]);\n"
        accumulate = f"{ind}const float d = sg_ld(x[at]) - s;\n{ind}a += d;\n{ind}b += d * d;\n"
    store = (f"{ind[4:]}part[k * {2 * cols}LL + c] = a;\n"
             f"{ind[4:]}part[k * {2 * cols}LL + {cols}LL + c] = b;\n")
    tag = kernel_name(with_dtype(f"bn_cols_{kind}", x_t),
                      f"{rows},{cols},{chunks},{kind},{eps},{x_t},{s_t}")
    src = _column_pair_kernel(tag, params, rows, cols, chunks, setup, accumulate, store)
    return Rendered(tag, src, params.count("*"), helpers=dtype_helpers(x_t, s_t))


def _finish_frame(stem: str, key: str, params: str, cols: int, chunks: int, store: str,
                  helpers: tuple) -> Rendered:
    """A stage two: the (chunks, 2, cols) partials summed by column into ``a``, ``b``."""
    tag = kernel_name(stem, key + params)
    src = _column_pair_kernel(tag, params, chunks, cols, 1, "",
                              "                a += part[at];\n"
                              f"                b += part[at + {cols}u];\n", store, 2 * cols)
    return Rendered(tag, src, params.count("*"), helpers=helpers)


def render_bn_column_stats_finish(cols: int, chunks: int, count: int, momentum: float,
                                  dtype: str = "float32",
                                  stat_dtype: str = "float32") -> Rendered:
    """Stage two of the channel-last statistics: ``render_bn_stats_finish``'s outputs and
    parameters (``mean, var, new_mm, new_mv, part, x, mm, mv``), the shift ``x[0][c]``."""
    params = (f"{ptr('mean', stat_dtype, False)}, {ptr('var', stat_dtype, False)}, "
              f"{ptr('new_mm', stat_dtype, False)}, {ptr('new_mv', stat_dtype, False)}, "
              f"const float* __restrict__ part, {ptr('x', dtype)}, {ptr('mm', stat_dtype)}, "
              f"{ptr('mv', stat_dtype)}")
    store = _stats_store(count, momentum, "sg_ld(x[c])", "c", " " * 12)
    return _finish_frame("bn_cols_stats_finish", f"{cols},{chunks},{count},{momentum}",
                         params, cols, chunks, store, dtype_helpers(dtype, stat_dtype))


def render_bn_column_grad_finish(cols: int, chunks: int, dtype: str = "float32") -> Rendered:
    """Stage two of the channel-last backward sums: ``dbeta[c]`` (of dy) and ``dgamma[c]``
    (of dy * xhat), of ``dtype``; parameters ``dgamma, dbeta, part``."""
    params = (f"{ptr('dgamma', dtype, False)}, {ptr('dbeta', dtype, False)}, "
              "const float* __restrict__ part")
    store = "            dbeta[c] = a;\n            dgamma[c] = b;\n"
    return _finish_frame("bn_cols_grad_finish", f"{cols},{chunks}", params, cols, chunks,
                         store, dtype_helpers(dtype))
