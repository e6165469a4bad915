"""C templates of ``lowering_bn_column``: BatchNorm over a channel-last (rows, channels) matrix,
one kernel per direction that also normalises (or gives dx): column sums whose consecutive
threads read consecutive channels, a grid-wide barrier, and the elementwise part. The statistics'
C statements are ``kernels_norm``'s (the same formulas as the channels-first kernels)."""
from __future__ import annotations

from typing import Optional

from ...core.expr import Expr
from .codegen import (Rendered, c_float, dtype_helpers, expr_to_c, index_type, kernel_name, ptr,
                      with_dtype)
from .kernels_conv_pool import BLOCK_SIZE_FREE
from .kernels_norm import stats_values, stats_writes

# The barrier needs every block resident at once: the kernels are launched cooperatively
# (``Kernel.cooperative``, ``cuda/cooperative.py``), so the driver schedules a grid only when all
# of its blocks fit, beside whatever else runs. ``__launch_bounds__`` makes the compiler fit
# COOP_BLOCKS_PER_SM blocks of COOP_THREADS on each SM, and the lowering launches at most one
# block per SM, well within what a cooperative launch accepts.

COOP_THREADS = 512
COOP_BLOCKS_PER_SM = 2

GRID_SYNC = ("sg_grid_sync", r"""
// Every block of the launch waits here until all have arrived. One word of program state
// counts: block 0 adds 2^31 - (gridDim.x - 1), every other block 1, so the word's top bit flips
// once all have arrived and its low bits are back where they were: nothing to reset, and the
// next launch finds the word as this one left it. The block's stores are made visible to the
// grid by thread 0's fence after the block's own barrier (fences are cumulative).
__device__ __forceinline__ void sg_grid_sync(unsigned int* bar) {
    __syncthreads();
    if (threadIdx.x == 0) {
        const unsigned int add = blockIdx.x == 0 ? 0x80000000u - (gridDim.x - 1u) : 1u;
        __threadfence();
        const unsigned int old = atomicAdd(bar, add);
        volatile unsigned int* word = bar;
        while (((old ^ *word) & 0x80000000u) == 0u) {}
        __threadfence();
    }
    __syncthreads();
}
""")


def _fold(ind: str) -> str:
    """C statements: every thread's ``a`` and ``b`` into ``ra``/``rb``, the row lanes of each
    column halved into line 0 (``ra[threadIdx.x]`` of line 0 holds the column's sums)."""
    return (f"{ind}ra[threadIdx.x] = a;\n"
            f"{ind}rb[threadIdx.x] = b;\n"
            f"{ind}__syncthreads();\n"
            f"{ind}for (int h = lines; h > 1;) {{  // fold the upper half of the row lanes\n"
            f"{ind}    const int half = (h + 1) / 2;\n"
            f"{ind}    if (line < h - half) {{\n"
            f"{ind}        ra[threadIdx.x] += ra[threadIdx.x + half * lanes];\n"
            f"{ind}        rb[threadIdx.x] += rb[threadIdx.x + half * lanes];\n"
            f"{ind}    }}\n"
            f"{ind}    h = half;\n"
            f"{ind}    __syncthreads();\n"
            f"{ind}}}\n")


BATCH = 8  # loop trips whose loads are issued together


def _batched(t: str, first: str, end: str, step: str, loads: dict[str, str], use: str,
             ind: str, var: str = "at") -> str:
    """C loop over ``var = first, first + step, ... < end``, BATCH trips at a time: first every
    trip's ``loads`` (name -> float C expression of ``var``; a trip past the end reads the
    batch's first element instead, unused), then ``use`` (statements reading those names) for
    the trips before the end. All of a batch's loads are in flight together, also in the last,
    partial batch (a thread here has a few trips, 15 rows of a 16-channel layer; an ``unroll``
    pragma left the remainder to a loop that waited for each load in turn)."""
    decl = "".join(f"{ind}    float {k}_[{BATCH}];\n" for k in loads)
    fetch = "".join(f"{ind}        {k}_[q] = {e};\n" for k, e in loads.items())
    names = "".join(f"{ind}            const float {k} = {k}_[q];\n" for k in loads)
    body = "".join(f"{ind}            {line.strip()}\n" for line in use.splitlines())
    return (f"{ind}for ({t} {var}0 = {first}; {var}0 < {end}; {var}0 += {BATCH} * {step}) {{\n"
            f"{decl}"
            f"{ind}    #pragma unroll\n"
            f"{ind}    for (int q = 0; q < {BATCH}; ++q) {{\n"
            f"{ind}        const {t} {var} = {var}0 + q * {step} < {end} ? {var}0 + q * {step}"
            f" : {var}0;\n"
            f"{fetch}"
            f"{ind}    }}\n"
            f"{ind}    #pragma unroll\n"
            f"{ind}    for (int q = 0; q < {BATCH}; ++q) {{\n"
            f"{ind}        const {t} {var} = {var}0 + q * {step};\n"
            f"{ind}        if ({var} < {end}) {{\n"
            f"{names}{body}"
            f"{ind}        }}\n"
            f"{ind}    }}\n"
            f"{ind}}}\n")


