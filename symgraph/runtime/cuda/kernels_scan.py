"""C templates of ``lowering_scan.py``: cumsum's scan (one thread per line along the axis,
summing in float for float types and in 64-bit integers for integer types) and allclose's
test (each element not close clears the one-byte result, set to 1 before the launch).
"""
from __future__ import annotations

from .codegen import C_TYPES, NARROW_C, Rendered, c_float, grid_stride_kernel, ptr


def _load(dtype: str, element: str) -> str:
    """C of ``element`` read as a value to sum: floats through ``sg_ld``, integers as they are."""
    if C_TYPES[dtype] in ("float",) + NARROW_C:
        return f"sg_ld({element})"
    return f"(long long){element}"


def render_scan(n: int, inner: int, x_t: str, y_t: str) -> Rendered:
    """y[o, r, in] = sum of x[o, 0..r, in] over data viewed as (outer, n, inner); one thread
    per (o, in), sequential along the axis (the sum's order is numpy's)."""
    floats = C_TYPES[y_t] in ("float",) + NARROW_C
    acc_t = "float" if floats else "long long"
    body = (f"        const long long base = (i / {inner}LL) * {n * inner}LL + i % {inner}LL;\n"
            f"        {acc_t} acc = 0;\n"
            f"        for (long long r = 0; r < {n}LL; ++r) {{\n"
            f"            acc += ({acc_t}){_load(x_t, f'x[base + r * {inner}LL]')};\n"
            f"            y[base + r * {inner}LL] = ({'float' if floats else C_TYPES[y_t]})acc;\n"
            "        }\n")
    return grid_stride_kernel("cumsum", f"{n},{inner},{x_t},{y_t}",
                              f"{ptr('y', y_t, False)}, {ptr('x', x_t)}", body)


def render_allclose(rtol: float, atol: float, equal_nan: bool, dtype: str) -> Rendered:
    """ok[0] = 0 where |a - b| > atol + rtol * |b| (numpy's test; equal infinities are close,
    NaNs are when ``equal_nan``); ok[0] is 1 before the launch."""
    nan = "true" if equal_nan else "false"
    body = ("        const float u = sg_ld(a[i]), v = sg_ld(b[i]);\n"
            "        bool close;\n"
            f"        if (isnan(u) || isnan(v)) close = {nan} && isnan(u) && isnan(v);\n"
            "        else if (isinf(u) || isinf(v)) close = u == v;\n"
            f"        else close = fabsf(u - v) <= {c_float(atol)} + {c_float(rtol)} * "
            "fabsf(v);\n"
            "        if (!close) ok[0] = 0;\n")
    return grid_stride_kernel("allclose", f"{rtol},{atol},{equal_nan}",
                              f"{ptr('ok', 'uint8', False, False)}, {ptr('a', dtype)}, "
                              f"{ptr('b', dtype)}", body, n_ptr=3)
