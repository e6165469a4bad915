"""A direct tensor-core convolution for narrow channels-last data with few channels: the
generated branch of such a convolution's forward, data-gradient and weight-gradient calls.

Why: cuDNN's kernels for ResNet-20's 16-channel 3x3 layers at 32x32 (bfloat16, NHWC, batch
128) take about 20 us a call on the H100, replayed in a graph, for 4 MB read and 4 MB written:
their tiles are 64 or more channels wide. Here each warp computes 32 output pixels x all the
output channels with ``mma.sync`` (m16n8k16, float accumulation), reading its operand
fragments straight from the NHWC data and the weights from shared memory, staged once per
block.

Channel order: a fragment's thread holds columns 2t, 2t+1 and 2t+8, 2t+9 of each 16-column
chunk (t = lane % 4). The order of a GEMM's reduction and output columns is free, so column
pairs are mapped to channels such that thread t's pairs over all chunks are the contiguous
channels t*C/4 .. t*C/4 + C/4 - 1 of a pixel (``pair_channel``): a pixel's fragment is one 8-
or 16-byte load, and its outputs one store.

The data gradient of a stride-1 convolution with "same" padding is the forward convolution of
dy with the weights flipped in space and input / output channels swapped: the same kernel,
staging the weights that way (``transposed``). The weight gradient reduces over pixels, the
strided axis of NHWC data: its fragments are loaded by pixel and transposed in registers
(``movmatrix``); each block sums its warps in shared memory and writes its partial sums, which
a second kernel adds up in a fixed order (no atomics between blocks: they cost more than the
sums, and the result is the same on every run); those two are in ``kernels_conv_mma_filter``,
built from this module's fragment helpers (``pixel_rows``, ``rows_at``, ``pair_channel``).

Fits (``mma_fits``): 2-D, float16 or bfloat16, channels last, one group, stride and dilation
1, odd kernel with padding (k - 1) / 2, input and output channels multiples of 16 and at most
32 (wider layers are fast in cuDNN; fewer than 16 input channels, as an image's 3, are
zero-padded to 16 as loaded, but for the data gradient, which would write them), the staged
weights within 48 KB of shared memory, and a weight gradient's sums within
``MAX_FILTER_SUMS``. The ``Choice`` keeps these kernels only where they time faster.
"""
from __future__ import annotations

from typing import Optional

from ...core.expr import Expr
from ...compiler.ops.geometry import ConvWindow
from .codegen import NARROW_HELPER, Rendered, expr_to_c, kernel_name, ptr

MMA_TYPES = {"bfloat16": "bf16", "float16": "f16"}
PACK = {"bfloat16": "__floats2bfloat162_rn", "float16": "__floats2half2_rn"}
VEC2 = {"bfloat16": "__nv_bfloat162", "float16": "__half2"}
WARPS = 4  # per block
PIXELS = 32  # per warp and trip: two m16 tiles
MAX_CHANNELS = 32
PER_SM = 4  # 8 took 10% longer (ResNet-20's 16-channel layers, H100)
# A weight-gradient warp holds filters * kw * channels / 32 sums: 32 x 32 x 3 (96 a thread)
# ran at 175 us where cuDNN takes 20, 16 x 16 x 3 (24) at 17 us where cuDNN takes 33.
MAX_FILTER_SUMS = 16 * 32 * 3
SMEM = 48 << 10  # static shared memory a block may take


def mma_fits(g: ConvWindow, dtype: str, call: str) -> bool:
    """Whether the direct kernels run this call (forward / data / filter) of a channels-last
    convolution (see the module's docstring)."""
    cin = padded(g.c) if call != "data" else g.c
    if call == "filter" and g.filters * g.kw * cin > MAX_FILTER_SUMS:
        return False
    return (dtype in MMA_TYPES and g.channel_last and g.rank == 2 and g.groups == 1
            and g.sh == g.sw == g.dh == g.dw == 1 and g.kh % 2 == 1 and g.kw % 2 == 1
            and g.ph == (g.kh - 1) // 2 and g.pw == (g.kw - 1) // 2
            and all(c % 16 == 0 and c <= MAX_CHANNELS for c in (cin, g.filters))
            and max(_staged_bytes(g.kh * g.kw, cin, g.filters),
                    _staged_bytes(g.kh * g.kw, g.filters, cin)) <= SMEM)


def padded(channels: int) -> int:
    """Input channels as the MMA sees them: fewer than 16 (an image's 3) are zero-padded to
    16 as they are loaded (the forward and weight-gradient calls; a data gradient writes
    them, so it needs 16)."""
    return max(channels, 16)


