"""Kernel templates of ``lowering_dense`` where no library call fits: softmax along an axis,
SoftmaxOutput's backward, one-block sums (counts of valid entries, a batch's negative
log-likelihood).

Shapes are baked in as constants (one kernel per shape, all in the one module of a compiled
graph); every kernel takes pointers then ``long long n``. Buffers are of any float dtype (numpy
names ``x_t``, ``y_t``: float32 by default); every kernel reads through ``sg_ld`` and
accumulates in float.
"""
from __future__ import annotations

from typing import Sequence

from ...core.expr import Expr
from .codegen import (Rendered, c_float, dtype_helpers, expr_to_c, grid_stride_kernel,
                      index_load, kernel_name, ptr, with_dtype)


def render_softmax(stem: str, outer: int, k: int, inner: int, log: bool,
                   scale: float = 1.0, dtype: str = "float32", y_t: str = "",
                   len_t: str = "") -> Rendered:
    """Softmax (or log-softmax) of ``scale * x`` over the middle axis of an (outer, k, inner)
    array of ``dtype`` (output ``y_t``, default the same), a warp a row, in float. Three passes
    over the row (max, sum of exponentials, write). With ``len_t`` (the dtype of a ``length``
    array of shape (outer, inner), a float or integer type) only the first ``length[row]``
    entries take part and the rest are written 0 (softmax's ``use_length``; a length <= 0
    gives a row of zeros, as the numpy reference)."""
    y_t = y_t or dtype
    tag = kernel_name(with_dtype(stem, dtype),
                      f"{outer},{k},{inner},{log},{scale},{dtype},{y_t},{len_t}")
    sx = "" if scale == 1.0 else f" * {c_float(scale)}"
    write = "(v - m) - logf(s)" if log else "expf(v - m) * inv"
    end = str(k)
    length = ""
    if len_t:
        _, value = index_load("len[warp]", len_t)
        length = (f"    const long long want = (long long){value};\n"
                  f"    const int L = want < 0 ? 0 : (want > {k} ? {k} : (int)want);\n")
        end, write = "L", f"c < L ? {write} : 0.f"
    body = (
        "    const long long warp = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;\n"
        "    const int lane = threadIdx.x & 31;\n"
        f"    if (warp >= {outer * inner}LL) return;\n"
        f"    const long long base = (warp / {inner}LL) * {k * inner}LL + warp % {inner}LL;\n"
        f"{length}"
        f"    float m = {c_float(float('-inf'))};\n"
        f"    for (int c = lane; c < {end}; c += 32)\n"
        f"        m = fmaxf(m, sg_ld(x[base + c * {inner}LL]){sx});\n"
        "    for (int s = 16; s > 0; s >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, s));\n"
        "    float s = 0.f;\n"
        f"    for (int c = lane; c < {end}; c += 32)\n"
        f"        s += expf(sg_ld(x[base + c * {inner}LL]){sx} - m);\n"
        "    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);\n"
        "    const float inv = 1.f / s;\n"
        f"    for (int c = lane; c < {k}; c += 32) {{\n"
        f"        const float v = sg_ld(x[base + c * {inner}LL]){sx};\n"
        f"        y[base + c * {inner}LL] = {write};\n"
        "    }\n")
    lens = f", {ptr('len', len_t)}" if len_t else ""
    src = (f"extern \"C\" __global__ void {tag}({ptr('y', y_t, False)}, {ptr('x', dtype)}"
           f"{lens}, long long n) {{\n{body}}}\n")
    return Rendered(tag, src, 3 if len_t else 2,
                    helpers=dtype_helpers(dtype, y_t, *([len_t] if len_t else [])))


