"""The row kernel of softmax's gradient (``_softmax_backward``): dx = y * (dy - sum(dy * y))
along the last axis, a warp a row (``log``: log_softmax's, dx = dy - exp(y) * sum(dy)). One
read of the row to sum (a warp shuffle reduction in float, whatever the storage dtype) and one
write; this replaces a sum kernel and a broadcast kernel, and the (rows, 1) sum never goes
through memory. Rows of up to ``REGISTER_ROW`` entries stay in registers between the sum and
the write (attention's rows: the sequence length); longer ones are read again."""
from __future__ import annotations

from .codegen import Rendered, dtype_helpers, kernel_name, ptr, with_dtype

REGISTER_ROW = 256  # 8 values of y and of dy per lane


def _body(rows: int, k: int, log: bool) -> str:
    """Sum then write; from registers when the row fits, else by reading it again."""
    head = (
        "    const long long warp = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;\n"
        "    const int lane = threadIdx.x & 31;\n"
        f"    if (warp >= {rows}LL) return;\n"
        f"    const long long base = warp * {k}LL;\n"
        "    float s = 0.f;\n")
    reduce = "    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);\n"
    term, grad = ("{g}", "{g} - expf({y}) * s") if log else ("{y} * {g}", "{y} * ({g} - s)")
    if k > REGISTER_ROW:
        y, g = "sg_ld(y[base + c])", "sg_ld(dy[base + c])"
        return (head +
                f"    for (int c = lane; c < {k}; c += 32)\n"
                f"        s += {term.format(y=y, g=g)};\n" + reduce +
                f"    for (int c = lane; c < {k}; c += 32)\n"
                f"        dx[base + c] = {grad.format(y=y, g=g)};\n")
    per = (k + 31) // 32
    return (head +
            f"    float yv[{per}], gv[{per}];\n"
            "#pragma unroll\n"
            f"    for (int j = 0; j < {per}; ++j) {{\n"
            f"        const int c = lane + 32 * j;\n"
            f"        yv[j] = c < {k} ? sg_ld(y[base + c]) : 0.f;\n"
            f"        gv[j] = c < {k} ? sg_ld(dy[base + c]) : 0.f;\n"
            f"        s += {term.format(y='yv[j]', g='gv[j]')};\n"
            "    }\n" + reduce +
            "#pragma unroll\n"
            f"    for (int j = 0; j < {per}; ++j) {{\n"
            f"        const int c = lane + 32 * j;\n"
            f"        if (c < {k}) dx[base + c] = {grad.format(y='yv[j]', g='gv[j]')};\n"
            "    }\n")


def render_softmax_backward(stem: str, rows: int, k: int, y_t: str = "float32",
                            dy_t: str = "", dx_t: str = "", log: bool = False) -> Rendered:
    """Kernel ``(dx, y, dy, n)`` over ``rows`` rows of ``k`` contiguous entries; buffers of
    any float dtype (``dy_t``, ``dx_t`` default to ``y_t``), accumulation in float; ``log``:
    y is log_softmax's output."""
    dy_t, dx_t = dy_t or y_t, dx_t or y_t
    tag = kernel_name(with_dtype(stem, y_t),
                      f"softmax_backward,{rows},{k},{y_t},{dy_t},{dx_t},{log}")
    src = (f"extern \"C\" __global__ void {tag}({ptr('dx', dx_t, False)}, {ptr('y', y_t)}, "
           f"{ptr('dy', dy_t)}, long long n) {{\n{_body(rows, k, log)}}}\n")
    return Rendered(tag, src, 3, helpers=dtype_helpers(y_t, dy_t, dx_t))
