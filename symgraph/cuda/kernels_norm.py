"""C templates of ``lowering_norm``: LRN's forward (one thread per element sums the squares of its
``nsize`` channel neighbours, in float); BatchNorm's backward sums with channels not last (a
two-stage per-channel reduction of ``dy`` and ``dy * xhat`` in one pass, a block per channel
and chunk); and BatchNorm's column sums with channels last (forward statistics and backward
sums: consecutive threads read consecutive channels, see the section's comment)."""
from __future__ import annotations

from typing import Optional

from ..expr import Expr
from .codegen import (Rendered, c_float, dtype_helpers, epilogue_store, grid_stride_kernel,
                      index_type, kernel_name, kernel_source, ptr, with_dtype)
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


def render_bn_backward_sums(outer: int, channels: int, inner: int, chunks: int, eps: float,
                            dtype: str = "float32", stat_dtype: str = "") -> Rendered:
    """Stage one of BatchNorm's backward over an (outer, channels, inner) array: block ``v``
    sums, over chunk ``v % chunks`` of channel ``v / chunks``, ``dy`` and ``dy * xhat`` with
    ``xhat = (x - mean[c]) / sqrt(var[c] + eps)``, in float, into ``part[2v]`` and
    ``part[2v + 1]``. Any block size that is a multiple of 32 (at most 1024). ``dy`` and
    ``x`` are of ``dtype``, the statistics of ``stat_dtype`` (default: the same)."""
    stat_dtype = stat_dtype or dtype
    m = outer * inner
    clen = -(-m // chunks)
    tag = kernel_name("bn_backward_sums",
                      f"{outer},{channels},{inner},{chunks},{eps},{dtype},{stat_dtype}")
    body = (
        "    __shared__ float s1[32], s2[32];\n"
        f"    for (long long v = blockIdx.x; v < {channels * chunks}LL; v += gridDim.x) {{\n"
        f"        const long long c = v / {chunks}LL, r0 = (v % {chunks}LL) * {clen}LL;\n"
        f"        const long long r1 = r0 + {clen}LL < {m}LL ? r0 + {clen}LL : {m}LL;\n"
        "        const float mu = sg_ld(mean[c]);\n"
        f"        const float rstd = rsqrtf(sg_ld(var[c]) + {c_float(eps)});\n"
        "        float a = 0.f, b = 0.f;\n"
        "        for (long long r = r0 + threadIdx.x; r < r1; r += blockDim.x) {\n"
        f"            const long long at = ((r / {inner}LL) * {channels}LL + c) * {inner}LL"
        f" + r % {inner}LL;\n"
        "            const float g = sg_ld(dy[at]);\n"
        "            a += g;\n"
        "            b += g * (sg_ld(x[at]) - mu) * rstd;\n"
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
    params = (f"float* __restrict__ part, {ptr('dy', dtype)}, {ptr('x', dtype)}, "
              f"{ptr('mean', stat_dtype)}, {ptr('var', stat_dtype)}")
    src = f"extern \"C\" __global__ void {tag}({params}, long long n) {{\n{body}}}\n"
    return Rendered(tag, src, 5, helpers=dtype_helpers(dtype, stat_dtype))


def render_bn_backward_finish(channels: int, chunks: int, dtype: str = "float32") -> Rendered:
    """Stage two: per channel, the sums of its ``chunks`` partial pairs into ``dgamma[c]``
    (of dy * xhat) and ``dbeta[c]`` (of dy), of ``dtype``."""
    body = ("        float a = 0.f, b = 0.f;\n"
            f"        for (int k = 0; k < {chunks}; ++k) {{\n"
            f"            a += part[2 * (i * {chunks}LL + k)];\n"
            f"            b += part[2 * (i * {chunks}LL + k) + 1];\n"
            "        }\n"
            "        dbeta[i] = a;\n"
            "        dgamma[i] = b;\n")
    params = (f"{ptr('dgamma', dtype, False)}, {ptr('dbeta', dtype, False)}, "
              "const float* __restrict__ part")
    return grid_stride_kernel("bn_backward_finish", f"{channels},{chunks},{dtype}", params,
                              body, 3)


# -- BatchNorm over the last axis (channel-last data: NHWC, or (N, C)) ----------------------------
#
# The data is an (rows, cols) matrix whose columns are the channels. A block lays its threads as
# ``lanes = min(cols, blockDim.x)`` consecutive columns by ``blockDim.x / lanes`` row lanes, so a
# warp reads consecutive addresses of one or a few rows; each thread sums, in float, a strided
# set of rows of one chunk, and the row lanes' sums meet in shared memory through a halving tree
# that takes any count (a block of 48-channel rows has 5 row lanes). Lanes, row lanes and column
# tiles come from ``blockDim.x`` at run time: any block size (one thread on the host) works.

COLUMN_SUM_KINDS = {"sum": 1, "centred_square": 1, "grad": 2}
"""Stage-one kinds -> sums per column: ``x``; ``(x - mu)^2`` (``mu``: float means); ``dy`` and
``dy * (x - mean) / sqrt(var + eps)``."""


def _column_sum_kernel(tag: str, params: str, rows: int, cols: int, chunks: int, nsum: int,
                       setup: str, accumulate: str, store: str) -> str:
    """The frame of both stages: unit ``u`` (column tile ``u / chunks``, row chunk ``u %
    chunks``) sums ``nsum`` float values per column (``acc0``...) over its rows; ``setup``
    runs per column before the loop (``c`` known), ``accumulate`` per element (``at``: its
    offset), ``store`` once per column of the unit with ``red{j}[threadIdx.x]`` complete."""
    clen = -(-rows // chunks)
    it = index_type(rows * cols)  # 32-bit offsets where they fit: fewer registers
    sums = range(nsum)
    zero = ", ".join(f"acc{j} = 0.f" for j in sums)
    keep = "".join(f"        red{j}[threadIdx.x] = acc{j};\n" for j in sums)
    fold = "".join(f"                red{j}[threadIdx.x] += red{j}[threadIdx.x + half * lanes];\n"
                   for j in sums)
    body = (
        f"    {BLOCK_SIZE_FREE}\n"
        + "".join(f"    __shared__ float red{j}[1024];\n" for j in sums) +
        f"    const int lanes = blockDim.x < {cols} ? (int)blockDim.x : {cols};\n"
        "    const int lines = (int)blockDim.x / lanes;  // row lanes\n"
        "    const int lane = (int)threadIdx.x % lanes, line = (int)threadIdx.x / lanes;\n"
        f"    const long long units = ({cols}LL + lanes - 1) / lanes * {chunks}LL;\n"
        "    for (long long u = blockIdx.x; u < units; u += gridDim.x) {\n"
        f"        const long long c = u / {chunks}LL * lanes + lane, k = u % {chunks}LL;\n"
        f"        const long long r0 = k * {clen}LL;\n"
        f"        const long long r1 = r0 + {clen}LL < {rows}LL ? r0 + {clen}LL : {rows}LL;\n"
        f"        float {zero};\n"
        f"        if (c < {cols} && line < lines) {{\n"
        f"{setup}"
        f"            const {it} step = ({it})lines * {cols}u, end = ({it})r1 * {cols}u;\n"
        "            #pragma unroll 8  // loads in flight: the sums are memory-bound\n"
        f"            for ({it} at = ({it})(r0 + line) * {cols}u + ({it})c; at < end; "
        "at += step) {\n"
        f"{accumulate}"
        "            }\n"
        "        }\n"
        f"{keep}"
        "        __syncthreads();\n"
        "        for (int h = lines; h > 1;) {  // fold the upper half of the row lanes\n"
        "            const int half = (h + 1) / 2;\n"
        "            if (line < h - half) {\n"
        f"{fold}"
        "            }\n"
        "            h = half;\n"
        "            __syncthreads();\n"
        "        }\n"
        f"        if (line == 0 && c < {cols}) {{\n{store}        }}\n"
        "        __syncthreads();\n"
        "    }\n")
    return kernel_source(tag, f"{params}, long long n", body)


def render_bn_column_partials(rows: int, cols: int, chunks: int, kind: str, eps: float = 0.0,
                              x_t: str = "float32", s_t: str = "float32") -> Rendered:
    """Stage one over a (rows, cols) channel-last matrix: ``part[(k * nsum + j) * cols + c]``,
    sum ``j`` of column ``c`` over row chunk ``k`` (``chunks`` of ``ceil(rows / chunks)`` rows),
    in float; ``kind`` is a key of :data:`COLUMN_SUM_KINDS`. Parameters: ``part``, then ``x``
    (sum), ``x, mu`` (centred_square; ``mu`` float), or ``dy, x, mean, var`` (grad; data of
    ``x_t``, statistics of ``s_t``)."""
    nsum = COLUMN_SUM_KINDS[kind]
    ind = " " * 16
    if kind == "grad":
        params = (f"float* __restrict__ part, {ptr('dy', x_t)}, {ptr('x', x_t)}, "
                  f"{ptr('mean', s_t)}, {ptr('var', s_t)}")
        setup = (f"{ind[4:]}const float m = sg_ld(mean[c]);\n"
                 f"{ind[4:]}const float rstd = 1.f / sqrtf(sg_ld(var[c]) + {c_float(eps)});\n")
        accumulate = (f"{ind}const float g = sg_ld(dy[at]);\n"
                      f"{ind}acc0 += g;\n"
                      f"{ind}acc1 += g * (sg_ld(x[at]) - m) * rstd;\n")
    elif kind == "centred_square":
        params = f"float* __restrict__ part, {ptr('x', x_t)}, const float* __restrict__ mu"
        setup = f"{ind[4:]}const float m = mu[c];\n"
        accumulate = f"{ind}const float d = sg_ld(x[at]) - m;\n{ind}acc0 += d * d;\n"
    else:
        params = f"float* __restrict__ part, {ptr('x', x_t)}"
        setup, accumulate = "", f"{ind}acc0 += sg_ld(x[at]);\n"
    store = "".join(f"{ind[4:]}part[(k * {nsum} + {j}) * {cols}LL + c] = red{j}[threadIdx.x];\n"
                    for j in range(nsum))
    tag = kernel_name(with_dtype(f"bn_cols_{kind}", x_t),
                      f"{rows},{cols},{chunks},{kind},{eps},{x_t},{s_t}")
    src = _column_sum_kernel(tag, params, rows, cols, chunks, nsum, setup, accumulate, store)
    return Rendered(tag, src, params.count("*"), helpers=dtype_helpers(x_t, s_t))


def render_bn_column_finish(chunks: int, cols: int, scale: float, out_ts: tuple[str, ...],
                            keep: bool = False,
                            update: Optional[tuple[Expr, str]] = None) -> Rendered:
    """Stage two: the stage-one partials as a (chunks, len(out_ts) * cols) float matrix,
    summed by column and times ``scale``; column ``g * cols + c`` goes to ``out{g}[c]`` (of
    dtype ``out_ts[g]``). With one group, ``keep`` also writes it to ``keep[c]`` in float (a
    mean the next stage reads unrounded), and ``update`` = (formula, dtype) writes
    ``upd[c]`` = the formula of (input 0: the value, input 1: ``epi1[c]``), both of that dtype
    (a moving statistic: no separate launch). Parameters: ``out0``..., ``keep``, ``upd``,
    ``epi1``, ``part``."""
    assert len(out_ts) == 1 or not (keep or update)
    width = len(out_ts) * cols
    ind = " " * 12
    params = [ptr(f"out{g}", t, False) for g, t in enumerate(out_ts)]
    params += ["float* __restrict__ keep"] if keep else []
    if update is not None:  # in place over epi1 is allowed: one thread reads, then writes
        params += [ptr("upd", update[1], False, False), ptr("epi1", update[1], True, False)]
    params += ["const float* __restrict__ part"]
    store = f"{ind}const float v = red0[threadIdx.x] * {c_float(scale)};\n"
    for g in range(len(out_ts)):
        lo = f"c >= {g * cols}LL && " if g else ""
        store += f"{ind}if ({lo}c < {(g + 1) * cols}LL) out{g}[c - {g * cols}LL] = v;\n"
    store += f"{ind}keep[c] = v;\n" if keep else ""
    store += epilogue_store(update[0], "upd", "c", "v", ind) if update is not None else ""
    tag = kernel_name("bn_cols_finish", f"{chunks},{cols},{scale},{out_ts},{keep}{store}")
    src = _column_sum_kernel(tag, ", ".join(params), chunks, width, 1, 1, "",
                             f"{ind}    acc0 += part[at];\n", store)
    return Rendered(tag, src, len(params),
                    helpers=dtype_helpers(*out_ts, *(update[1:] if update else ())))
