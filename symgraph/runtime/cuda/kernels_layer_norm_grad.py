"""C template of ``_backward_LayerNorm`` (``ops/layer_norm_grad.py``): one kernel.

A row is one (outer, inner) position of LayerNorm's view ``(outer, C, inner)``; its ``C``
values are strided by ``inner``. A block takes rows grid-stride, as the forward
(``kernels_row_norm``) does: each thread keeps up to ``PER`` of a row's values in registers
(element ``l = threadIdx.x + q * blockDim.x``), so x and dy are read once (a longer row's rest
is read again, as the host tests' one-thread blocks do). With ``xhat = (x -
mean) / std`` and ``gy = dy * gamma``, two block sums (``sg_block_sum``) give ``mean(gy)`` and
``mean(gy * xhat)``, and ``dx = (gy - mean(gy) - xhat * mean(gy * xhat)) / std``.

dgamma and dbeta sum ``dy * xhat`` and ``dy`` over all rows, column by column. A thread's
columns are the same in every row, so it sums them in registers across the block's rows; each
block then writes its sums to a row of float partials (scratch, ``2 * gridDim.x * C``), counts
itself done on a word of program state, and the block that counts last adds the partials in
block order (the same order every run: deterministic) and resets the word for the next launch.
All sums are in float; narrow data is loaded through ``sg_ld``.

Rows of at most ``WARP_ROW`` values take two kernels instead. :func:`render_layer_norm_backward_warps`:
a row per warp, its two sums by shuffles (no block barrier per row), so a block works on as many
rows at once as it has warps; the warps' column sums meet in shared memory, warp by warp, and
each block writes its row of partials. :func:`render_layer_norm_fold` then adds the partials
with many blocks (32 columns each, its warps taking every 8th partial, then added in warp
order), where one last block alone took most of the gradient's time.
"""
from __future__ import annotations

from textwrap import indent

from .codegen import Rendered, dtype_helpers, index_type, kernel_name, ptr, with_dtype
from .kernels_conv_pool import BLOCK_SIZE_FREE
from .kernels_row_norm import BLOCK_SUM


def render_layer_norm_backward(outer: int, count: int, inner: int, per: int,
                               x_t: str = "float32", p_t: str = "", s_t: str = "") -> Rendered:
    """The kernel over rows of ``count`` values (view ``(outer, count, inner)``), ``per``
    values per thread in registers (any block size: values past ``per * blockDim.x`` are read
    again, their column sums kept in the block's partials): data, dy and dx of ``x_t``, gamma and
    its gradients of ``p_t``, mean and std of ``s_t`` (both default ``x_t``). Parameters:
    ``dx, dgamma, dbeta, partials (float), done (unsigned), dy, x, gamma, mean, std``, then
    ``n`` (unused)."""
    p_t, s_t = p_t or x_t, s_t or x_t
    rows = outer * inner
    it = index_type(rows * count + 1)
    at = f"base + l * {inner}" if inner > 1 else "base + l"
    base = f"(row / {inner}) * {count * inner} + row % {inner}" if inner > 1 else \
        f"row * {count}"
    rest = f"{it} l = threadIdx.x + ({it}){per} * blockDim.x; l < {count}; l += blockDim.x"
    mine = f"part[blockIdx.x * {count} + l]", f"part[(gridDim.x + blockIdx.x) * {count} + l]"
    body = (f"    {BLOCK_SIZE_FREE}\n"
            "    __shared__ float red[1024];\n"
            "    __shared__ bool last;\n"
            f"    float sg[{per}], sb[{per}];  // this thread's columns: sums of dy*xhat, dy\n"
            f"    for (int q = 0; q < {per}; ++q) {{ sg[q] = 0.f; sb[q] = 0.f; }}\n"
            f"    for ({rest}) {{ {mine[0]} = 0.f; {mine[1]} = 0.f; }}  // past the registers\n"
            f"    for ({it} row = blockIdx.x; row < {rows}; row += gridDim.x) {{\n"
            f"        const {it} base = {base};\n"
            f"{_row(count, per, it, at, rest, mine)}"
            "    }\n"
            f"{_fold(count, per, it)}")
    params = (f"{ptr('dx', x_t, False)}, {ptr('dgamma', p_t, False)}, "
              f"{ptr('dbeta', p_t, False)}, float* part, unsigned* done, {ptr('dy', x_t)}, "
              f"{ptr('x', x_t)}, {ptr('gamma', p_t)}, {ptr('mean', s_t)}, {ptr('stdev', s_t)}")
    tag = kernel_name(with_dtype("layer_norm_backward", x_t), params + body)
    src = f"extern \"C\" __global__ void {tag}({params}, long long n) {{\n{body}}}\n"
    return Rendered(tag, src, params.count("*"), helpers=(BLOCK_SUM,) + dtype_helpers(
        x_t, p_t, s_t))


