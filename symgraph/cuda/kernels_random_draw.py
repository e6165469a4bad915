"""Kernel template of the samplers' GPU lowering (``lowering_random_draw``): uniform and normal
draws from the Philox-4x32-10 generator of ``kernels_random``.

Element ``i`` takes the 128 bits of counter ``(i, 0, SALT, 0)``, so its value depends only on
the step's key and ``i``, never on the launch geometry. A uniform uses the top 24 bits of one
word (exact floats in [0, 1)); a normal is Box-Muller of two such uniforms, the first moved
to (0, 1] so that its logarithm is finite.
"""
from __future__ import annotations

from typing import Sequence, Union

from .codegen import Rendered, c_float, dtype_helpers, kernel_name, kernel_source, ptr
from .kernels_random import PHILOX_NAME, PHILOX_SOURCE

SALT = 0x5367  # keeps the samplers' streams apart from Dropout's counters (word z = 0)

# law: the value of one element from uniforms u1 in (0, 1], u2 in [0, 1) and parameters a, b
LAWS = {
    "uniform": "a + (b - a) * (u1 - 5.9604645e-08f)",
    "normal": "a + b * sqrtf(-2.f * logf(u1)) * cospif(2.f * u2)",
}

Param = Union[float, int]  # a literal (attribute) or the index of a parameter array


def render_random_draw(law: str, n: int, inner: int, params: Sequence[Param],
                       dtype: str = "float32") -> Rendered:
    """out[i] = a draw of ``law`` whose parameters are ``params``: a float (an attribute) or
    an int k (array k, read at ``i / inner``: ``inner`` samples per parameter element)."""
    arrays = [p for p in params if isinstance(p, int)]
    tag = kernel_name(f"random_{law}", f"{n},{inner},{params},{dtype}")
    names = []
    for p in params:
        names.append(f"(float)p{p}[i / {inner}LL]" if isinstance(p, int) else c_float(p))
    body = (
        "    const uint2 k = make_uint2((unsigned int)key[0], (unsigned int)(key[0] >> 32));\n"
        "    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; "
        "i += (long long)blockDim.x * gridDim.x) {\n"
        f"        const uint4 bits = {PHILOX_NAME}("
        f"make_uint4((unsigned int)i, (unsigned int)(i >> 32), {SALT}u, 0u), k);\n"
        "        const float u1 = (float)((bits.x >> 8) + 1u) * (1.f / 16777216.f);\n"
        "        const float u2 = (float)(bits.y >> 8) * (1.f / 16777216.f);\n"
        f"        const float a = {names[0]}, b = {names[1]};\n"
        f"        out[i] = {LAWS[law]};\n"
        "    }\n")
    sig = ", ".join([ptr("out", dtype, False)] + [ptr(f"p{k}", dtype) for k in arrays]
                    + ["const unsigned long long* __restrict__ key", "long long n"])
    return Rendered(tag, kernel_source(tag, sig, body), 2 + len(arrays),
                    helpers=dtype_helpers(dtype) + ((PHILOX_NAME, PHILOX_SOURCE),))
