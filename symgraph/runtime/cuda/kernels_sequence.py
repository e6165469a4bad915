"""C templates of the sequence ops' kernels (rendered for ``lowering_sequence.py``):
SequenceMask, SequenceReverse, SequenceLast and SequenceLast's gradient scatter. One thread per
output element in the shared grid-stride loop; data is read as (T, N, inner) (``axis`` 0) or
(N, T, inner) (``axis`` 1), lengths as floats of any float type or integers as they are,
truncated and clipped as ``ops/sequence.lengths`` does.
"""
from __future__ import annotations

from .codegen import Rendered, c_float, grid_stride_kernel, index_load, ptr, with_dtype

# kind -> (the output element's statement, whether the loop runs over (N, inner) only)
_BODIES = {
    "mask": ("        if (t < len) y[i] = x[i]; else y[i] = VALUE;\n", False),
    "reverse": ("        const long long src = t < len ? len - 1 - t : t;\n"
                "        y[i] = x[POS(src, b) * INNER + in];\n", False),
    "last": ("        y[i] = x[POS(len - 1, b) * INNER + in];\n", True),
    "last_backward": ("        if (t == len - 1) y[i] = x[b * INNER + in]; "
                      "else y[i] = 0.0f;\n", False),
}


def _position(t: int, n: int, axis: int) -> str:
    """C macro of the flat (step, batch) row of data laid out with the sequence on ``axis``."""
    return (f"#define POS(s, b) ((s) * {n}LL + (b))\n" if axis == 0
            else f"#define POS(s, b) ((b) * {t}LL + (s))\n")


def _length(t: int, low: int, len_t: str | None) -> str:
    """C of ``len``, the element's sequence length clipped into [low, T] (T without lengths)."""
    if len_t is None:
        return f"        const long long len = {t}LL;\n"
    raw_t, raw = index_load("lens[b]", len_t)
    return (f"        const {raw_t} raw = {raw};\n"
            f"        long long len = (long long)raw;\n"
            f"        len = len < {low} ? {low} : (len > {t} ? {t} : len);\n")


def render_sequence(kind: str, t: int, n: int, inner: int, axis: int, dtype: str,
                    len_t: str | None, value: float = 0.0) -> Rendered:
    """The ``kind`` kernel (``mask``, ``reverse``, ``last``, ``last_backward``) over data of
    T steps, N sequences and ``inner`` elements per (step, sequence); ``len_t``: the lengths'
    dtype, None when every sequence is whole. ``x`` is the data, or for ``last_backward`` the
    gradient of SequenceLast's (N, inner) output."""
    stmt, per_sequence = _BODIES[kind]
    if per_sequence:
        index = f"        const long long in = i % {inner}LL, b = i / {inner}LL;\n"
    else:
        row = f"i / {inner}LL"
        t_of, b_of = ((f"{row} / {n}LL", f"{row} % {n}LL") if axis == 0
                      else (f"{row} % {t}LL", f"{row} / {t}LL"))
        index = (f"        const long long in = i % {inner}LL, t = {t_of}, b = {b_of};\n")
    body = (index + _length(t, 1 if kind.startswith("last") else 0, len_t)
            + stmt.replace("VALUE", c_float(value)).replace("INNER", f"{inner}LL"))
    params = f"{ptr('y', dtype, False)}, {ptr('x', dtype)}"
    if len_t is not None:
        params += f", {ptr('lens', len_t)}"
    return grid_stride_kernel(with_dtype(f"sequence_{kind}", dtype),
                              f"{t},{n},{inner},{axis},{value},{len_t}", params, body, n_ptr=3 if len_t else 2,
                              prelude=_position(t, n, axis))