def render_block_sum(stem: str, key: str, params: str, rows: int, term: str,
                     n_ptr: int = 2, helper: str = "", dtypes: Sequence[str] = ()) -> Rendered:
    """One block sums ``term`` (C over row index ``r``) for ``r < rows`` into ``y[0]``: small
    loss-sized sums (counts of valid labels, a batch's summed loss), launched with one block.
    ``TAG`` in ``term`` / ``helper`` (``__device__`` functions) becomes the kernel's name;
    ``dtypes``: those of the buffers in ``params`` (for their headers)."""
    tag = kernel_name(stem, f"{key},{rows},{term},{helper},{params}")
    body = (
        "    __shared__ float part[32];\n"
        "    float acc = 0.f;\n"
        f"    for (long long r = threadIdx.x; r < {rows}LL; r += blockDim.x) acc += {term};\n"
        "    for (int s = 16; s > 0; s >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, s);\n"
        "    if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = acc;\n"
        "    __syncthreads();\n"
        "    if (threadIdx.x == 0) {\n"
        "        float t = 0.f;\n"
        "        for (int w = 0; w < (int)(blockDim.x >> 5); ++w) t += part[w];\n"
        "        y[0] = t;\n"
        "    }\n")
    src = f"extern \"C\" __global__ void {tag}({params}, long long n) {{\n{body}}}\n"
    return Rendered(tag, (helper + src).replace("TAG", tag), n_ptr,
                    helpers=dtype_helpers(*dtypes))


def render_count(stem: str, rows: int, predicate: Expr, x_t: str = "float32") -> Rendered:
    """``y[0]`` (float32) = how many ``x[r]`` (of ``x_t``) satisfy ``predicate`` (a formula of
    input 0), as a float."""
    lines, (test,) = expr_to_c([predicate], ["v"])
    body = "".join(f"    {ln}\n" for ln in lines)
    helper = (f"__device__ __forceinline__ float TAG_counts(float v) {{\n{body}"
              f"    return ({test}) != 0.f ? 1.f : 0.f;\n}}\n")
    return render_block_sum(stem, "", f"float* __restrict__ y, {ptr('x', x_t)}", rows,
                            "TAG_counts(sg_ld(x[r]))", helper=helper, dtypes=(x_t,))


def render_nll_sum(stem: str, rows: int, k: int, y_t: str = "float32", logp_t: str = "float32",
                   label_t: str = "float32") -> Rendered:
    """``y[0]`` = -sum over rows of ``logp[r, label[r]]`` (labels truncated, clipped to [0, k))."""
    pick = f"(long long)fminf(fmaxf(sg_ld(label[r]), 0.f), {k - 1}.f)"
    return render_block_sum(stem, f"{k}", f"{ptr('y', y_t, False)}, {ptr('logp', logp_t)}, "
                            f"{ptr('label', label_t)}", rows,
                            f"-sg_ld(logp[r * {k}LL + {pick}])", 3,
                            dtypes=(y_t, logp_t, label_t))


def render_softmax_output_backward(stem: str, outer: int, k: int, inner: int, scale: float,
                                   use_ignore: bool, ignore_label: float, alpha: float,
                                   divide_by_count: bool, dtype: str = "float32",
                                   label_t: str = "float32") -> Rendered:
    """grad = (prob - target(label)) * valid * scale over an (outer, k, inner) prob array.

    ``target`` is the (optionally label-smoothed) one-hot of the integer label of the element's
    row; with ``divide_by_count`` the scale is further divided by ``max(1, *count)`` (a pointer
    to the number of valid labels, computed by :func:`render_count`, float32). Gradient and
    probabilities are of ``dtype``, labels of ``label_t``.
    """
    key = (f"{outer},{k},{inner},{scale},{use_ignore},{ignore_label},{alpha},"
           f"{divide_by_count},{dtype},{label_t}")
    on, off = (1.0 - alpha, alpha / (k - 1)) if alpha and k > 1 else (1.0, 0.0)
    valid = f"(lab != {c_float(ignore_label)})" if use_ignore else "true"
    sc = (f"({c_float(scale)} / fmaxf(1.f, count[0]))" if divide_by_count else c_float(scale))
    body = (
        f"        const long long c = (i / {inner}LL) % {k}LL;\n"
        f"        const long long row = (i / {k * inner}LL) * {inner}LL + i % {inner}LL;\n"
        "        const float lab = sg_ld(label[row]);\n"
        # A label outside [0, k) matches no c: no target (MXNet 1.9.1), not a clipped one.
        "        const long long idx = (long long)lab;\n"
        f"        const float t = (c == idx) ? {c_float(on)} : {c_float(off)};\n"
        f"        y[i] = {valid} ? (sg_ld(p[i]) - t) * {sc} : 0.f;\n")
    params = (f"{ptr('y', dtype, False)}, {ptr('p', dtype)}, {ptr('label', label_t)}, "
              "const float* __restrict__ count")
    return grid_stride_kernel(with_dtype(stem, dtype), key, params, body, 4,
                              helpers=dtype_helpers(dtype, label_t))
