"""Kernel templates of the random family (``lowering_random``): Philox-4x32-10 and Dropout's mask.

Philox (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11) maps a 128-bit
counter and a 64-bit key to 128 random bits with ten rounds of multiply/xor. Element ``i`` draws
its bits from counter ``i / 4`` only, so the mask does not depend on launch geometry or thread
order.
"""
from __future__ import annotations

from .codegen import Rendered, c_float, dtype_helpers, kernel_name, kernel_source, ptr

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
    # Not the shared grid-stride loop: each thread takes four elements per trip.
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
    src = kernel_source(tag, f"{ptr('mask', dtype, False)}, "
                        "const unsigned long long* __restrict__ key, long long n", body)
    return Rendered(tag, src, 2, helpers=dtype_helpers(dtype) + ((PHILOX_NAME, PHILOX_SOURCE),))
