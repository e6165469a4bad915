"""C templates of ``lowering_norm``: LRN's forward (one thread per element sums the squares of its
``nsize`` channel neighbours, in float), BatchNorm's training statistics and its backward sums
(each a per-channel pair of sums in one pass over the data: ``x - shift`` and its square; ``dy``
and ``dy * xhat``). With channels not last, two stages: a block per chunk of a channel, then a
small finishing kernel. With channels last, one kernel per direction (``kernels_bn_column``)."""
from __future__ import annotations

from .codegen import Rendered, c_float, dtype_helpers, grid_stride_kernel, kernel_name, ptr


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


def stats_values(count: int, shift: str, ind: str) -> str:
    """C statements: from the float sums ``a`` of ``x - shift`` and ``b`` of its square over
    ``count`` values, the mean ``mu`` and the biased variance ``v`` (clamped at 0: the
    subtraction may round below)."""
    return (f"{ind}const float d = a / {count}.f;\n"
            f"{ind}const float mu = {shift} + d;\n"
            f"{ind}const float v = fmaxf(b / {count}.f - d * d, 0.f);\n")


def stats_writes(momentum: float, i: str, ind: str) -> str:
    """C statements: ``mu`` and ``v`` into ``mean[i]``, ``var[i]``, and the moving statistics
    ``mm * momentum + stat * (1 - momentum)`` into ``new_mm[i]``, ``new_mv[i]``."""
    m = c_float(momentum)
    return (f"{ind}mean[{i}] = mu;\n"
            f"{ind}var[{i}] = v;\n"
            f"{ind}new_mm[{i}] = sg_ld(mm[{i}]) * {m} + mu * (1.f - {m});\n"
            f"{ind}new_mv[{i}] = sg_ld(mv[{i}]) * {m} + v * (1.f - {m});\n")


def render_bn_stats_finish(channels: int, inner: int, chunks: int, count: int, momentum: float,
                           dtype: str = "float32", stat_dtype: str = "float32") -> Rendered:
    """Stage two of the statistics: per channel, the mean and (biased) variance of its
    ``count`` values from the partial pairs and the shift, and the moving statistics updated
    with ``momentum`` (``mm * momentum + mean * (1 - momentum)``), all of ``stat_dtype``."""
    body = (_sum_partials(chunks) + stats_values(count, f"sg_ld(x[i * {inner}LL])", " " * 8)
            + stats_writes(momentum, "i", " " * 8))
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
# takes any count (a 512-thread block over 48 channels has 10 row lanes). Lanes, row lanes and
# column tiles come from ``blockDim.x`` at run time: any block size (one thread on the host)
# works.
#
# Training's statistics and normalisation, and the backward's sums and dx, are one kernel each
# (a small layer's three kernels cost three launch floors, the bulk of its time): the blocks
# write their float partial pairs, laid (chunks, 2, cols), meet at a grid-wide barrier, then
# each block sums the partials of its columns (in a fixed order: the results do not depend on
# the blocks' schedule), and applies the result to the rows it summed, which are still in L2.
