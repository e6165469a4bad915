"""Kernel template of ``lowering_random_pdf``'s Dirichlet density: one thread per output
element, the sum over the last axis in float (narrow inputs read through ``sg_ld``)."""
from __future__ import annotations

from .codegen import Rendered, grid_stride_kernel, ptr
from .kernels_random_draw import read


def render_dirichlet_pdf(k: int, per_row: int, is_log: bool, x_t: str, a_t: str,
                         y_t: str) -> Rendered:
    """y[i] = the Dirichlet log-density (density unless ``is_log``) of sample row ``i`` (``k``
    values) under alpha row ``i / per_row``, computed in float."""
    body = (f"        const long long xrow = i * {k}LL, arow = i / {per_row}LL * {k}LL;\n"
            "        float acc = 0.f, total = 0.f;\n"
            f"        for (long long c = 0; c < {k}LL; ++c) {{\n"
            f"            const float a = {read('alpha[arow + c]', a_t)};\n"
            f"            acc += (a - 1.f) * logf({read('x[xrow + c]', x_t)}) - lgammaf(a);\n"
            "            total += a;\n        }\n"
            "        const float logp = acc + lgammaf(total);\n"
            f"        y[i] = {'logp' if is_log else 'expf(logp)'};\n")
    params = f"{ptr('y', y_t, False)}, {ptr('x', x_t)}, {ptr('alpha', a_t)}"
    return grid_stride_kernel("pdf_dirichlet", f"{k},{per_row},{is_log}", params, body, 3)
