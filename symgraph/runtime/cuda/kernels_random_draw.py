"""Kernel templates of the samplers' GPU lowering (``lowering_random_draw``): draws of every law
of ``random_laws``, draws from rows of probabilities (``_sample_multinomial``) and a
random permutation of the first axis (``_shuffle``).

Each element ``i`` draws from its own stream (``sg_rng_at(key, i)``), so a value depends only
on the step's key and ``i``. Parameters are literals (attributes) or arrays read at
``i / inner`` (``inner`` samples per parameter element); narrow floats are read through
``sg_ld`` and every draw is computed in float (integers in 64 bits) and stored in the output's
type.
"""
from __future__ import annotations

from typing import Optional, Sequence, Union

from .codegen import C_TYPES, Rendered, c_float, dtype_helpers, grid_stride_kernel, ptr
from .kernels_random import PHILOX_NAME, PHILOX_SOURCE
from .random_laws import LAW_DRAWS, LAWS_NAME, LAWS_SOURCE, RNG_NAME, RNG_SOURCE

Literal = Union[float, int]
KEY = "const unsigned long long* __restrict__ key"
RNG_HELPERS = ((PHILOX_NAME, PHILOX_SOURCE), (RNG_NAME, RNG_SOURCE), (LAWS_NAME, LAWS_SOURCE))
FLOAT_C = ("float", "double", "__half", "__nv_bfloat16")


def read(element: str, dtype: str) -> str:
    """C float value of ``element`` of a buffer of numpy dtype ``dtype`` (integers too)."""
    return f"sg_ld({element})" if C_TYPES[dtype] in FLOAT_C else f"(float)({element})"


def store_cast(dtype: str) -> str:
    """The C type a computed value is converted to before it is stored in ``dtype``: float for
    the float types (narrow ones convert from float), the element type otherwise."""
    return "float" if C_TYPES[dtype] in FLOAT_C else C_TYPES[dtype]


def _literal(value: Literal, c_type: str) -> str:
    return f"{int(value)}LL" if c_type == "long long" else c_float(float(value))


def render_random_draw(law: str, n: int, inner: int, literals: Optional[Sequence[Literal]],
                       array_types: Sequence[str] = (), dtype: str = "float32") -> Rendered:
    """out[i] = a draw of ``law`` whose parameters are ``literals`` (attributes) or, when that
    is None, arrays ``p0``, ``p1``... of numpy dtypes ``array_types``, read at ``i / inner``."""
    c_type, draw = LAW_DRAWS[law]
    if literals is None:
        values = [read(f"p{k}[i / {inner}LL]", t) for k, t in enumerate(array_types)]
    else:
        values = [_literal(v, c_type) for v in literals]
    values += ["0"] * (2 - len(values))  # one-parameter laws leave b unused
    body = ("        sg_rng st = sg_rng_at(key[0], i);\n"
            f"        const {c_type} a = {values[0]}, b = {values[1]};\n"
            f"        out[i] = ({store_cast(dtype)})({draw});\n")
    params = ", ".join([ptr("out", dtype, False)]
                       + [ptr(f"p{k}", t) for k, t in enumerate(array_types)] + [KEY])
    return grid_stride_kernel(f"random_{law}", f"{n},{inner},{literals},{array_types},{dtype}",
                              params, body, 2 + len(array_types),
                              helpers=dtype_helpers(dtype, *array_types) + RNG_HELPERS)


def render_multinomial(k: int, draws: int, out_types: Sequence[str], p_type: str) -> Rendered:
    """Draw ``i`` of row ``r = i / draws`` of ``p`` (rows of ``k`` probabilities, any positive
    total): the first category whose cumulative probability exceeds a uniform times the
    total (the last category of positive probability when rounding leaves none);
    with two outputs also the log of its probability."""
    body = (f"        const long long row = i / {draws}LL * {k}LL;\n"
            "        float total = 0.f;\n        long long last = 0;\n"
            f"        for (long long c = 0; c < {k}LL; ++c) {{\n"
            f"            const float v = {read('p[row + c]', p_type)};\n"
            "            total += v;\n            if (v > 0.f) last = c;\n        }\n"
            "        sg_rng st = sg_rng_at(key[0], i);\n"
            "        const float u = sg_rng_uniform(st) * total;\n"
            "        float acc = 0.f;\n        long long pick = last;\n"
            f"        for (long long c = 0; c < {k}LL; ++c) {{\n"
            f"            acc += {read('p[row + c]', p_type)};\n"
            "            if (u < acc) { pick = c; break; }\n        }\n"
            f"        y0[i] = ({store_cast(out_types[0])})pick;\n")
    if len(out_types) > 1:
        body += f"        y1[i] = logf({read('p[row + pick]', p_type)});\n"
    params = ", ".join([ptr(f"y{j}", t, False) for j, t in enumerate(out_types)]
                       + [ptr("p", p_type), KEY])
    return grid_stride_kernel("sample_multinomial", f"{k},{draws},{out_types},{p_type}", params,
                              body, n_ptr=len(out_types) + 2, helpers=RNG_HELPERS)


def render_shuffle_keys() -> Rendered:
    """keys[r] = 64 random bits of row ``r`` (the sort keys of a random permutation)."""
    body = "        sg_rng st = sg_rng_at(key[0], i);\n        keys[i] = sg_rng_u64(st);\n"
    return grid_stride_kernel("shuffle_keys", "", f"unsigned long long* keys, {KEY}", body,
                              n_ptr=2, helpers=RNG_HELPERS)


def render_shuffle_rank(rows: int) -> Rendered:
    """perm[rank of keys[r]] = r: the rank counts the keys below (ties: the earlier row),
    quadratic in the rows like the sort kernels (``kernels_sort``), with no synchronisation."""
    body = ("        const unsigned long long mine = keys[i];\n        long long rank = 0;\n"
            f"        for (long long j = 0; j < {rows}LL; ++j) {{\n"
            "            const unsigned long long other = keys[j];\n"
            "            rank += other < mine || (other == mine && j < i);\n        }\n"
            "        perm[rank] = i;\n")
    return grid_stride_kernel("shuffle_rank", f"{rows}",
                              "long long* perm, const unsigned long long* keys", body)


def render_shuffle_gather(row: int, dtype: str) -> Rendered:
    """y[i] = x at the same place of row ``perm[i / row]`` (``row`` elements per row)."""
    body = f"        y[i] = x[perm[i / {row}LL] * {row}LL + i % {row}LL];\n"
    params = f"{ptr('y', dtype, False)}, {ptr('x', dtype)}, const long long* perm"
    return grid_stride_kernel("shuffle_gather", f"{row},{dtype}", params, body, n_ptr=3)
