"""Kernel templates of ``lowering_views``: one grid-stride copy between a contiguous array and a
strided view of another, the view's shape, element strides and start offset baked in as
constants (it moves elements of any float type, no arithmetic); several such gathers, each
converting, as one kernel (``_multi_transpose_cast``); and UpSampling's nearest repeat of one
or several inputs."""
from __future__ import annotations

from math import prod
from typing import Optional

from ...core.dtypes import as_dtype
from .codegen import (GRID_STRIDE_LOOP, Rendered, ctype, dtype_helpers, grid_stride_kernel,
                      kernel_name, kernel_source, ptr)
from .kernels_layout import converted

VECTOR_BYTES = 16  # a thread moves one uint4 where the view's innermost run allows


def view_offset(shape: tuple, strides: tuple, offset: int, index: str = "i",
                indent: str = "        ", narrow: bool = False) -> str:
    """C statements setting ``o`` to the element offset of the view's element ``index``
    (row-major over ``shape``; the view's element ``strides`` from its start ``offset``).
    ``narrow``: in 32-bit unsigned arithmetic (see :func:`fits_32_bits`)."""
    c, lit = ("unsigned", "u") if narrow else ("long long", "LL")
    idx = [f"{indent}{c} r = {index}, o = {offset}{lit};"]
    for d in range(len(shape) - 1, -1, -1):
        idx.append(f"{indent}o += (r % {shape[d]}{lit}) * {strides[d]}{lit}; "
                   f"r /= {shape[d]}{lit};")
    return "\n".join(idx) + "\n"


def fits_32_bits(shape: tuple, strides: tuple, offset: int) -> bool:
    """Whether every index and offset of the view is a non-negative int below 2^31: divisions
    by the baked-in sizes then take a few 32-bit instructions instead of 64-bit sequences
    several times as long (``codegen.index_type``)."""
    last = offset + sum((d - 1) * s for d, s in zip(shape, strides))
    return min(strides, default=0) >= 0 and offset >= 0 and max(prod(shape), last) < 2 ** 31


def is_contiguous(shape: tuple, strides: tuple, offset: int) -> bool:
    """Whether the view is its base's elements in order (element k at offset k)."""
    step = 1
    for d, st in zip(reversed(shape), reversed(strides)):
        if d != 1 and st != step:
            return False
        step *= d
    return offset == 0


