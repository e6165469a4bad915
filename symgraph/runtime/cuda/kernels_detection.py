"""C templates of the one-thread-per-element detection kernels (``lowering_detection.py``):
MultiBoxPrior's anchors, box_iou, box_encode, box_decode, box_nms's gradient scatter, and the
ROI ops (ROIPooling, ROIAlign, PSROIPooling) with their gradients.

Each mirrors its numpy reference in ``ops/detection_*.py`` in float arithmetic: buffers are
stored in their dtype (float32, float16, bfloat16) and read through ``sg_ld``; integer-valued
inputs (matches, samples, ROI rows) of any dtype through ``index_load``. The ROI gradients add
into data's gradient (zero-filled first) with ``atomicAdd`` in the gradient's own type.
"""
from __future__ import annotations

import re
from typing import Sequence

from .codegen import Rendered, c_float, grid_stride_kernel, index_load, ptr

BOX_HELPER = ("sg_box", r"""
struct sg_box { float x0, y0, x1, y1; };
// A box from 4 values, as corners ("center" boxes are x, y, width, height).
__device__ __forceinline__ sg_box sg_box_of(float a, float b, float c, float d, bool center) {
    sg_box r;
    if (center) { r.x0 = a - c / 2; r.y0 = b - d / 2; r.x1 = a + c / 2; r.y1 = b + d / 2; }
    else { r.x0 = a; r.y0 = b; r.x1 = c; r.y1 = d; }
    return r;
}
// Area, 0 for a negative width or height (MXNet's BoxArea).
__device__ __forceinline__ float sg_box_area(sg_box b) {
    const float w = b.x1 - b.x0, h = b.y1 - b.y0;
    return (w < 0.f || h < 0.f) ? 0.f : w * h;
}
__device__ __forceinline__ float sg_box_inter(sg_box a, sg_box b) {
    const float w = fminf(a.x1, b.x1) - fmaxf(a.x0, b.x0);
    const float h = fminf(a.y1, b.y1) - fmaxf(a.y0, b.y0);
    return (w > 0.f ? w : 0.f) * (h > 0.f ? h : 0.f);
}
""")


def with_constants(src: str, values: dict) -> str:
    """``src`` with each name of ``values`` (a whole word) replaced by its C value: a string
    as it is, a bool as true/false, a float as a float literal, an int as a long long."""
    for name, v in values.items():
        text = (v if isinstance(v, str) else ("true" if v else "false") if isinstance(v, bool)
                else c_float(v) if isinstance(v, float) else f"{v}LL")
        src = re.sub(rf"\b{name}\b", text, src)
    return src


def load_box(arr: str, at: str, center: bool = False) -> str:
    """C of the box of 4 consecutive elements of ``arr`` from ``at``."""
    vals = ", ".join(f"sg_ld({arr}[({at}) + {k}])" for k in range(4))
    return f"sg_box_of({vals}, {'true' if center else 'false'})"


def _kernel(stem: str, key: str, params: Sequence[str], body: str,
            prelude: str = "") -> Rendered:
    return grid_stride_kernel(stem, key, ", ".join(params), body, n_ptr=len(params),
                              prelude=prelude, helpers=(BOX_HELPER,))


def render_prior(h: int, w: int, half: Sequence[tuple[float, float]], steps: tuple,
                 offsets: tuple, clip: bool, dtype: str) -> Rendered:
    """Anchors (H*W*K, 4): one thread per anchor; ``half``: (half width, half height) of
    each of the K anchors of a cell."""
    k = len(half)
    hw = ", ".join(c_float(v[0]) for v in half)
    hh = ", ".join(c_float(v[1]) for v in half)
    c = "fminf(fmaxf(V, 0.f), 1.f)" if clip else "V"
    body = (f"        const float HW[{k}] = {{{hw}}}, HH[{k}] = {{{hh}}};\n"
            f"        const long long a = i % {k}LL, cell = i / {k}LL;\n"
            f"        const float cy = ((float)(cell / {w}LL) + {c_float(offsets[0])}) * "
            f"{c_float(steps[0])};\n"
            f"        const float cx = ((float)(cell % {w}LL) + {c_float(offsets[1])}) * "
            f"{c_float(steps[1])};\n"
            f"        y[i * 4] = {c.replace('V', 'cx - HW[a]')};\n"
            f"        y[i * 4 + 1] = {c.replace('V', 'cy - HH[a]')};\n"
            f"        y[i * 4 + 2] = {c.replace('V', 'cx + HW[a]')};\n"
            f"        y[i * 4 + 3] = {c.replace('V', 'cy + HH[a]')};\n")
    return _kernel("multibox_prior", f"{h},{w},{half},{steps},{offsets},{clip}",
                   [ptr("y", dtype, False), ptr("x", dtype)], body)


def render_box_iou(right: int, center: bool, dtype: str) -> Rendered:
    """IoU of lhs box i / right with rhs box i % right."""
    body = (f"        const long long l = i / {right}LL, r = i % {right}LL;\n"
            f"        const sg_box a = {load_box('lhs', 'l * 4', center)};\n"
            f"        const sg_box b = {load_box('rhs', 'r * 4', center)};\n"
            "        const float inter = sg_box_inter(a, b);\n"
            "        y[i] = inter > 0.f ? inter / (sg_box_area(a) + sg_box_area(b) - inter)"
            " : 0.f;\n")
    return _kernel("box_iou", f"{right},{center}",
                   [ptr("y", dtype, False), ptr("lhs", dtype), ptr("rhs", dtype)], body)