Step = tuple[dict[str, str], str]  # (loads, use) of one element: see _batched


def _unit_rows(rows: int, cols: int, chunks: int, it: str) -> str:
    """C statements: unit ``u``'s column ``c``, chunk ``k``, its rows' element offsets (``first``
    by ``step`` to ``end``, of index type ``it``) and whether this thread has a column (``mine``)."""
    clen = -(-rows // chunks)
    return (f"        const long long c = u / {chunks}LL * lanes + lane, k = u % {chunks}LL;\n"
            f"        const long long r0 = k * {clen}LL;\n"
            f"        const long long r1 = r0 + {clen}LL < {rows}LL ? r0 + {clen}LL : {rows}LL;\n"
            f"        const {it} step = ({it})lines * {cols}u, end = ({it})r1 * {cols}u;\n"
            f"        const {it} first = ({it})(r0 + line) * {cols}u + ({it})c;\n"
            f"        const bool mine = c < {cols} && line < lines;\n")


def _coop_kernel(tag: str, params: str, rows: int, cols: int, chunks: int, setup: str,
                 accumulate: Step, coef: str, apply: Step) -> str:
    """The frame of both kernels. Unit ``u`` is (column tile ``u / chunks``, row chunk ``k = u
    % chunks``). Phase one: per unit, two float sums per column ``c``, ``a`` and ``b``, of
    ``accumulate`` over the chunk's rows (``at``: the element's offset; ``setup`` first, per
    column), into ``part``. Grid barrier. Phase two, per unit of the block: when its tile
    changes, the partials of every chunk summed by column into ``a`` and ``b``, and ``coef`` in
    line 0 (it stores the column's coefficients ``cf[j][lane]`` and, where ``k == 0``: once per
    column, the column's outputs); then ``apply`` per element of the unit's rows."""
    # 32-bit offsets where they fit (fewer registers), past the end by a batch of row lanes
    it = index_type((rows + BATCH * COOP_THREADS) * cols)
    partials = ({"pa": f"__ldcg(part + j * {2 * cols}LL + c)",
                 "pb": f"__ldcg(part + j * {2 * cols}LL + {cols}LL + c)"}, "a += pa; b += pb;")
    rows_of_unit = _unit_rows(rows, cols, chunks, it)
    body = (
        f"    {BLOCK_SIZE_FREE}\n"
        "    __shared__ float ra[1024], rb[1024], cf[4][1024];\n"
        f"    const int lanes = blockDim.x < {cols} ? (int)blockDim.x : {cols};\n"
        "    const int lines = (int)blockDim.x / lanes;  // row lanes\n"
        "    const int lane = (int)threadIdx.x % lanes, line = (int)threadIdx.x / lanes;\n"
        f"    const long long units = ({cols}LL + lanes - 1) / lanes * {chunks}LL;\n"
        "    for (long long u = blockIdx.x; u < units; u += gridDim.x) {\n"
        f"{rows_of_unit}"
        "        float a = 0.f, b = 0.f;\n"
        "        if (mine) {\n"
        f"{setup}"
        f"{_batched(it, 'first', 'end', 'step', *accumulate, ' ' * 12)}"
        "        }\n"
        f"{_fold(' ' * 8)}"
        f"        if (line == 0 && c < {cols}) {{\n"
        f"            part[k * {2 * cols}LL + c] = ra[threadIdx.x];\n"
        f"            part[k * {2 * cols}LL + {cols}LL + c] = rb[threadIdx.x];\n"
        "        }\n"
        "    }\n"
        "    sg_grid_sync(bar);\n"
        "    long long tile = -1;\n"
        "    for (long long u = blockIdx.x; u < units; u += gridDim.x) {\n"
        f"{rows_of_unit}"
        f"        if (u / {chunks}LL != tile) {{  // (the same for the whole block)\n"
        f"            tile = u / {chunks}LL;\n"
        "            float a = 0.f, b = 0.f;\n"
        "            if (mine) {  // (__ldcg: from L2, where the other SMs' partials are)\n"
        f"{_batched('int', 'line', str(chunks), 'lines', *partials, ' ' * 16, 'j')}"
        "            }\n"
        f"{_fold(' ' * 12)}"
        f"            if (line == 0 && c < {cols}) {{\n"
        "                a = ra[threadIdx.x];\n"
        "                b = rb[threadIdx.x];\n"
        f"{coef}"
        "            }\n"
        "            __syncthreads();\n"
        "        }\n"
        "        if (mine) {\n"
        f"{_batched(it, 'first', 'end', 'step', *apply, ' ' * 12)}"
        "        }\n"
        "    }\n")
    return (f"extern \"C\" __global__ void __launch_bounds__({COOP_THREADS}, "
            f"{COOP_BLOCKS_PER_SM}) {tag}({params}, long long n) {{\n{body}}}\n")


def render_bn_column_train(rows: int, cols: int, chunks: int, eps: float, momentum: float,
                           fix_gamma: bool, x_t: str = "float32", s_t: str = "float32",
                           p_t: str = "float32", epilogue: Optional[Expr] = None,
                           n_epi: int = 0) -> Rendered:
    """BatchNorm's training forward over a (rows, cols) channel-last matrix, one kernel:
    per column the mean and biased variance (one pass of ``d = x - x[0][c]`` and ``d * d``: the
    shift of ``render_bn_stats``), the moving statistics, and ``y = (x - mean) * gamma /
    sqrt(var + eps) + beta``. Parameters ``y, mean, var, new_mm, new_mv, part, bar, x, gamma,
    beta, mm, mv``: data of ``x_t``, statistics of ``s_t``, gamma and beta of ``p_t``;
    ``part``: 2 * chunks * cols floats of scratch, ``bar``: a word of program state.
    ``epilogue``: a fused group's formula stored instead of y (input 0: y, input ``k``: the
    element of operand ``epi<k>``, ``n_epi`` of them after ``mv``, of ``x_t``)."""
    ind = " " * 16
    gamma = "1.f" if fix_gamma else "sg_ld(gamma[c])"
    coef = (f"{ind}const float s = sg_ld(x[c]);\n"
            + stats_values(rows, "s", ind)
            + f"{ind}cf[0][lane] = mu;\n"
            f"{ind}cf[1][lane] = {gamma} / sqrtf(v + {c_float(eps)});\n"
            f"{ind}cf[2][lane] = sg_ld(beta[c]);\n"
            f"{ind}if (k == 0) {{\n"
            + stats_writes(momentum, "c", ind + "    ")
            + f"{ind}}}\n")
    value = "(xv - cf[0][lane]) * cf[1][lane] + cf[2][lane]"
    loads = {"xv": "sg_ld(x[at])"} | {f"e{k}": f"sg_ld(epi{k}[at])" for k in range(1, n_epi + 1)}
    if epilogue is None:
        apply = (loads, f"y[at] = {value};")
    else:  # the operands loaded with x, in the same batch
        lines, (result,) = expr_to_c([epilogue], ["head"] + [f"e{k}" for k in range(1, n_epi + 1)])
        apply = (loads, "\n".join([f"const float head = {value};", *lines, f"y[at] = {result};"]))
    params = (f"{ptr('y', x_t, False)}, {ptr('mean', s_t, False)}, {ptr('var', s_t, False)}, "
              f"{ptr('new_mm', s_t, False)}, {ptr('new_mv', s_t, False)}, "
              "float* __restrict__ part, unsigned int* bar, "
              f"{ptr('x', x_t)}, {ptr('gamma', p_t)}, {ptr('beta', p_t)}, {ptr('mm', s_t)}, "
              f"{ptr('mv', s_t)}" + "".join(f", {ptr(f'epi{k}', x_t)}" for k in range(1, n_epi + 1)))
    tag = kernel_name(with_dtype("bn_cols_train", x_t),
                      f"{rows},{cols},{chunks},{eps},{momentum},{fix_gamma},{x_t},{s_t},{p_t}"
                      + (f",{epilogue!r},{n_epi}" if epilogue is not None else ""))
    src = _coop_kernel(tag, params, rows, cols, chunks,
                       f"{ind[4:]}const float s = sg_ld(x[c]);\n",
                       ({"xv": "sg_ld(x[at])"}, "const float d = xv - s;\na += d;\nb += d * d;"),
                       coef, apply)
    return Rendered(tag, src, params.count("*"),
                    helpers=(GRID_SYNC,) + dtype_helpers(x_t, s_t, p_t))


def render_bn_column_backward(rows: int, cols: int, chunks: int, eps: float, fix_gamma: bool,
                              global_stats: bool, x_t: str = "float32", s_t: str = "float32",
                              p_t: str = "float32", g_t: str = "float32") -> Rendered:
    """BatchNorm's backward over a (rows, cols) channel-last matrix, one kernel: per column
    ``dbeta = sum dy`` and ``dgamma = sum dy * xhat`` (``xhat = (x - mean) / sqrt(var +
    eps)``), and ``dx = (dy - dbeta / rows - xhat * dgamma / rows) * gamma / sqrt(var + eps)``
    (``global_stats``: ``dy * gamma / sqrt(var + eps)``, the statistics being constants).
    Parameters ``dx, dgamma, dbeta, part, bar, dy, x, gamma, mean, var``: data of ``x_t``,
    statistics of ``s_t``, gamma of ``p_t``, its gradients of ``g_t``."""
    ind = " " * 16
    scale = "rstd" if fix_gamma else "sg_ld(gamma[c]) * rstd"
    center = ("0.f", "0.f") if global_stats else (f"a * {c_float(1.0 / rows)}",
                                                  f"rstd * b * {c_float(1.0 / rows)}")
    coef = (f"{ind}const float rstd = 1.f / sqrtf(sg_ld(var[c]) + {c_float(eps)});\n"
            f"{ind}cf[0][lane] = sg_ld(mean[c]);\n"
            f"{ind}cf[1][lane] = {scale};\n"
            f"{ind}cf[2][lane] = {center[0]};\n"
            f"{ind}cf[3][lane] = {center[1]};\n"
            f"{ind}if (k == 0) {{\n"
            f"{ind}    dbeta[c] = a;\n"
            f"{ind}    dgamma[c] = b;\n"
            f"{ind}}}\n")
    loads = {"g": "sg_ld(dy[at])", "xv": "sg_ld(x[at])"}
    apply = (loads, "dx[at] = (g - cf[2][lane] - (xv - cf[0][lane]) * cf[3][lane]) * cf[1][lane];")
    setup = (f"{ind[4:]}const float mu = sg_ld(mean[c]);\n"  # 1/sqrt: dx's formula
             f"{ind[4:]}const float rstd = 1.f / sqrtf(sg_ld(var[c]) + {c_float(eps)});\n")
    accumulate = (loads, "a += g;\nb += g * (xv - mu) * rstd;")
    params = (f"{ptr('dx', x_t, False)}, {ptr('dgamma', g_t, False)}, "
              f"{ptr('dbeta', g_t, False)}, float* __restrict__ part, unsigned int* bar, "
              f"{ptr('dy', x_t)}, {ptr('x', x_t)}, {ptr('gamma', p_t)}, {ptr('mean', s_t)}, "
              f"{ptr('var', s_t)}")
    tag = kernel_name(with_dtype("bn_cols_backward", x_t),
                      f"{rows},{cols},{chunks},{eps},{fix_gamma},{global_stats},"
                      f"{x_t},{s_t},{p_t},{g_t}")
    src = _coop_kernel(tag, params, rows, cols, chunks, setup, accumulate, coef, apply)
    return Rendered(tag, src, params.count("*"),
                    helpers=(GRID_SYNC,) + dtype_helpers(x_t, s_t, p_t, g_t))
