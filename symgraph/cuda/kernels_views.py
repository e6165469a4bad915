"""Kernel template of the strided-view family (``lowering_views``): one grid-stride copy
between a contiguous array and a strided view of another, the view's shape, element strides and
start offset baked in as constants. It moves elements of any float type (no arithmetic)."""
from __future__ import annotations

from .codegen import Rendered, dtype_helpers, grid_stride_kernel, ptr


def render_strided(shape: tuple, strides: tuple, offset: int, scatter: bool,
                   dtype: str = "float32") -> Rendered:
    """``gather``: y[i] = x[view(i)]; ``scatter``: y[view(i)] = x[i], where ``view(i)`` is the
    element offset of the view's i-th element (row-major over ``shape``)."""
    idx = [f"        long long r = i, o = {offset}LL;"]
    for d in range(len(shape) - 1, -1, -1):
        idx.append(f"        o += (r % {shape[d]}LL) * {strides[d]}LL; r /= {shape[d]}LL;")
    move = "y[o] = x[i];" if scatter else "y[i] = x[o];"
    body = "\n".join(idx) + f"\n        {move}\n"
    return grid_stride_kernel("scatter" if scatter else "gather",
                              f"{shape}{strides}{offset}{dtype}",
                              f"{ptr('y', dtype, False)}, {ptr('x', dtype)}", body, 2,
                              helpers=dtype_helpers(dtype))
