"""C template of ``lowering_row_norm``: statistics of rows and what they normalise, one kernel.

A row is one combination of the kept axes of an op's :class:`~symgraph.compiler.ops.rowstats.RowView`
(LayerNorm's row of ``C`` values, GroupNorm's group of a sample...). One block takes a row at a
time (grid-stride over rows): each thread loads up to ``PER`` of the row's values into
registers (element ``l`` at ``threadIdx.x + q * blockDim.x``), so a row of up to ``PER *
blockDim.x`` values (4096 with 256 threads: a transformer's hidden size) is read from memory
once; the rest of a longer row is read again at each pass. Sums are in float and meet in shared
memory through a halving fold (any block size: the host tests run one thread, and several); the
variance is the mean of squared differences from the mean (two passes over the registers, no
cancellation). Then thread 0 stores the row's statistics and every thread its outputs.

Kinds: ``standardize`` (``y = (x - mean) / sqrt(var + eps) * gamma + beta``; statistics mean
and std = sqrt(var + eps), or mean and var), ``l2`` (``norm = sqrt(sum x^2 + eps)``, ``y = x /
norm``) and ``moments`` (mean and var, no y). Element addresses come from the view's kept and
reduced axes with their strides baked in, so rows need not be contiguous (LayerNorm over a
middle axis, ``moments`` over axes (0, 2, 3)).
"""
from __future__ import annotations

from math import prod

from ...compiler.ops.rowstats import RowView
from .codegen import Rendered, c_float, dtype_helpers, index_type, kernel_name, ptr, with_dtype
from .kernels_conv_pool import BLOCK_SIZE_FREE

MAX_PER = 16  # values a thread keeps in registers (16 x 256 threads: rows of 4096)

BLOCK_SUM = ("sg_block_sum", r"""
// The sum of every thread's v, returned to all threads of the block: a halving fold in shared
// memory ``red`` (blockDim.x floats), for any block size up to 1024, in a fixed order.
__device__ __forceinline__ float sg_block_sum(float v, float* red) {
    red[threadIdx.x] = v;
    __syncthreads();
    for (unsigned h = blockDim.x; h > 1;) {
        const unsigned half = (h + 1) / 2;
        if (threadIdx.x < h - half) red[threadIdx.x] += red[threadIdx.x + half];
        h = half;
        __syncthreads();
    }
    const float r = red[0];
    __syncthreads();
    return r;
}
""")

Dims = list[tuple[int, int]]  # (size, stride) per axis, outermost first