def _staged_bytes(taps: int, cin: int, cout: int) -> int:
    """Shared memory of the staged weights (rows padded by 4 words)."""
    return 4 * taps * cout * (cin // 2 + 4)


def mma_blocks(g: ConvWindow, sm_count: int) -> int:
    """Blocks of one launch: ``PER_SM`` an SM at most, each warp looping over trips of
    ``PIXELS`` pixels (each block stages the weights once)."""
    trips = -(-g.n * g.h * g.w // PIXELS)
    return max(1, min(-(-trips // WARPS), PER_SM * sm_count))


MMA = ('asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.{ab}.{ab}.f32 {{%0,%1,%2,%3}}, '
       '{{%4,%5,%6,%7}}, {{%8,%9}}, {{%0,%1,%2,%3}};"\n{ind}    : "+f"({c}[0]), "+f"({c}[1]), '
       '"+f"({c}[2]), "+f"({c}[3])\n{ind}    : "r"({a}[0]), "r"({a}[1]), "r"({a}[2]), '
       '"r"({a}[3]), "r"({b0}), "r"({b1}));\n')
VECTORS = {4: "uint2", 8: "uint4"}  # channels a thread holds (C / 4) -> its vector type


def pair_channel(tile: str, col: str, channels: int) -> str:
    """C of the channel of column ``col`` (0-7) of 8-column fragment tile ``tile`` of a
    ``channels``-wide operand: thread col / 2's pairs cover channels (col / 2) * C/4 onward."""
    return f"(({col}) / 2 * {channels // 4} + 2 * ({tile}) + ({col}) % 2)"


def offset_type(g: ConvWindow) -> str:
    """32-bit element offsets when every one fits (fewer registers and instructions). Signed,
    unlike ``codegen.index_type``'s: with ``unsigned`` (wrapping, so not strength-reduced)
    the direct kernels measured 7-40% slower on the H100 (the stem's forward 8.3 -> 11.9 us)."""
    return "int" if g.n * g.h * g.w * max(g.c, g.filters) < 2 ** 31 - 2 ** 20 else "long long"


def pixel_rows(count: int, first: str, it: str) -> str:
    """C declaring ``pn, py, px, in_range[j]`` of rows j < ``count``: pixel ``first`` (an
    expression of j), ``n`` the number of pixels."""
    return (f"        {it} p[{count}]; int pn[{count}], py[{count}], px[{count}];\n"
            f"        bool in_range[{count}];\n"
            "        #pragma unroll\n"
            f"        for (int j = 0; j < {count}; ++j) {{\n"
            f"            p[j] = {first};\n"
            "            in_range[j] = p[j] < n;\n"
            "            pn[j] = (int)(p[j] / HW); py[j] = (int)(p[j] % HW) / W;"
            " px[j] = (int)(p[j] % W);\n"
            "        }\n")


def rows_at(count: int, dy: str, dx: str, src: str, real: int, channels: int, it: str) -> str:
    """C declaring ``v[j]``: thread t's ``channels / 4`` channels of row j's pixel moved by
    (dy, dx) in ``src`` (zero outside the image), whose pixels hold ``real`` channels."""
    return _shifted(count, dy, dx, real, it) + _load_rows(count, src, real, channels)


def _shifted(count: int, dy: str, dx: str, channels: int, it: str) -> str:
    """C declaring ``ok[j]`` and ``at[j]``: row j's pixel moved by (dy, dx) is inside the image,
    and the offset of its channel 0 (``channels`` a pixel)."""
    return (f"            bool ok[{count}]; {it} at[{count}];\n"
            "            #pragma unroll\n"
            f"            for (int j = 0; j < {count}; ++j) {{\n"
            f"                const int yy = py[j] + {dy}, xx = px[j] + {dx};\n"
            "                ok[j] = in_range[j] && yy >= 0 && yy < H && xx >= 0 && xx < W;\n"
            f"                at[j] = (({it})(pn[j] * H + yy) * W + xx) * {channels};\n"
            "            }\n")


def _load_rows(count: int, src: str, real: int, channels: int) -> str:
    """C loading ``v[j]``, thread t's ``channels / 4`` channels of row j's pixel (``at[j]``,
    ``ok[j]``) of ``src``, whose pixels hold ``real`` channels: one vector load, or (fewer
    than 16 channels, unaligned) one 16-bit load per channel, zero past ``real``."""
    vec = VECTORS[channels // 4]
    declare = f"            {vec} v[{count}];\n"
    if real == channels:
        return (declare + "            #pragma unroll\n"
                f"            for (int j = 0; j < {count}; ++j)\n"
                f"                v[j] = ok[j] ? __ldg(reinterpret_cast<const {vec}*>("
                f"{src} + at[j] + t * {channels // 4})) : {vec}{{}};\n")
    return (declare + "            #pragma unroll\n"
            f"            for (int j = 0; j < {count}; ++j) {{\n"
            "                unsigned int h[4];\n"
            "                #pragma unroll\n"
            "                for (int q = 0; q < 4; ++q)\n"
            f"                    h[q] = ok[j] && t * 4 + q < {real} ? (unsigned int)"
            f"reinterpret_cast<const unsigned short*>({src})[at[j] + t * 4 + q] : 0u;\n"
            "                v[j] = make_uint2(h[0] | (h[1] << 16), h[2] | (h[3] << 16));\n"
            "            }\n")


def mma_frame(tag: str, params: str, threads: int, g: ConvWindow, body: str,
              n_ptr: int = 3) -> Rendered:
    """Kernel ``tag`` around ``body``: the image size and each thread's lane, warp, fragment
    row ``g`` and column pair ``t`` declared first."""
    src = (f"extern \"C\" __global__ void __launch_bounds__({threads}) {tag}({params}) {{\n"
           f"    const int H = {g.h}, W = {g.w}, HW = {g.h * g.w};\n"
           "    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;\n"
           "    const int g = lane >> 2, t = lane & 3;\n"
           f"{body}}}\n")
    return Rendered(tag, src, n_ptr, helpers=(NARROW_HELPER,))


def render_conv_mma(g: ConvWindow, dtype: str, transposed: bool,
                    epilogue: Optional[Expr] = None, operands: int = 0) -> Rendered:
    """out[n][h][w][o] = sum over taps and input channels k of in[n][h+r-ph][w+s-pw][k] *
    B[tap][o][k], zero outside; parameters (out, in, w, then ``operands`` more, n pixels).
    Forward: in = x, out = y, B[tap][o][k] = w[o][tap][k] (OHWI). ``transposed`` (data
    gradient): in = dy, out = dx, B[tap][o][k] = w[k][taps - 1 - tap][o]. ``epilogue``: a
    fused group's formula applied to each value as it is stored (input 0 the value, input k
    the same element of operand k)."""
    taps, real, cout = g.kh * g.kw, g.c, g.filters
    if transposed:
        real, cout = cout, real
    cin = padded(real)
    kp = cin // 2 + 4  # words per staged row; the 4 spread a warp's reads over the banks
    assert _staged_bytes(taps, cin, cout) <= SMEM
    ab, it = MMA_TYPES[dtype], offset_type(g)
    apply = _epilogue_c(epilogue, operands, cout)
    body = (
        _stage_weights(taps, real, cin, cout, kp, transposed) +
        f"    for (long long trip = (long long)blockIdx.x * {WARPS} + warp; trip * {PIXELS} < n;\n"
        f"         trip += (long long)gridDim.x * {WARPS}) {{\n"
        # rows j = 2 * tile + half: pixel trip * 32 + tile * 16 + half * 8 + g
        + pixel_rows(4, f"({it})(trip * {PIXELS}) + (j >> 1) * 16 + (j & 1) * 8 + g", it) +
        f"        float acc[2][{cout // 8}][4];\n"
        "        #pragma unroll\n"
        f"        for (int q = 0; q < {2 * cout // 8 * 4}; ++q) (&acc[0][0][0])[q] = 0.f;\n"
        "        #pragma unroll\n"
        f"        for (int tap = 0; tap < {taps}; ++tap) {{\n"
        + rows_at(4, f"tap / {g.kw} - {g.ph}", f"tap % {g.kw} - {g.pw}", "in", real, cin, it) +
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
        "                        " + MMA.format(ab=ab, c="acc[mt][nt]", a="a[mt]", b0="b0", b1="b1",
                                               ind=" " * 24) +
        "                }\n"
        "            }\n"
        "        }\n"
        + _store_rows(cout, dtype, apply) +
        "    }\n")
    extra = "".join(f"{ptr(f'e{k}', dtype)}, " for k in range(1, operands + 1))
    params = (f"{ptr('out', dtype, False)}, {ptr('in', dtype)}, {ptr('w', dtype)}, {extra}"
              "long long n")
    tag = kernel_name(f"conv_mma_{ab}", repr(g) + dtype + str(transposed) + repr(epilogue))
    return mma_frame(tag, params, WARPS * 32, g, body, 3 + operands)


def _stage_weights(taps: int, real: int, cin: int, cout: int, kp: int, transposed: bool) -> str:
    """C staging the weights in shared memory ``wb`` once per block (``kp`` words a row), the
    data gradient's (``transposed``) flipped in space with input and output channels swapped;
    an input of fewer than 16 channels zero-padded."""
    if transposed:
        stage = (f"        lo = wu[(c * {taps} + {taps - 1} - tap) * {cout} + o];\n"
                 f"        hi = wu[((c + 1) * {taps} + {taps - 1} - tap) * {cout} + o];\n")
    elif real < cin:  # weights of a padded input: zero past its channels, pairs unaligned
        stage = (f"        lo = c < {real} ? wu[(o * {taps} + tap) * {real} + c] : 0u;\n"
                 f"        hi = c + 1 < {real} ? wu[(o * {taps} + tap) * {real} + c + 1] : 0u;\n")
    else:
        stage = (f"        const unsigned int pair = reinterpret_cast<const unsigned int*>(w)"
                 f"[((o * {taps} + tap) * {cin} + c) / 2];\n"
                 "        lo = pair & 0xffffu; hi = pair >> 16;\n")
    return (
        # staged row n = MMA column (output channel o), word k = kc * 8 + half * 4 + t of it
        # the pair of MMA rows 16 kc + 8 half + 2t (input channels c, c + 1)
        f"    __shared__ unsigned int wb[{taps * cout * kp}];\n"
        "    const unsigned short* wu = reinterpret_cast<const unsigned short*>(w);\n"
        f"    for (int i = threadIdx.x; i < {taps * cout * (cin // 2)}; i += blockDim.x) {{\n"
        f"        const int k = i % {cin // 2}, row = (i / {cin // 2}) % {cout};\n"
        f"        const int tap = i / {cin // 2 * cout};\n"
        f"        const int o = {pair_channel('row / 8', 'row % 8', cout)};\n"
        f"        const int c = {pair_channel('k / 4', '(k % 4) * 2', cin)};\n"
        "        unsigned int lo, hi;\n"
        f"{stage}"
        f"        wb[(tap * {cout} + row) * {kp} + k] = lo | (hi << 16);\n"
        "    }\n"
        "    __syncthreads();\n")


def _store_rows(cout: int, dtype: str, apply: str) -> str:
    """C storing a warp's accumulators ``acc`` (after ``apply``, the epilogue) as ``dtype``:
    thread t's outputs of a row are channels t * cout/4 onward, one vector store."""
    vout = VECTORS[cout // 4]
    return (
        "        #pragma unroll\n"
        "        for (int j = 0; j < 4; ++j) {\n"
        "            if (!in_range[j]) continue;\n"
        f"            {vout} packed;\n"
        "            unsigned int* words = (unsigned int*)&packed;\n"
        "            #pragma unroll\n"
        f"            for (int nt = 0; nt < {cout // 8}; ++nt) {{\n"
        "                float* v = &acc[j >> 1][nt][2 * (j & 1)];\n"
        f"{apply}"
        f"                const {VEC2[dtype]} pair = {PACK[dtype]}(v[0], v[1]);\n"
        "                words[nt] = *reinterpret_cast<const unsigned int*>(&pair);\n"
        "            }\n"
        f"            *reinterpret_cast<{vout}*>(out + p[j] * {cout} + t * {cout // 4}) = packed;\n"
        "        }\n")


def _epilogue_c(epilogue: Optional[Expr], operands: int, cout: int) -> str:
    """C applying ``epilogue`` to the pair ``v[0], v[1]`` of output channels ``t * cout/4 +
    2 nt`` onward of pixel ``p[j]`` (operand k's elements there are its inputs k)."""
    if epilogue is None:
        return ""
    at = f"p[j] * {cout} + t * {cout // 4} + 2 * nt + e"
    lines, (root,) = expr_to_c([epilogue], ["v[e]"] + [f"sg_ld(e{k}[{at}])"
                                                        for k in range(1, operands + 1)])
    inner = "".join(f"                    {line}\n" for line in lines)
    return ("                #pragma unroll\n"
            "                for (int e = 0; e < 2; ++e) {\n"
            f"{inner}"
            f"                    v[e] = {root};\n"
            "                }\n")