def vector_view(shape: tuple, strides: tuple, offset: int, itemsize: int
                ) -> Optional[tuple[tuple, tuple, int]]:
    """The view counted in ``VECTOR_BYTES`` vectors (shape, strides, offset), when its
    innermost axis is contiguous and every run, stride and the offset are whole vectors; None
    otherwise. (An axis of one element has no stride that matters.)"""
    v = VECTOR_BYTES // itemsize
    if v <= 1 or not shape or shape[-1] % v or offset % v or shape[-1] > 1 and strides[-1] != 1:
        return None
    outer = [0 if d == 1 else st for d, st in zip(shape[:-1], strides[:-1])]
    if any(st % v for st in outer):
        return None
    return shape[:-1] + (shape[-1] // v,), tuple(st // v for st in outer) + (1,), offset // v


def render_strided(shape: tuple, strides: tuple, offset: int, scatter: bool,
                   dtype: str = "float32", src_dtype: str = "") -> Rendered:
    """``gather``: y[i] = x[view(i)]; ``scatter``: y[view(i)] = x[i], where ``view(i)`` is the
    element offset of the view's i-th element (row-major over ``shape``). ``src_dtype`` (a
    gather only; default ``dtype``): x's dtype, converted as ``Cast`` converts. Where the view
    allows (:func:`vector_view`) and both pointers are 16-byte aligned (checked at run time),
    a thread moves 16 bytes at once (a transpose that keeps the last axis: heads of attention);
    index arithmetic is 32-bit where it fits."""
    src_dtype = src_dtype or dtype
    assert not scatter or src_dtype == dtype, "a scatter moves elements of one dtype"
    read = "x[o]" if src_dtype == dtype else converted(src_dtype, dtype, "x[o]")
    move = "y[o] = x[i];" if scatter else f"y[i] = {read};"
    body = view_offset(shape, strides, offset, narrow=fits_32_bits(shape, strides, offset)) \
        + f"        {move}\n"
    key = f"{shape}{strides}{offset}{dtype}" + (src_dtype if src_dtype != dtype else "")
    params = f"{ptr('y', dtype, False)}, {ptr('x', src_dtype)}"
    helpers = dtype_helpers(dtype, src_dtype)
    vec = None if src_dtype != dtype else vector_view(shape, strides, offset,
                                                      as_dtype(dtype).itemsize)
    if vec is None:
        return grid_stride_kernel("scatter" if scatter else "gather", key, params, body, 2,
                                  helpers=helpers)
    vmove = "yv[o] = xv[i];" if scatter else "yv[i] = xv[o];"
    loop = GRID_STRIDE_LOOP.replace("i < n;", f"i < {prod(vec[0])}LL;")
    tag = kernel_name("scatter_v" if scatter else "gather_v", key + params)
    src = kernel_source(tag, f"{params}, long long n", (
        "    if (((unsigned long long)y | (unsigned long long)x) % 16u == 0u) {\n"
        "        uint4* yv = (uint4*)y;\n"
        "        const uint4* xv = (const uint4*)x;\n"
        f"    {loop}{view_offset(*vec, indent=' ' * 12, narrow=fits_32_bits(*vec))}"
        f"            {vmove}\n        }}\n        return;\n    }}\n"
        f"{GRID_STRIDE_LOOP}{body}    }}\n"))
    return Rendered(tag, src, 2, helpers=helpers)


Segment = tuple[tuple, tuple, int, str, str]  # (shape, strides, offset, dtype, src_dtype)


def _ranges(segments: list[Segment], unit: int) -> list[tuple[int, int, int]]:
    """(segment, first, end) of each non-empty segment in the kernel's range, counted in
    ``unit`` elements, the largest segments first: most elements take the first branches."""
    out, start = [], 0
    for j in sorted(range(len(segments)), key=lambda j: -prod(segments[j][0])):
        n = prod(segments[j][0]) // unit
        if n:
            out.append((j, start, start + n))
            start += n
    return out


def vector_lanes(segments: list[Segment]) -> int:
    """Elements per thread of a vectorised multi-gather: a 16-byte pack of the widest dtype,
    when every segment is contiguous (a plain cast: AMP's weights that need no transpose) and
    a whole number of packs; 0 otherwise."""
    widest = max((as_dtype(t).itemsize for s in segments for t in s[3:]), default=VECTOR_BYTES)
    lanes = VECTOR_BYTES // widest
    fits = all(is_contiguous(*s[:3]) and prod(s[0]) % lanes == 0 for s in segments)
    return lanes if lanes > 1 and fits else 0


def _vector_chain(segments: list[Segment], lanes: int) -> str:
    """The body of the vectorised loop over packs ``u``: pack ``u - first_j`` of segment j."""
    chain = []
    for j, first, end in _ranges(segments, lanes):
        dtype, src = segments[j][3], segments[j][4]
        a_t, b_t = f"sg_pack<{ctype(src)}, {lanes}>", f"sg_pack<{ctype(dtype)}, {lanes}>"
        read = "a.v[q]" if src == dtype else converted(src, dtype, "a.v[q]")
        chain.append(
            f"            {'} else if' if chain else 'if'} (u < {end}LL) {{\n"
            f"                const long long k = u - {first}LL;\n"
            f"                const {a_t} a = reinterpret_cast<const {a_t}*>(x{j})[k];\n"
            f"                {b_t} b;\n"
            f"#pragma unroll\n"
            f"                for (int q = 0; q < {lanes}; ++q) b.v[q] = {read};\n"
            f"                reinterpret_cast<{b_t}*>(y{j})[k] = b;\n")
    return "".join(chain) + ("            }\n" if chain else "")


def render_multi_gather(segments: list[Segment]) -> Rendered:
    """One kernel for several converting gathers: ``y<j>[k] = x<j>[view_j(k)]`` converted from
    segment j's ``src_dtype`` to its ``dtype`` (as :func:`render_strided`'s gather). Element
    ``i`` of the kernel's range is element ``i - start_j`` of the segment whose cumulative
    range holds it (a chain of comparisons with the ends, baked in, the largest segments
    first: most elements take the first branches); its index arithmetic is 32-bit where the
    segment fits, and none where the view is contiguous (a plain cast). When every segment is
    a plain cast of whole 16-byte packs (:func:`vector_lanes`) and every pointer is 16-byte
    aligned (checked at run time), a thread converts a pack at a time: a memory-bound kernel
    then moves 16-byte words instead of 2- and 4-byte ones. Parameters: every output, then
    every input, in the order given."""
    chain = []
    for j, start, end in _ranges(segments, 1):
        shape, strides, offset, dtype, src = segments[j]
        read = f"x{j}[o]" if src == dtype else converted(src, dtype, f"x{j}[o]")
        narrow = fits_32_bits(shape, strides, offset)
        test = f"{'} else if' if chain else 'if'} (i < {end}LL) {{"
        k = (f"const unsigned k = (unsigned)(i - {start}LL);" if narrow
             else f"const long long k = i - {start}LL;")
        index = ("            const long long o = k;\n" if is_contiguous(shape, strides, offset)
                 else view_offset(shape, strides, offset, "k", " " * 12, narrow))
        chain.append(f"        {test}\n            {k}\n{index}            y{j}[k] = {read};\n")
    body = "".join(chain) + ("        }\n" if chain else "")
    params = ", ".join([ptr(f"y{j}", s[3], False) for j, s in enumerate(segments)]
                       + [ptr(f"x{j}", s[4]) for j, s in enumerate(segments)])
    helpers = dtype_helpers(*(t for s in segments for t in s[3:]))
    lanes = vector_lanes(segments)
    if not lanes:
        # named by a hash of the body itself: equal names mean equal code (module_source dedupes)
        return grid_stride_kernel("multi_gather", body, params, body, 2 * len(segments),
                                  helpers=helpers)
    pointers = " | ".join(f"(unsigned long long){p}{j}" for p in "yx"
                          for j in range(len(segments)))
    loop = (f"for (long long u = (long long)blockIdx.x * blockDim.x + threadIdx.x; "
            f"u < n / {lanes}LL; u += (long long)blockDim.x * gridDim.x) {{\n")
    vector = (f"    if ((({pointers}) % 16u) == 0u) {{\n        {loop}"
              f"{_vector_chain(segments, lanes)}        }}\n        return;\n    }}\n")
    tag = kernel_name("multi_gather_v", vector + body + params)
    src = kernel_source(tag, f"{params}, long long n", f"{vector}{GRID_STRIDE_LOOP}{body}    }}\n")
    return Rendered(tag, src, 2 * len(segments), helpers=helpers)


def render_upsampling(out: tuple, inputs: list, concat: bool, dtype: str = "float32") -> Rendered:
    """UpSampling (nearest) into ``out`` = (N, C, OH, OW), one thread per output element, from
    ``inputs``: (channels, height, width, scale) of each (N, C_k, H_k, W_k) input, pixel
    (oh, ow) reading (oh / scale, ow / scale). ``concat``: input k fills its own run of
    channels; else every input has C channels and they are summed, in float."""
    n_c, oh, ow = out[1:]
    idx = (f"        const long long w = i % {ow}LL, h = (i / {ow}LL) % {oh}LL;\n"
           f"        const long long c = (i / {oh * ow}LL) % {n_c}LL, n = i / {n_c * oh * ow}LL;\n")
    reads, c0 = [], 0
    for k, (ck, hk, wk, s) in enumerate(inputs):
        ch = f"(c - {c0}LL)" if concat else "c"
        reads.append((c0 + ck, f"x{k}[((n * {ck}LL + {ch}) * {hk}LL + h / {s}LL) * {wk}LL"
                               f" + w / {s}LL]"))
        c0 += ck if concat else 0
    if concat:
        body = "".join(f"        {'if' if k == 0 else 'else if'} (c < {end}LL) y[i] = {read};\n"
                       for k, (end, read) in enumerate(reads))
    else:
        body = ("        float acc = 0.f;\n"
                + "".join(f"        acc += sg_ld({read});\n" for _, read in reads)
                + "        y[i] = acc;\n")
    params = ", ".join([ptr("y", dtype, False)] + [ptr(f"x{k}", dtype)
                                                   for k in range(len(inputs))])
    return grid_stride_kernel("upsampling", f"{out}{inputs}{concat}{dtype}", params, idx + body,
                              1 + len(inputs))
