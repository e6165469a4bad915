"""The weight gradient of the direct tensor-core convolution (``kernels_conv_mma``, whose
docstring says when it runs): per-block partial sums over pixels, then a second kernel adding
them up in a fixed order (the same result on every run, no atomics between blocks).

The pixels are the reduction axis, the strided one of NHWC data: a warp loads its fragments
by pixel, as the forward kernel does, and transposes them in registers (``movmatrix``).
"""
from __future__ import annotations

from ...compiler.ops.geometry import ConvWindow
from .codegen import C_TYPES, NARROW_HELPER, Rendered, kernel_name, kernel_source, ptr, with_dtype
from .kernels_conv_mma import (MMA, MMA_TYPES, VECTORS, mma_frame, offset_type, padded,
                               pair_channel, pixel_rows, rows_at)

TRANSPOSE = 'asm volatile("movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;" : "=r"({d}) : "r"({u}));'
FILTER_WARPS = 8
FILTER_STEP = 16  # pixels of one mma's reduction
SUM_GROUPS = 8  # warps of a block of the partial sums' kernel, each a share of the partials


def filter_blocks(g: ConvWindow, sm_count: int) -> int:
    """Blocks of one weight-gradient launch: ``g.kh`` (one per kernel row) times a share of the
    pixel steps, about two blocks an SM in all (each block's partial sums are read once
    more)."""
    steps = -(-g.n * g.h * g.w // FILTER_STEP)
    return max(1, min(-(-steps // FILTER_WARPS), 2 * sm_count // g.kh)) * g.kh


def filter_partials(g: ConvWindow, blocks: int) -> int:
    """Floats of the weight-gradient kernel's partial sums (``blocks`` launched)."""
    return blocks * g.filters * g.kw * padded(g.c)


def render_conv_mma_filter(g: ConvWindow, dtype: str) -> Rendered:
    """Partial sums of the weight gradient dw[o][r][s][c] (OHWI) = sum over pixels of
    dy[n][h][w][o] * x[n][h+r-ph][w+s-pw][c]: block b takes kernel row r = b % kh and a share
    of the pixels, and writes its sums to ``part[b]`` (o, s, c ordered), which
    ``render_filter_sum`` adds up; parameters (part, x, dy, n pixels). Each warp reduces steps
    of 16 pixels, the mma's reduction axis: a pixel's channels are loaded as in the forward
    kernel and transposed in registers so that pixels run along the fragments' pairs."""
    real, cin, cout, kw, ab = g.c, padded(g.c), g.filters, g.kw, MMA_TYPES[dtype]
    mts, nts, it = cout // 16, cin // 8, offset_type(g)
    per_row = cout * kw * cin
    vdy = VECTORS[cout // 4]
    body = (
        f"    __shared__ float red[{per_row}];\n"
        f"    for (int i = threadIdx.x; i < {per_row}; i += blockDim.x) red[i] = 0.f;\n"
        f"    const int r = blockIdx.x % {g.kh}, blocks = gridDim.x / {g.kh};\n"
        f"    float acc[{mts}][{kw}][{nts}][4];\n"
        "    #pragma unroll\n"
        f"    for (int q = 0; q < {mts * kw * nts * 4}; ++q) (&acc[0][0][0][0])[q] = 0.f;\n"
        f"    for (long long step = (long long)(blockIdx.x / {g.kh}) * {FILTER_WARPS} + warp;"
        f" step * {FILTER_STEP} < n; step += (long long)blocks * {FILTER_WARPS}) {{\n"
        + pixel_rows(2, f"({it})(step * {FILTER_STEP}) + j * 8 + g", it) +
        # A = dy^T (o x pixels): matrix (o tile i of m-tile mt, pixel half j) is the transpose
        # of the stored rows pixel j*8+g, word 2 mt + i of thread t's channels
        f"        {vdy} u[2];\n"
        "        #pragma unroll\n"
        "        for (int j = 0; j < 2; ++j)\n"
        f"            u[j] = in_range[j] ? __ldg(reinterpret_cast<const {vdy}*>("
        f"dy + p[j] * {cout} + t * {cout // 4})) : {vdy}{{}};\n"
        f"        unsigned int a[{mts}][4];\n"
        "        #pragma unroll\n"
        f"        for (int q = 0; q < {mts * 4}; ++q) {{\n"
        "            const int mt = q >> 2, i = q & 1, j = (q >> 1) & 1;\n"
        "            const unsigned int word = ((const unsigned int*)&u[j])[2 * mt + i];\n"
        "            " + TRANSPOSE.format(d="a[mt][q & 3]", u="word") + "\n"
        "        }\n"
        "        #pragma unroll\n"
        f"        for (int s = 0; s < {kw}; ++s) {{\n"
        + rows_at(2, f"r - {g.ph}", f"s - {g.pw}", "x", real, cin, it) +
        "            #pragma unroll\n"
        f"            for (int nt = 0; nt < {nts}; ++nt) {{\n"
        "                unsigned int b[2];\n"
        "                #pragma unroll\n"
        "                for (int j = 0; j < 2; ++j) {\n"
        "                    const unsigned int word = ((const unsigned int*)&v[j])[nt];\n"
        "                    " + TRANSPOSE.format(d="b[j]", u="word") + "\n"
        "                }\n"
        "                #pragma unroll\n"
        f"                for (int mt = 0; mt < {mts}; ++mt)\n"
        "                    " + MMA.format(ab=ab, c="acc[mt][s][nt]", a="a[mt]", b0="b[0]",
                                           b1="b[1]", ind=" " * 20) +
        "            }\n"
        "        }\n"
        "    }\n"
        + _flush_sums(mts, kw, nts, cout, cin, per_row))
    params = f"float* __restrict__ part, {ptr('x', dtype)}, {ptr('dy', dtype)}, long long n"
    tag = kernel_name(f"conv_mma_filter_{ab}", repr(g) + dtype)
    return mma_frame(tag, params, FILTER_WARPS * 32, g, body)


def _flush_sums(mts: int, kw: int, nts: int, cout: int, cin: int, per_row: int) -> str:
    """C adding each warp's accumulators into the block's shared sums ``red`` and writing them
    to ``part[blockIdx.x]`` (o, s, c ordered)."""
    return (
        "    __syncthreads();\n"
        # accumulator (mt, s, nt, q): MMA row 16 mt + 8 (q >> 1) + g is column g of o tile
        # q >> 1, MMA column 2t + (q & 1) of tile nt (both in pair_channel's order)
        "    #pragma unroll\n"
        f"    for (int mt = 0; mt < {mts}; ++mt)\n"
        "        #pragma unroll\n"
        f"        for (int s = 0; s < {kw}; ++s)\n"
        "            #pragma unroll\n"
        f"            for (int nt = 0; nt < {nts}; ++nt)\n"
        "                #pragma unroll\n"
        "                for (int q = 0; q < 4; ++q) {\n"
        f"                    const int o = {pair_channel('2 * mt + (q >> 1)', 'g', cout)};\n"
        f"                    const int c = {pair_channel('nt', '2 * t + (q & 1)', cin)};\n"
        f"                    atomicAdd(red + (o * {kw} + s) * {cin} + c, acc[mt][s][nt][q]);\n"
        "                }\n"
        "    __syncthreads();\n"
        f"    for (int i = threadIdx.x; i < {per_row}; i += blockDim.x)\n"
        f"        part[(long long)blockIdx.x * {per_row} + i] = red[i];\n")


def render_filter_sum(g: ConvWindow, blocks: int, dtype: str) -> Rendered:
    """dw[o][r][s][c] = the sum of the ``blocks / kh`` partial sums of kernel row r (written by
    ``render_conv_mma_filter`` to blocks r, r + kh, ...); parameters (dw, part, n = dw's size).
    Block b sums elements 32 b .. 32 b + 31, each of its ``SUM_GROUPS`` warps a strided share of
    the partials, then adds the warps' sums in a fixed order (the same result on every run)."""
    per_row, kh, kw, c = g.filters * g.kw * padded(g.c), g.kh, g.kw, g.c
    body = (f"    __shared__ float sums[{SUM_GROUPS}][32];\n"
            "    const int lane = threadIdx.x & 31, grp = threadIdx.x >> 5;\n"
            "    const long long i = (long long)blockIdx.x * 32 + lane;\n"
            "    float sum = 0.f;\n"
            "    if (i < n) {\n"
            f"        const long long ch = i % {c}, s = (i / {c}) % {kw};\n"
            f"        const long long r = (i / {c * kw}) % {kh}, o = i / {c * kw * kh};\n"
            f"        const float* at = part + r * {per_row} + (o * {kw} + s) * {padded(c)}"
            " + ch;\n"
            f"        for (int b = grp; b < {blocks // kh}; b += {SUM_GROUPS})\n"
            f"            sum += at[(long long)b * {kh * per_row}];\n"
            "    }\n"
            "    sums[grp][lane] = sum;\n"
            "    __syncthreads();\n"
            "    if (grp == 0 && i < n) {\n"
            "        #pragma unroll\n"
            f"        for (int k = 1; k < {SUM_GROUPS}; ++k) sum += sums[k][lane];\n"
            f"        dw[i] = ({C_TYPES[dtype]})sum;\n"
            "    }\n")
    params = f"{ptr('dw', dtype, False)}, const float* __restrict__ part, long long n"
    tag = kernel_name(with_dtype("conv_filter_sum", dtype), repr(g) + str(blocks))
    return Rendered(tag, kernel_source(tag, params, body), 2, helpers=(NARROW_HELPER,))