def render_box_decode(n: int, stds: Sequence[float], clip: float, center: bool,
                      dtype: str) -> Rendered:
    """Corner boxes from offsets (one thread per box; anchor i % n)."""
    cut = (f"        dw = fminf(dw, {c_float(clip)}); dh = fminf(dh, {c_float(clip)});\n"
           if clip > 0 else "")
    anchor = ("        const float aw = a2, ah = a3, ax = a0, ay = a1;\n" if center else
              "        const float aw = a2 - a0, ah = a3 - a1, ax = a0 + aw * 0.5f, "
              "ay = a1 + ah * 0.5f;\n")
    body = (f"        const long long at = (i % {n}LL) * 4;\n"
            "        const float a0 = sg_ld(anc[at]), a1 = sg_ld(anc[at + 1]), "
            "a2 = sg_ld(anc[at + 2]), a3 = sg_ld(anc[at + 3]);\n" + anchor +
            f"        const float ox = sg_ld(x[i * 4]) * {c_float(stds[0])} * aw + ax;\n"
            f"        const float oy = sg_ld(x[i * 4 + 1]) * {c_float(stds[1])} * ah + ay;\n"
            f"        float dw = sg_ld(x[i * 4 + 2]) * {c_float(stds[2])};\n"
            f"        float dh = sg_ld(x[i * 4 + 3]) * {c_float(stds[3])};\n" + cut +
            "        const float ow = expf(dw) * aw * 0.5f, oh = expf(dh) * ah * 0.5f;\n"
            "        y[i * 4] = ox - ow; y[i * 4 + 1] = oy - oh;\n"
            "        y[i * 4 + 2] = ox + ow; y[i * 4 + 3] = oy + oh;\n")
    return _kernel("box_decode", f"{n},{tuple(stds)},{clip},{center}",
                   [ptr("y", dtype, False), ptr("x", dtype), ptr("anc", dtype)], body)


def render_box_encode(n: int, m: int, dtypes: Sequence[str]) -> Rendered:
    """Targets and masks of one anchor per thread. ``dtypes``: of targets (and masks), then
    samples, matches, anchors, refs, means, stds."""
    out_t, s_t, m_t, a_t, r_t, mean_t, std_t = dtypes
    s_kind, s_val = index_load("samples[i]", s_t)
    m_kind, m_val = index_load("matches[i]", m_t)
    mean = [index_load(f"means[{k}]", mean_t)[1] for k in range(4)]
    std = [index_load(f"stds[{k}]", std_t)[1] for k in range(4)]
    body = (f"        const {s_kind} s = {s_val};\n        const {m_kind} mraw = {m_val};\n"
            f"        long long mt = (long long)mraw; mt = mt < 0 ? 0 : (mt > {m - 1} ? "
            f"{m - 1} : mt);\n"
            f"        const sg_box g = {load_box('refs', f'((i / {n}LL) * {m}LL + mt) * 4')};\n"
            f"        const sg_box a = {load_box('anc', 'i * 4')};\n"
            "        const float aw = a.x1 - a.x0, ah = a.y1 - a.y0;\n"
            "        const float gw = g.x1 - g.x0, gh = g.y1 - g.y0;\n"
            "        const float t[4] = {((g.x0 + gw * 0.5f) - (a.x0 + aw * 0.5f)) / aw,\n"
            "                            ((g.y0 + gh * 0.5f) - (a.y0 + ah * 0.5f)) / ah,\n"
            "                            logf(gw / aw), logf(gh / ah)};\n"
            f"        const float mean[4] = {{{', '.join(f'(float){v}' for v in mean)}}};\n"
            f"        const float sd[4] = {{{', '.join(f'(float){v}' for v in std)}}};\n"
            "        const bool valid = (float)s > 0.5f;\n"
            "        for (int k = 0; k < 4; ++k) {\n"
            "            tgt[i * 4 + k] = valid ? (t[k] - mean[k]) / sd[k] : 0.f;\n"
            "            msk[i * 4 + k] = valid ? 1.f : 0.f;\n        }\n")
    params = [ptr("tgt", out_t, False), ptr("msk", out_t, False), ptr("samples", s_t),
              ptr("matches", m_t), ptr("anc", a_t), ptr("refs", r_t), ptr("means", mean_t),
              ptr("stds", std_t)]
    return _kernel("box_encode", f"{n},{m}", params, body)


def render_nms_scatter(width: int, dtype: str, rec_t: str) -> Rendered:
    """box_nms's gradient: element i of output row r goes to the input row record[r]."""
    kind, val = index_load(f"rec[i / {width}LL]", rec_t)
    body = (f"        const {kind} src = {val};\n"
            f"        if (src >= 0) dx[(long long)src * {width}LL + i % {width}LL] = dy[i];\n")
    return _kernel("box_nms_scatter", f"{width}",
                   [ptr("dx", dtype, False), ptr("dy", dtype), ptr("rec", rec_t)], body)