def block_for(view: RowView) -> int:
    """Threads of a row's block: about four values each, a multiple of 32, at most 256."""
    quarter = -(-view.count // 4)
    return min(256, max(32, -(-quarter // 32) * 32))


def _split(view: RowView) -> tuple[Dims, Dims]:
    """(kept, reduced) axes of the view as (size, stride) pairs, axes of size 1 left out."""
    kept: Dims = []
    red: Dims = []
    stride = 1
    for d, r in reversed(list(zip(view.dims, view.reduced))):
        if d != 1:
            (red if r else kept).insert(0, (d, stride))
        stride *= d
    return kept, red


def _offset(var: str, dims: Dims) -> str:
    """C expression: the memory offset of element number ``var`` (row-major) of ``dims``."""
    terms, div = [], 1
    for k in range(len(dims) - 1, -1, -1):
        size, stride = dims[k]
        c = var if div == 1 else f"({var} / {div})"
        c = f"({c} % {size})" if k > 0 else c
        terms.insert(0, c if stride == 1 else f"{c} * {stride}")
        div *= size
    return " + ".join(terms) or "0"


def _coordinate(view: RowView, axis: int) -> str:
    """C expression: the coordinate along view ``axis`` of element ``l`` of row ``row``."""
    var = "l" if view.reduced[axis] else "row"
    after = prod(d for i, d in enumerate(view.dims)
                 if i > axis and view.reduced[i] == view.reduced[axis])
    c = var if after == 1 else f"({var} / {after})"
    return f"({c} % {view.dims[axis]})"


def _passes(it: str, count: int, at: str, per: int, use: str, ind: str) -> str:
    """C: ``use`` (statements over ``v``, the value of element ``l``) for the thread's
    elements: the register copies ``r[q]`` first, then the rest of the row read again."""
    body = "".join(f"{ind}        {s}\n" for s in use.splitlines())
    rest = "".join(f"{ind}    {s}\n" for s in use.splitlines())
    return (f"{ind}#pragma unroll\n"
            f"{ind}for (int q = 0; q < {per}; ++q) {{\n"
            f"{ind}    const {it} l = threadIdx.x + ({it})q * blockDim.x;\n"
            f"{ind}    if (l < {count}) {{\n"
            f"{ind}        const float v = r[q];\n{body}"
            f"{ind}    }}\n"
            f"{ind}}}\n"
            f"{ind}for ({it} l = threadIdx.x + ({it}){per} * blockDim.x; l < {count};"
            f" l += blockDim.x) {{\n"
            f"{ind}    const float v = sg_ld(x[{at}]);\n{rest}"
            f"{ind}}}\n")


def _finish(kind: str, second: str, eps: float, count: int, ind: str) -> tuple[str, str]:
    """(C statements after the first sum ``a``: the statistics and thread 0's stores; the
    output formula of ``v`` or "" for none)."""
    e = c_float(eps)
    if kind == "l2":
        return (f"{ind}const float norm = sqrtf(a + {e});\n"
                f"{ind}const float inv = 1.f / norm;\n"
                f"{ind}if (threadIdx.x == 0) s1[row] = norm;\n"), "v * inv"
    stats = (f"{ind}const float mu = a / {count}.f;\n"
             f"{ind}float b = 0.f;\n"
             f"{{second_pass}}"
             f"{ind}b = sg_block_sum(b, red);\n"
             f"{ind}const float var = b / {count}.f;\n")
    if kind == "moments":
        return stats + (f"{ind}if (threadIdx.x == 0) {{ s1[row] = mu; s2[row] = var; }}\n"), ""
    out2 = "sqrtf(var + " + e + ")" if second == "std" else "var"
    return stats + (f"{ind}const float rstd = 1.f / sqrtf(var + {e});\n"
                    f"{ind}if (threadIdx.x == 0) {{ s1[row] = mu; s2[row] = {out2}; }}\n"), \
        "(v - mu) * rstd * sg_ld(gamma[P]) + sg_ld(beta[P])"


def _params(kind: str, x_t: str, s_t: str, p_t: str) -> str:
    ys = "" if kind == "moments" else f"{ptr('y', x_t, False)}, "
    stats = ptr("s1", s_t, False) + ("" if kind == "l2" else ", " + ptr("s2", s_t, False))
    gb = f", {ptr('gamma', p_t)}, {ptr('beta', p_t)}" if kind == "standardize" else ""
    return f"{ys}{stats}, {ptr('x', x_t)}{gb}"


def render_row_norm(view: RowView, kind: str, eps: float = 0.0, second: str = "std",
                    x_t: str = "float32", s_t: str = "", p_t: str = "") -> Rendered:
    """The kernel of one row-statistics op (module docstring) over ``view``: data and y of
    ``x_t``, statistics of ``s_t``, gamma and beta of ``p_t`` (both default ``x_t``).
    Parameters: ``[y,] s1[, s2], x[, gamma, beta]``, then ``n`` (unused)."""
    s_t, p_t = s_t or x_t, p_t or x_t
    kept, red = _split(view)
    count, rows = view.count, view.rows
    it = index_type(prod(view.dims) + 1)
    per = min(MAX_PER, -(-count // block_for(view)))
    at = f"base + {_offset('l', red)}"
    first = "a += v * v;" if kind == "l2" else "a += v;"
    ind = " " * 8
    stats, formula = _finish(kind, second, eps, count, ind)
    stats = stats.replace("{second_pass}", _passes(it, count, at, per,
                                                   "const float d = v - mu;\nb += d * d;", ind))
    if view.param_axis is not None:
        formula = formula.replace("[P]", f"[{_coordinate(view, view.param_axis)}]")
    write = _passes(it, count, at, per, f"y[{at}] = {formula};", ind) if formula else ""
    body = (f"    {BLOCK_SIZE_FREE}\n"
            "    __shared__ float red[1024];\n"
            f"    for ({it} row = blockIdx.x; row < {rows}; row += gridDim.x) {{\n"
            f"        const {it} base = {_offset('row', kept)};\n"
            f"        float r[{per}];\n"
            "        float a = 0.f;\n"
            "        #pragma unroll\n"
            f"        for (int q = 0; q < {per}; ++q) {{\n"
            f"            const {it} l = threadIdx.x + ({it})q * blockDim.x;\n"
            f"            r[q] = l < {count} ? sg_ld(x[{at}]) : 0.f;\n"
            "        }\n"
            f"{_passes(it, count, at, per, first, ind)}"
            f"{ind}a = sg_block_sum(a, red);\n"
            f"{stats}{write}"
            "    }\n")
    params = _params(kind, x_t, s_t, p_t)
    tag = kernel_name(with_dtype(f"row_norm_{kind}", x_t), params + body)
    src = f"extern \"C\" __global__ void {tag}({params}, long long n) {{\n{body}}}\n"
    return Rendered(tag, src, params.count("*"),
                    helpers=(BLOCK_SUM,) + dtype_helpers(x_t, s_t, p_t))
