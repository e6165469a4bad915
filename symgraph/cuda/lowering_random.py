"""Random numbers on the GPU: a Philox-4x32-10 counter-based generator and Dropout's lowering.

Philox (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11) maps a 128-bit
counter and a 64-bit key to 128 random bits with ten rounds of multiply/xor. Element ``i`` draws
its bits from counter ``i / 4`` only, so the mask does not depend on launch geometry or thread
order. The key is a program buffer (``StepCtx.new_key``) that the backend refills from
``RunCtx.rng`` (``sg.random``) before every run: a replayed CUDA graph reads new keys and draws
new masks, and reseeding ``sg.random`` repeats them. The GPU mask is not numpy's mask (another
generator), only its distribution is the same.
"""
from __future__ import annotations

from math import prod

from ..expr import inp
from .codegen import THREADS, Rendered, c_float, dtype_helpers, grid_for, kernel_name, ptr
from .actions import Copy, Fill, Kernel, StepCtx, Switch, family
from .lowering_elementwise import elementwise_actions
PHILOX_NAME = "sg_philox4x32_10"
# The published constants (Random123): two multipliers, two Weyl increments of the key.
PHILOX_SOURCE = f"""\
// Philox-4x32-10: 128 random bits from a 128-bit counter and a 64-bit key.
__host__ __device__ __forceinline__ uint4 {PHILOX_NAME}(uint4 ctr, uint2 key) {{
    for (int round = 0; round < 10; ++round) {{
        const unsigned long long p0 = 0xD2511F53ull * ctr.x, p1 = 0xCD9E8D57ull * ctr.z;
        ctr = make_uint4((unsigned int)(p1 >> 32) ^ ctr.y ^ key.x, (unsigned int)p1,
                         (unsigned int)(p0 >> 32) ^ ctr.w ^ key.y, (unsigned int)p0);
        key.x += 0x9E3779B9u;
        key.y += 0xBB67AE85u;
    }}
    return ctr;
}}
"""


def render_dropout_mask(n: int, p: float, dtype: str = "float32") -> Rendered:
    """mask[i] = 1/(1-p) where element i's uniform draw is >= p, else 0 (all 0 when p = 1).

    A thread takes four elements per Philox call; uniforms use the top 24 bits of each word, so
    they are exact floats in [0, 1)."""
    scale = 1.0 / (1.0 - p) if p < 1.0 else 0.0
    tag = kernel_name("dropout_mask", f"{n},{p},{dtype}")
    body = (
        "    const uint2 k = make_uint2((unsigned int)key[0], (unsigned int)(key[0] >> 32));\n"
        "    for (long long g = (long long)blockIdx.x * blockDim.x + threadIdx.x; 4 * g < n; "
        "g += (long long)blockDim.x * gridDim.x) {\n"
        f"        const uint4 bits = {PHILOX_NAME}("
        "make_uint4((unsigned int)g, (unsigned int)(g >> 32), 0u, 0u), k);\n"
        "        const unsigned int word[4] = {bits.x, bits.y, bits.z, bits.w};\n"
        "        for (int j = 0; j < 4 && 4 * g + j < n; ++j) {\n"
        "            const float uniform = (float)(word[j] >> 8) * (1.f / 16777216.f);\n"
        f"            mask[4 * g + j] = uniform >= {c_float(p)} ? {c_float(scale)} : 0.f;\n"
        "        }\n"
        "    }\n")
    src = (f"extern \"C\" __global__ void {tag}({ptr('mask', dtype, False)}, "
           f"const unsigned long long* __restrict__ key, long long n) {{\n{body}}}\n")
    return Rendered(tag, src, 2, helpers=dtype_helpers(dtype) + ((PHILOX_NAME, PHILOX_SOURCE),))


@family("dropout")
def _dropout(ctx: StepCtx, p: dict) -> list:
    """Outputs (y, mask): in training (or ``mode='always'``) a fresh mask and y = x * mask, the
    mask broadcast along ``axes``; otherwise y = x and a mask of ones (the numpy reference)."""
    a, x, m = ctx.attrs, ctx.in_shapes[0], ctx.out_shapes[1]
    y, mask = ctx.outs
    infer = [Copy(y, ctx.ins[0], ctx.dtype_of(y).itemsize * prod(x)),
             Fill(mask, 1.0, prod(m), ctx.dt(mask))]
    if a["p"] == 0.0 or not prod(x):
        return infer
    n = prod(m)
    train = [Kernel(render_dropout_mask(n, a["p"], ctx.dt(mask)),
                    grid_for(-(-n // 4), ctx.sm_count),
                    THREADS, (mask, ctx.new_key()), n)]
    train += elementwise_actions(ctx, "dropout_apply", [inp(0) * inp(1)], [x, m],
                                 [ctx.ins[0], mask], x, [y])
    return train if a["mode"] == "always" else [Switch(tuple(train), tuple(infer))]
