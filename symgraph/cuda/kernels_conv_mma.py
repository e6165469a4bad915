"""A direct tensor-core convolution for narrow channels-last data with few channels: the
generated branch of such a convolution's forward and data-gradient calls.

Why: cuDNN's kernels for ResNet-20's 16-channel 3x3 layers at 32x32 (bfloat16, NHWC, batch
128) take about 20 us a call on the H100, replayed in a graph, for 4 MB read and 4 MB written:
their tiles are 64 or more channels wide. Here each warp computes 32 output pixels x all the
output channels with ``mma.sync`` (m16n8k16, float accumulation), reading its operand
fragments straight from the NHWC data (a pixel's channels are contiguous, so a fragment's pair
of channels is one 32-bit load) and the weights from shared memory, staged once per block.

The data gradient of a stride-1 convolution with "same" padding is the forward convolution of
dy with the weights flipped in space and input / output channels swapped: the same kernel,
staging the weights that way (``transposed``).

Fits (``mma_fits``): 2-D, float16 or bfloat16, channels last, one group, stride and dilation
1, odd kernel with padding (k - 1) / 2, input and output channels multiples of 16 and at most
32 (wider layers are fast in cuDNN), the staged weights within 48 KB of shared memory.
"""
from __future__ import annotations

from ..ops.geometry import ConvWindow
from .codegen import NARROW_HELPER, Rendered, kernel_name, ptr

MMA_TYPES = {"bfloat16": "bf16", "float16": "f16"}
PACK = {"bfloat16": "__floats2bfloat162_rn", "float16": "__floats2half2_rn"}
VEC2 = {"bfloat16": "__nv_bfloat162", "float16": "__half2"}
WARPS = 4  # per block
PIXELS = 32  # per warp and trip: two m16 tiles
MAX_CHANNELS = 32
PER_SM = 8
SMEM = 48 << 10  # static shared memory a block may take


def mma_fits(g: ConvWindow, dtype: str) -> bool:
    """Whether the direct kernel runs this channels-last convolution's forward and data
    gradient (see the module's docstring)."""
    return (dtype in MMA_TYPES and g.channel_last and g.rank == 2 and g.groups == 1
            and g.sh == g.sw == g.dh == g.dw == 1 and g.kh % 2 == 1 and g.kw % 2 == 1
            and g.ph == (g.kh - 1) // 2 and g.pw == (g.kw - 1) // 2
            and all(c % 16 == 0 and c <= MAX_CHANNELS for c in (g.c, g.filters))
            and max(_staged_bytes(g.kh * g.kw, g.c, g.filters),
                    _staged_bytes(g.kh * g.kw, g.filters, g.c)) <= SMEM)


