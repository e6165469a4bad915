"""The row kernel of softmax's gradient (``_softmax_backward``): dx = y * (dy - sum(dy * y))
along the last axis, a warp a row. One read of the row to sum (a warp shuffle reduction in
float, whatever the storage dtype), one to write; this replaces a sum kernel and a broadcast
kernel, and the (rows, 1) sum never goes through memory."""
from __future__ import annotations

from .codegen import Rendered, dtype_helpers, kernel_name, ptr, with_dtype


def render_softmax_backward(stem: str, rows: int, k: int, y_t: str = "float32",
                            dy_t: str = "", dx_t: str = "") -> Rendered:
    """Kernel ``(dx, y, dy, n)`` over ``rows`` rows of ``k`` contiguous entries; buffers of
    any float dtype (``dy_t``, ``dx_t`` default to ``y_t``), accumulation in float."""
    dy_t, dx_t = dy_t or y_t, dx_t or y_t
    tag = kernel_name(with_dtype(stem, y_t), f"softmax_backward,{rows},{k},{y_t},{dy_t},{dx_t}")
    body = (
        "    const long long warp = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;\n"
        "    const int lane = threadIdx.x & 31;\n"
        f"    if (warp >= {rows}LL) return;\n"
        f"    const long long base = warp * {k}LL;\n"
        "    float s = 0.f;\n"
        f"    for (int c = lane; c < {k}; c += 32)\n"
        "        s += sg_ld(y[base + c]) * sg_ld(dy[base + c]);\n"
        "    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);\n"
        f"    for (int c = lane; c < {k}; c += 32)\n"
        "        dx[base + c] = sg_ld(y[base + c]) * (sg_ld(dy[base + c]) - s);\n")
    src = (f"extern \"C\" __global__ void {tag}({ptr('dx', dx_t, False)}, {ptr('y', y_t)}, "
           f"{ptr('dy', dy_t)}, long long n) {{\n{body}}}\n")
    return Rendered(tag, src, 3, helpers=dtype_helpers(y_t, dy_t, dx_t))
