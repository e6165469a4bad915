"""C templates of ``lowering_histogram.py``. ``histogram_setup`` (one block, any size) finds
the bounds of the equal bins (the range given, or the data's min and max, widened by 0.5 each
way when equal, as numpy), writes the edges (``j * (high - low) / bins + low`` in double, the
last one ``high``, as ``np.linspace``) and zeroes the counts; ``histogram_count`` (one thread
per element) puts each element in its bin: for equal bins from its position, moved by one
where the stored edges say otherwise (numpy's correction), for given edges by a binary search,
the last bin holding its right edge; then one 64-bit atomic add."""
from __future__ import annotations

from typing import Optional

from .codegen import (C_TYPES, NARROW_C, NARROW_HELPER, THREADS, Rendered, grid_stride_kernel,
                      kernel_name, kernel_source)
from .kernels_conv_pool import BLOCK_SIZE_FREE
from .kernels_index_nd import stored


def _ld(dtype: str, element: str) -> str:
    """C of ``element`` read as a double."""
    return f"(double)sg_ld({element})" if C_TYPES[dtype] in NARROW_C else f"(double){element}"


def _params(dtype: str) -> str:
    t = C_TYPES[dtype]
    return (f"{t}* __restrict__ edges, long long* __restrict__ counts, "
            f"double* __restrict__ bounds, const {t}* __restrict__ x, "
            f"const {t}* __restrict__ bins")


def render_histogram_setup(bins: int, given: bool, span: Optional[tuple[float, float]],
                           dtype: str) -> Rendered:
    """Bounds, edges and zeroed counts of ``bins`` bins: from the ``given`` edges input, from
    ``span`` (low, high), or from the data's min and max (``span`` None)."""
    if given:
        bounds = (f"        bounds[0] = {_ld(dtype, 'bins[0]')};\n"
                  f"        bounds[1] = {_ld(dtype, f'bins[{bins}]')};\n")
        edge = "bins[j]"
    else:
        low, high = ("lo_s[0]", "hi_s[0]") if span is None else map(repr, map(float, span))
        bounds = (f"        double a = {low}, b = {high};\n"
                  "        if (a > b) { a = 0.0; b = 1.0; }  /* no element: numpy's (0, 1) */\n"
                  "        if (a == b) { a -= 0.5; b += 0.5; }\n"
                  "        bounds[0] = a; bounds[1] = b;\n")
        edge = stored(dtype, f"j == {bins}LL ? bounds[1] : (double)j * ((bounds[1] - "
                             f"bounds[0]) / {bins}.0) + bounds[0]")
    scan = ""
    if span is None and not given:  # the data's min and max: a block reduction
        scan = ("    double lo = 0.0, hi = -1.0;  /* lo > hi: no element yet */\n"
                "    for (long long i = threadIdx.x; i < n; i += blockDim.x) {\n"
                f"        const double v = {_ld(dtype, 'x[i]')};\n"
                "        if (v != v) continue;\n"
                "        if (lo > hi) { lo = v; hi = v; }\n"
                "        else { lo = fmin(lo, v); hi = fmax(hi, v); }\n"
                "    }\n"
                "    lo_s[threadIdx.x] = lo; hi_s[threadIdx.x] = hi;\n"
                "    __syncthreads();\n"
                "    for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {\n"
                "        const unsigned int t = threadIdx.x;\n"
                "        if (t < s && lo_s[t + s] <= hi_s[t + s]) {\n"
                "            const bool none = lo_s[t] > hi_s[t];\n"
                "            lo_s[t] = none ? lo_s[t + s] : fmin(lo_s[t], lo_s[t + s]);\n"
                "            hi_s[t] = none ? hi_s[t + s] : fmax(hi_s[t], hi_s[t + s]);\n"
                "        }\n"
                "        __syncthreads();\n"
                "    }\n")
    body = (f"    {BLOCK_SIZE_FREE}\n"
            f"    __shared__ double lo_s[{THREADS}], hi_s[{THREADS}];  /* the launch's block */\n"
            + scan +
            f"    if (threadIdx.x == 0) {{\n{bounds}    }}\n"
            "    __syncthreads();\n"
            f"    for (long long j = threadIdx.x; j <= {bins}LL; j += blockDim.x) "
            f"edges[j] = {edge};\n"
            f"    for (long long j = threadIdx.x; j < {bins}LL; j += blockDim.x) counts[j] = 0;\n")
    name = kernel_name("histogram_setup", f"{bins},{given},{span},{dtype}")
    helpers = (NARROW_HELPER,) if C_TYPES[dtype] in NARROW_C else ()
    return Rendered(name, kernel_source(name, _params(dtype) + ", long long n", body), 5,
                    helpers=helpers)


def render_histogram_count(bins: int, given: bool, dtype: str) -> Rendered:
    """counts[bin of x[i]] += 1 for each element inside the bounds (NaN never is)."""
    if given:
        find = ("        long long l = 0, r = " f"{bins}LL;\n"
                "        while (r - l > 1) {\n"
                "            const long long m = (l + r) / 2;\n"
                f"            if ({_ld(dtype, 'edges[m]')} <= v) l = m; else r = m;\n"
                "        }\n"
                "        const long long k = l;\n")
    else:
        find = (f"        long long k = (long long)((v - a) / (b - a) * {bins}.0);\n"
                f"        if (k >= {bins}LL) k = {bins - 1}LL;\n"
                "        if (k < 0) k = 0;\n"
                f"        if (v < {_ld(dtype, 'edges[k]')}) --k;\n"
                f"        else if (k != {bins - 1}LL && v >= {_ld(dtype, 'edges[k + 1]')}) ++k;\n")
    body = (f"        const double v = {_ld(dtype, 'x[i]')}, a = bounds[0], b = bounds[1];\n"
            "        if (!(v >= a && v <= b)) continue;\n" + find +
            "        atomicAdd((unsigned long long*)&counts[k], 1ULL);\n")
    return grid_stride_kernel("histogram_count", f"{bins},{given}", _params(dtype), body,
                              n_ptr=5)