def _staged_bytes(taps: int, cin: int, cout: int) -> int:
    """Shared memory of the staged weights (rows padded by 4 words)."""
    return 4 * taps * cout * (cin // 2 + 4)


def mma_blocks(g: ConvWindow, sm_count: int) -> int:
    """Blocks of one launch: ``PER_SM`` an SM at most, each warp looping over trips of
    ``PIXELS`` pixels (each block stages the weights once)."""
    trips = -(-g.n * g.h * g.w // PIXELS)
    return max(1, min(-(-trips // WARPS), PER_SM * sm_count))


def render_conv_mma(g: ConvWindow, dtype: str, transposed: bool) -> Rendered:
    """out[n][h][w][o] = sum over taps and input channels k of in[n][h+r-ph][w+s-pw][k] *
    B[tap][o][k], zero outside; parameters (out, in, w, n pixels). Forward: in = x, out = y,
    B[tap][o][k] = w[o][tap][k] (OHWI). ``transposed`` (data gradient): in = dy, out = dx,
    B[tap][o][k] = w[k][taps - 1 - tap][o]."""
    taps, cin, cout = g.kh * g.kw, g.c, g.filters
    if transposed:
        cin, cout = cout, cin
    kp = cin // 2 + 4  # words per staged row; the 4 spread a warp's reads over the banks
    assert _staged_bytes(taps, cin, cout) <= SMEM
    ab = MMA_TYPES[dtype]
    if transposed:
        stage = (f"            lo = wu[(c * {taps} + {taps - 1} - tap) * {cout} + o];\n"
                 f"            hi = wu[((c + 1) * {taps} + {taps - 1} - tap) * {cout} + o];\n")
    else:
        stage = (f"            const unsigned int pair = reinterpret_cast<const unsigned int*>(w)"
                 f"[((o * {taps} + tap) * {cin} + c) / 2];\n"
                 "            lo = pair & 0xffffu; hi = pair >> 16;\n")
    hw, vtype = g.h * g.w, "uint2" if cin == 16 else "uint4"
    body = (
        f"    __shared__ unsigned int wb[{taps * cout * kp}];\n"
        "    const unsigned short* wu = reinterpret_cast<const unsigned short*>(w);\n"
        f"    for (int i = threadIdx.x; i < {taps * cout * (cin // 2)}; i += blockDim.x) {{\n"
        f"        const int kp = i % {cin // 2}, o = (i / {cin // 2}) % {cout};\n"
        f"        const int tap = i / {cin // 2 * cout};\n"
        # word kp = kc * 8 + half * 4 + t of the row: channels c, c + 1 (see the loads)
        f"        const int c = (kp & 3) * {cin // 4} + (kp >> 3) * 4 + ((kp >> 2) & 1) * 2;\n"
        "        unsigned int lo, hi;\n"
        "        {\n"
        f"{stage}"
        "        }\n"
        f"        wb[(tap * {cout} + o) * {kp} + kp] = lo | (hi << 16);\n"
        "    }\n"
        "    __syncthreads();\n"
        "    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;\n"
        "    const int g = lane >> 2, t = lane & 3;\n"
        "    const unsigned int* xw = reinterpret_cast<const unsigned int*>(in);\n"
        f"    for (long long trip = (long long)blockIdx.x * {WARPS} + warp; trip * {PIXELS} < n;\n"
        f"         trip += (long long)gridDim.x * {WARPS}) {{\n"
        # rows j = 2 * tile + half: pixel trip * 32 + tile * 16 + half * 8 + g
        "        int pn[4], py[4], px[4];\n"
        "        bool in_range[4];\n"
        "        #pragma unroll\n"
        "        for (int j = 0; j < 4; ++j) {\n"
        f"            const long long m = trip * {PIXELS} + (j >> 1) * 16 + (j & 1) * 8 + g;\n"
        "            in_range[j] = m < n;\n"
        f"            pn[j] = (int)(m / {hw}); py[j] = (int)(m % {hw}) / {g.w};"
        f" px[j] = (int)(m % {g.w});\n"
        "        }\n"
        f"        float acc[2][{cout // 8}][4];\n"
        "        #pragma unroll\n"
        f"        for (int q = 0; q < {2 * cout // 8 * 4}; ++q) (&acc[0][0][0])[q] = 0.f;\n"
        "        #pragma unroll\n"
        f"        for (int tap = 0; tap < {taps}; ++tap) {{\n"
        f"            const int dy = tap / {g.kw} - {g.ph}, dx = tap % {g.kw} - {g.pw};\n"
        "            long long at[4];\n"
        "            bool ok[4];\n"
        "            #pragma unroll\n"
        "            for (int j = 0; j < 4; ++j) {\n"
        "                const int yy = py[j] + dy, xx = px[j] + dx;\n"
        f"                ok[j] = in_range[j] && yy >= 0 && yy < {g.h} && xx >= 0 && xx < {g.w};\n"
        f"                at[j] = (((long long)pn[j] * {g.h} + yy) * {g.w} + xx) * {cin // 2}"
        f" + t * {cin // 8};\n"
        "            }\n"
        # thread t's row vector: channels t * cin/4 .. + cin/4, words 2 kc and 2 kc + 1 its
        # fragment's columns 2t, 2t+1 and 2t+8, 2t+9 of chunk kc (the staged weights agree)
        f"            {vtype} v[4];\n"
        "            #pragma unroll\n"
        "            for (int j = 0; j < 4; ++j)\n"
        f"                v[j] = ok[j] ? __ldg(reinterpret_cast<const {vtype}*>(xw + at[j]))"
        f" : {vtype}{{}};\n"
        "            #pragma unroll\n"
        f"            for (int kc = 0; kc < {cin // 16}; ++kc) {{\n"
        "                unsigned int a[2][4];\n"
        "                #pragma unroll\n"
        "                for (int mt = 0; mt < 2; ++mt) {\n"
        "                    const unsigned int* r0 = (const unsigned int*)&v[2 * mt];\n"
        "                    const unsigned int* r1 = (const unsigned int*)&v[2 * mt + 1];\n"
        "                    a[mt][0] = r0[2 * kc]; a[mt][1] = r1[2 * kc];\n"
        "                    a[mt][2] = r0[2 * kc + 1]; a[mt][3] = r1[2 * kc + 1];\n"
        "                }\n"
        "                #pragma unroll\n"
        f"                for (int nt = 0; nt < {cout // 8}; ++nt) {{\n"
        f"                    const unsigned int* b = wb + (tap * {cout} + nt * 8 + g) * {kp}"
        " + kc * 8 + t;\n"
        "                    const unsigned int b0 = b[0], b1 = b[4];\n"
        "                    #pragma unroll\n"
        "                    for (int mt = 0; mt < 2; ++mt)\n"
        f"                        asm volatile(\"mma.sync.aligned.m16n8k16.row.col.f32.{ab}.{ab}"
        ".f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\"\n"
        "                            : \"+f\"(acc[mt][nt][0]), \"+f\"(acc[mt][nt][1]),"
        " \"+f\"(acc[mt][nt][2]), \"+f\"(acc[mt][nt][3])\n"
        "                            : \"r\"(a[mt][0]), \"r\"(a[mt][1]), \"r\"(a[mt][2]),"
        " \"r\"(a[mt][3]), \"r\"(b0), \"r\"(b1));\n"
        "                }\n"
        "            }\n"
        "        }\n"
        "        #pragma unroll\n"
        "        for (int mt = 0; mt < 2; ++mt)\n"
        "            #pragma unroll\n"
        "            for (int half = 0; half < 2; ++half) {\n"
        f"                const long long m = trip * {PIXELS} + mt * 16 + half * 8 + g;\n"
        "                if (m >= n) continue;\n"
        "        "                #pragma unroll\n"
        f"                for (int nt = 0; nt < {cout // 8}; ++nt)\n"
        f"                    *reinterpret_cast<{VEC2[dtype]}*>(out + m * {cout} + nt * 8 + 2 * t)"
        f" = {PACK[dtype]}(acc[mt][nt][2 * half], acc[mt][nt][2 * half + 1]);\n"
        "            }\n"
        "    }\n")
    params = (f"{ptr('out', dtype, False)}, {ptr('in', dtype)}, {ptr('w', dtype)}, "
              "long long n")
    tag = kernel_name(f"conv_mma_{ab}", repr(g) + dtype + str(transposed))
    src = (f"extern \"C\" __global__ void __launch_bounds__({WARPS * 32}) {tag}({params}) {{\n"
           f"{body}}}\n")
    return Rendered(tag, src, 3, helpers=(NARROW_HELPER,))


FILTER_WARPS = 4
FILTER_STEP = 16  # pixels of one mma's reduction


def filter_blocks(g: ConvWindow, sm_count: int) -> int:
    """Blocks of one weight-gradient launch: ``g.kh`` (one per kernel row) times a share of the
    pixel steps, about two blocks an SM in all."""
    steps = -(-g.n * g.h * g.w // FILTER_STEP)
    per_row = max(1, min(-(-steps // FILTER_WARPS), 2 * sm_count // g.kh))
    return per_row * g.kh


def render_conv_mma_filter(g: ConvWindow, dtype: str) -> Rendered:
    """Partial sums of the weight gradient dw[o][r][s][c] (OHWI) = sum over pixels of
    dy[n][h][w][o] * x[n][h+r-ph][w+s-pw][c], added (atomically) into float32 ``part`` (zeroed
    before); parameters (part, x, dy, n pixels). Block ``b`` takes kernel row ``b % kh``; each
    warp reduces steps of 16 pixels, the mma's reduction axis: its fragments are 32-bit loads
    of a pixel's channel pairs, transposed in registers (``movmatrix``) so that pixels run
    along the fragment's pairs."""
    cin, cout, kw, ab = g.c, g.filters, g.kw, MMA_TYPES[dtype]
    mts, nts = cout // 16, cin // 8
    hw = g.h * g.w
    body = (
        "    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;\n"
        "    const int g = lane >> 2, t = lane & 3;\n"
        f"    const int r = blockIdx.x % {g.kh}, blocks = gridDim.x / {g.kh};\n"
        "    const unsigned int* xw = reinterpret_cast<const unsigned int*>(x);\n"
        "    const unsigned int* dyw = reinterpret_cast<const unsigned int*>(dy);\n"
        f"    float acc[{mts}][{kw}][{nts}][4];\n"
        "    #pragma unroll\n"
        f"    for (int q = 0; q < {mts * kw * nts * 4}; ++q) (&acc[0][0][0][0])[q] = 0.f;\n"
        f"    for (long long step = (long long)(blockIdx.x / {g.kh}) * {FILTER_WARPS} + warp;"
        f" step * {FILTER_STEP} < n; step += (long long)blocks * {FILTER_WARPS}) {{\n"
        "        long long p[2];\n"
        "        int pn[2], py[2], px[2];\n"
        "        bool in_range[2];\n"
        "        #pragma unroll\n"
        "        for (int j = 0; j < 2; ++j) {\n"
        f"            p[j] = step * {FILTER_STEP} + j * 8 + g;\n"
        "            in_range[j] = p[j] < n;\n"
        f"            pn[j] = (int)(p[j] / {hw}); py[j] = (int)(p[j] % {hw}) / {g.w};"
        f" px[j] = (int)(p[j] % {g.w});\n"
        "        }\n"
        # A = dy^T (o x pixels): matrix (o block i, pixel half j) is the transpose of the
        # stored rows pixel j*8+g, channels o = 16 mt + 8 i + 2t
        f"        unsigned int a[{mts}][4];\n"
        "        #pragma unroll\n"
        f"        for (int mt = 0; mt < {mts}; ++mt)\n"
        "            #pragma unroll\n"
        "            for (int q = 0; q < 4; ++q) {\n"
        "                const int i = q & 1, j = q >> 1;\n"
        f"                const unsigned int u = in_range[j] ? __ldg(dyw + (p[j] * {cout}"
        " + 16 * mt + 8 * i) / 2 + t) : 0u;\n"
        "                asm volatile(\"movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;\""
        " : \"=r\"(a[mt][q]) : \"r\"(u));\n"
        "            }\n"
        "        #pragma unroll\n"
        f"        for (int s = 0; s < {kw}; ++s) {{\n"
        "            long long at[2];\n"
        "            bool ok[2];\n"
        "            #pragma unroll\n"
        "            for (int j = 0; j < 2; ++j) {\n"
        f"                const int yy = py[j] + r - {g.ph}, xx = px[j] + s - {g.pw};\n"
        f"                ok[j] = in_range[j] && yy >= 0 && yy < {g.h} && xx >= 0 && xx < {g.w};\n"
        f"                at[j] = (((long long)pn[j] * {g.h} + yy) * {g.w} + xx) * {cin // 2} + t;\n"
        "            }\n"
        "            #pragma unroll\n"
        f"            for (int nt = 0; nt < {nts}; ++nt) {{\n"
        "                unsigned int b[2];\n"
        "                #pragma unroll\n"
        "                for (int j = 0; j < 2; ++j) {\n"
        "                    const unsigned int u = ok[j] ? __ldg(xw + at[j] + nt * 4) : 0u;\n"
        "                    asm volatile(\"movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;\""
        " : \"=r\"(b[j]) : \"r\"(u));\n"
        "                }\n"
        "                #pragma unroll\n"
        f"                for (int mt = 0; mt < {mts}; ++mt)\n"
        f"                    asm volatile(\"mma.sync.aligned.m16n8k16.row.col.f32.{ab}.{ab}"
        ".f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\"\n"
        "                        : \"+f\"(acc[mt][s][nt][0]), \"+f\"(acc[mt][s][nt][1]),"
        " \"+f\"(acc[mt][s][nt][2]), \"+f\"(acc[mt][s][nt][3])\n"
        "                        : \"r\"(a[mt][0]), \"r\"(a[mt][1]), \"r\"(a[mt][2]),"
        " \"r\"(a[mt][3]), \"r\"(b[0]), \"r\"(b[1]));\n"
        "            }\n"
        "        }\n"
        "    }\n"
        # C fragment: rows o = 16 mt + g (+ 8), columns c = 8 nt + 2t (+ 1)
        "    #pragma unroll\n"
        f"    for (int mt = 0; mt < {mts}; ++mt)\n"
        "        #pragma unroll\n"
        f"        for (int s = 0; s < {kw}; ++s)\n"
        "            #pragma unroll\n"
        f"            for (int nt = 0; nt < {nts}; ++nt)\n"
        "                #pragma unroll\n"
        "                for (int q = 0; q < 4; ++q) {\n"
        "                    const int o = 16 * mt + g + 8 * (q >> 1), c = 8 * nt + 2 * t"
        " + (q & 1);\n"
        f"                    atomicAdd(part + ((o * {g.kh} + r) * {kw} + s) * {cin} + c,"
        " acc[mt][s][nt][q]);\n"
        "                }\n")
    params = (f"float* __restrict__ part, {ptr('x', dtype)}, {ptr('dy', dtype)}, long long n")
    tag = kernel_name(f"conv_mma_filter_{ab}", repr(g) + dtype)
    src = (f"extern \"C\" __global__ void __launch_bounds__({FILTER_WARPS * 32}) {tag}({params}) "
           f"{{\n{body}}}\n")
    return Rendered(tag, src, 3, helpers=(NARROW_HELPER,))
