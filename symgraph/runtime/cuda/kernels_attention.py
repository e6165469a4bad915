"""The row kernel of softmax's gradient (``_softmax_backward``): dx = y * (dy - sum(dy * y))
along the last axis (``log``: log_softmax's, dx = dy - exp(y) * sum(dy)). One
read of the row to sum (a warp shuffle reduction in float, whatever the storage dtype) and one
write; this replaces a sum kernel and a broadcast kernel, and the (rows, 1) sum never goes
through memory. Rows of up to ``REGISTER_ROW`` entries stay in registers between the sum and
the write (attention's rows: the sequence length), a warp a row; longer ones (a language
model's vocabulary) take a block a row and are read again."""
from __future__ import annotations

from .codegen import Rendered, dtype_helpers, kernel_name, ptr, with_dtype

REGISTER_ROW = 256  # 8 values of y and of dy per lane


def _body(rows: int, k: int, log: bool) -> str:
    """Sum then write. Rows of up to ``REGISTER_ROW``: a warp a row, held in registers; longer
    rows: a block a row (any multiple of 32 threads), read again to write."""
    term, grad = ("{g}", "{g} - expf({y}) * s") if log else ("{y} * {g}", "{y} * ({g} - s)")
    reduce = "    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);\n"
    if k > REGISTER_ROW:
        # a warp a row ran 50,257-entry rows at 8 rows in 117 us, against 16 us for a sum
        # kernel and a broadcast kernel: too few warps to keep the memory busy
        y, g = "sg_ld(y[base + c])", "sg_ld(dy[base + c])"
        return (f"    const long long base = (long long)blockIdx.x * {k}LL;\n"
                "    __shared__ float part[32];\n"
                "    float s = 0.f;\n"
                f"    for (int c = threadIdx.x; c < {k}; c += blockDim.x)\n"
                f"        s += {term.format(y=y, g=g)};\n" + reduce +
                "    if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = s;\n"
                "    __syncthreads();\n"
                "    s = 0.f;\n"
                "    for (int w = 0; w < (int)(blockDim.x >> 5); ++w) s += part[w];\n"
                f"    for (int c = threadIdx.x; c < {k}; c += blockDim.x)\n"
                f"        dx[base + c] = {grad.format(y=y, g=g)};\n")
    head = (
        "    const long long warp = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;\n"
        "    const int lane = threadIdx.x & 31;\n"
        f"    if (warp >= {rows}LL) return;\n"
        f"    const long long base = warp * {k}LL;\n"
        "    float s = 0.f;\n")
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
    y is log_softmax's output. Launched with a warp a row, or for ``k > REGISTER_ROW`` a block
    a row (:func:`launch_shape`)."""
    dy_t, dx_t = dy_t or y_t, dx_t or y_t
    tag = kernel_name(with_dtype(stem, y_t),
                      f"softmax_backward,{rows},{k},{y_t},{dy_t},{dx_t},{log}")
    src = (f"extern \"C\" __global__ void {tag}({ptr('dx', dx_t, False)}, {ptr('y', y_t)}, "
           f"{ptr('dy', dy_t)}, long long n) {{\n{_body(rows, k, log)}}}\n")
    return Rendered(tag, src, 3, helpers=dtype_helpers(y_t, dy_t, dx_t))


def launch_shape(rows: int, k: int, sm_count: int, threads: int) -> tuple[int, int]:
    """(grid, block) of :func:`render_softmax_backward`'s kernel: warps of ``threads``-thread
    blocks, one per row; or one block per row, of 1024 threads when the rows are too few to
    give each multiprocessor two blocks."""
    if k > REGISTER_ROW:
        return rows, 1024 if rows < 2 * sm_count else 256
    return max(1, (rows * 32 + threads - 1) // threads), threads