WARP_ROW = 1024  # 32 values per lane at most: a row per warp keeps it in registers


def render_layer_norm_backward_warps(outer: int, count: int, inner: int, parts: int,
                                     x_t: str = "float32", p_t: str = "",
                                     s_t: str = "") -> Rendered:
    """dx and ``parts`` rows of partial dgamma/dbeta with a row per warp: lanes ``W =
    min(blockDim.x, 32)`` (a block of a multiple of 32 threads on the GPU, or of one thread),
    each holding ``ceil(count / 32)`` values. Partial row ``p`` covers rows ``p * warps +
    w + k * parts * warps``; a block takes partial rows grid-stride (one each when launched
    with ``parts`` blocks). Every thread runs the same number of row steps (a warp past the
    last row idles through its last one) so that block-wide steps meet. Parameters: ``dx,
    partials (float, 2 * parts * count), dy, x, gamma, mean, std``."""
    p_t, s_t = p_t or x_t, s_t or x_t
    per, rows = -(-count // 32), outer * inner
    it = index_type(rows * count + 1)
    at = f"base + l * {inner}" if inner > 1 else "base + l"
    base = f"(row / {inner}) * {count * inner} + row % {inner}" if inner > 1 else \
        f"row * {count}"
    rest = f"{it} l = lane + ({it}){per} * W; on && l < {count}; l += W"
    body = (f"    {BLOCK_SIZE_FREE}\n"
            f"    __shared__ float cg[{count}], cb[{count}];  // the partial row's column sums\n"
            "    const unsigned W = blockDim.x < 32u ? blockDim.x : 32u;\n"
            "    const unsigned lane = threadIdx.x % W, warp = threadIdx.x / W;\n"
            "    const unsigned warps = blockDim.x / W;\n"
            f"    float sg[{per}], sb[{per}];  // this lane's columns: sums of dy*xhat, dy\n"
            f"    for (unsigned p = blockIdx.x; p < {parts}u; p += gridDim.x) {{\n"
            f"        for (int q = 0; q < {per}; ++q) {{ sg[q] = 0.f; sb[q] = 0.f; }}\n"
            f"        for ({it} l = threadIdx.x; l < {count}; l += blockDim.x) "
            "{ cg[l] = 0.f; cb[l] = 0.f; }\n"
            "        __syncthreads();\n"
            f"        for ({it} first = ({it})p * warps; first < {rows}; "
            f"first += ({it}){parts} * warps) {{\n"
            f"            const {it} row = first + warp;\n"
            f"            const bool on = row < {rows};\n"
            f"            const {it} base = on ? {base} : 0;\n"
            f"{indent(_warp_row(count, per, it, at, rest), '    ')}"
            "        }\n"
            "        for (unsigned w = 0; w < warps; ++w) {  // warp by warp: a fixed order\n"
            "            __syncthreads();\n"
            "            if (warp != w) continue;\n"
            f"            for (int q = 0; q < {per}; ++q) {{\n"
            f"                const {it} l = lane + ({it})q * W;\n"
            f"                if (l < {count}) {{ cg[l] += sg[q]; cb[l] += sb[q]; }}\n"
            "            }\n"
            "        }\n"
            "        __syncthreads();\n"
            f"        for ({it} l = threadIdx.x; l < {count}; l += blockDim.x) {{\n"
            f"            part[p * {count} + l] = cg[l];\n"
            f"            part[({parts} + p) * {count} + l] = cb[l];\n"
            "        }\n"
            "        __syncthreads();  // cg and cb are the next partial row's\n"
            "    }\n")
    params = (f"{ptr('dx', x_t, False)}, float* part, {ptr('dy', x_t)}, {ptr('x', x_t)}, "
              f"{ptr('gamma', p_t)}, {ptr('mean', s_t)}, {ptr('stdev', s_t)}")
    tag = kernel_name(with_dtype("layer_norm_backward_warps", x_t), params + body)
    src = f"extern \"C\" __global__ void {tag}({params}, long long n) {{\n{body}}}\n"
    return Rendered(tag, src, params.count("*"), helpers=dtype_helpers(x_t, p_t, s_t))


FOLD_WARPS = 8  # a fold block's warps: each adds every 8th partial of its 32 columns


def render_layer_norm_fold(count: int, parts: int, p_t: str = "float32") -> Rendered:
    """dgamma and dbeta from ``parts`` rows of partials (``render_layer_norm_backward_warps``'s
    grid): a block per 32 columns (grid-stride), warp ``w`` adding partials ``w, w + warps,
    ...`` of its lane's column, then the warps' sums added in warp order (deterministic).
    Any block size (one thread: ``W = 1``, one warp). Parameters: ``dgamma, dbeta,
    partials``."""
    body = (f"    {BLOCK_SIZE_FREE}\n"
            "    __shared__ float rg[1024], rb[1024];  // [warp][column of the 32]\n"
            "    const unsigned W = blockDim.x < 32u ? blockDim.x : 32u;\n"
            "    const unsigned lane = threadIdx.x % W, warp = threadIdx.x / W;\n"
            "    const unsigned warps = blockDim.x / W;\n"
            f"    for (unsigned c0 = blockIdx.x * 32u; c0 < {count}u; c0 += gridDim.x * 32u) {{\n"
            "        for (unsigned c = lane; c < 32u; c += W) {\n"
            "            float g = 0.f, b = 0.f;\n"
            f"            if (c0 + c < {count}u) {{\n"
            "                #pragma unroll 4\n"
            f"                for (unsigned k = warp; k < {parts}u; k += warps) {{\n"
            f"                    g += __ldcg(part + k * {count}u + c0 + c);\n"
            f"                    b += __ldcg(part + ({parts}u + k) * {count}u + c0 + c);\n"
            "                }\n"
            "            }\n"
            "            rg[warp * 32u + c] = g; rb[warp * 32u + c] = b;\n"
            "        }\n"
            "        __syncthreads();\n"
            "        if (warp == 0) {\n"
            f"            for (unsigned c = lane; c < 32u && c0 + c < {count}u; c += W) {{\n"
            "                float g = 0.f, b = 0.f;\n"
            "                for (unsigned w = 0; w < warps; ++w) "
            "{ g += rg[w * 32u + c]; b += rb[w * 32u + c]; }\n"
            "                dgamma[c0 + c] = g; dbeta[c0 + c] = b;\n"
            "            }\n"
            "        }\n"
            "        __syncthreads();\n"
            "    }\n")
    params = f"{ptr('dgamma', p_t, False)}, {ptr('dbeta', p_t, False)}, const float* part"
    tag = kernel_name(with_dtype("layer_norm_fold", p_t), params + body)
    src = f"extern \"C\" __global__ void {tag}({params}, long long n) {{\n{body}}}\n"
    return Rendered(tag, src, 3, helpers=dtype_helpers(p_t))


def _warp_row(count: int, per: int, it: str, at: str, rest: str) -> str:
    """C: one warp's row: dx, and the lane's terms of its column sums (values past the
    registers, a one-thread block's, go straight to the block's sums)."""
    return ("        const float mu = on ? sg_ld(mean[row]) : 0.f;\n"
            "        const float rstd = on ? 1.f / sg_ld(stdev[row]) : 0.f;\n"
            + _terms(count, per, it, at, rest, ("lane", "W", "on && "), ("cg[l]", "cb[l]"))
            + "        for (unsigned o = W / 2; o > 0; o >>= 1) {  // every lane gets the sums\n"
            "            a += __shfl_xor_sync(0xffffffffu, a, o);\n"
            "            b += __shfl_xor_sync(0xffffffffu, b, o);\n"
            "        }\n"
            f"        a /= {count}.f; b /= {count}.f;\n"
            + _dx(count, per, it, at, rest, ("lane", "W", "on && ")))


def _row(count: int, per: int, it: str, at: str, rest: str, mine: tuple[str, str]) -> str:
    """C: one row's dx, and its terms of the thread's column sums."""
    return ("        const float mu = sg_ld(mean[row]);\n"
            "        const float rstd = 1.f / sg_ld(stdev[row]);\n"
            + _terms(count, per, it, at, rest, ("threadIdx.x", "blockDim.x", ""), mine)
            + f"        a = sg_block_sum(a, red) / {count}.f;\n"
            f"        b = sg_block_sum(b, red) / {count}.f;\n"
            + _dx(count, per, it, at, rest, ("threadIdx.x", "blockDim.x", "")))


def _terms(count: int, per: int, it: str, at: str, rest: str, walk: tuple[str, str, str],
           into: tuple[str, str]) -> str:
    """C: a row's values in registers (``xh``, ``gy``), its sums ``a`` and ``b`` of this
    thread's share, and the column sums' terms: in registers ``sg``/``sb``, and past the
    registers (``rest``, read again) into ``into``. ``walk``: (first element, step, guard)."""
    first, step, guard = walk
    return (f"        float xh[{per}], gy[{per}];\n"
            "        float a = 0.f, b = 0.f;\n"
            "        #pragma unroll\n"
            f"        for (int q = 0; q < {per}; ++q) {{\n"
            f"            const {it} l = {first} + ({it})q * {step};\n"
            "            xh[q] = 0.f; gy[q] = 0.f;\n"
            f"            if ({guard}l < {count}) {{\n"
            f"                const float d = sg_ld(dy[{at}]);\n"
            f"                xh[q] = (sg_ld(x[{at}]) - mu) * rstd;\n"
            "                gy[q] = d * sg_ld(gamma[l]);\n"
            "                a += gy[q]; b += gy[q] * xh[q];\n"
            "                sg[q] += d * xh[q]; sb[q] += d;\n"
            "            }\n"
            "        }\n"
            f"        for ({rest}) {{  // a row longer than the registers: read again\n"
            f"            const float d = sg_ld(dy[{at}]), h = (sg_ld(x[{at}]) - mu) * rstd;\n"
            "            const float e = d * sg_ld(gamma[l]);\n"
            f"            a += e; b += e * h; {into[0]} += d * h; {into[1]} += d;\n"
            "        }\n")


def _dx(count: int, per: int, it: str, at: str, rest: str, walk: tuple[str, str, str]) -> str:
    """C: the row's dx from its registers and, past them, from x and dy read again."""
    first, step, guard = walk
    return ("        #pragma unroll\n"
            f"        for (int q = 0; q < {per}; ++q) {{\n"
            f"            const {it} l = {first} + ({it})q * {step};\n"
            f"            if ({guard}l < {count}) dx[{at}] = (gy[q] - a - xh[q] * b) * rstd;\n"
            "        }\n"
            f"        for ({rest}) {{\n"
            f"            const float h = (sg_ld(x[{at}]) - mu) * rstd;\n"
            f"            dx[{at}] = (sg_ld(dy[{at}]) * sg_ld(gamma[l]) - a - h * b) * rstd;\n"
            "        }\n")


def _fold(count: int, per: int, it: str) -> str:
    """C: the block's column sums (in its threads' registers) to its partials; the last block
    done adds them all."""
    return ("    #pragma unroll\n"
            f"    for (int q = 0; q < {per}; ++q) {{\n"
            f"        const {it} l = threadIdx.x + ({it})q * blockDim.x;\n"
            f"        if (l < {count}) {{\n"
            f"            part[blockIdx.x * {count} + l] = sg[q];\n"
            f"            part[(gridDim.x + blockIdx.x) * {count} + l] = sb[q];\n"
            "        }\n"
            "    }\n"
            "    __threadfence();  // the partials are visible before this block counts\n"
            "    __syncthreads();\n"
            "    if (threadIdx.x == 0) last = atomicAdd(done, 1u) == gridDim.x - 1;\n"
            "    __syncthreads();\n"
            "    if (!last) return;\n"
            f"    for ({it} l = threadIdx.x; l < {count}; l += blockDim.x) {{\n"
            "        float g = 0.f, b = 0.f;\n"
            "        for (unsigned k = 0; k < gridDim.x; ++k) {\n"
            f"            g += __ldcg(part + k * {count} + l);\n"
            f"            b += __ldcg(part + (gridDim.x + k) * {count} + l);\n"
            "        }\n"
            "        dgamma[l] = g; dbeta[l] = b;\n"
            "    }\n"
            "    if (threadIdx.x == 0) *done = 0u;  // ready for the next launch\n")
