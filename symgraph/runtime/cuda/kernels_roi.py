"""C templates of the ROI ops (``ops/detection_roi.py``) for ``lowering_detection.py``: one
thread per output element (R, C_out, PH, PW) of ROIPooling, ROIAlign or PSROIPooling, and the
same thread layout over the output gradient for their data gradients, which ``atomicAdd`` into
data's gradient (zero-filled first) in its own type.

Each bin is computed as the numpy reference does it: ROIPooling's rounded corners and integer
bins with the first maximum, ROIAlign's sampling grid of bilinear samples (MXNet's border
rule), PSROIPooling's rounded corners with the +1 end and channel groups. A ROI whose batch
index is outside [0, N) gives 0 (and no gradient).
"""
from __future__ import annotations

import re

from .codegen import Rendered, ctype, grid_stride_kernel, index_load, ptr
from .kernels_detection import with_constants

# The bin of thread i, its ROI row and batch index; then ``CIN`` (input channel) per kind.
_HEAD = """        const long long pw = i % PW, ph = (i / PW) % PH, c = (i / (PW * PH)) % CO;
        const long long r = i / (PW * PH * CO);
        const float bf = ROI(0);
        const long long b = (long long)bf;
        if (b < 0 || b >= NB) { STORE_ZERO continue; }
"""

_MAX = """        const int x0 = (int)roundf(ROI(1) * SCALE), y0 = (int)roundf(ROI(2) * SCALE);
        const int x1 = (int)roundf(ROI(3) * SCALE), y1 = (int)roundf(ROI(4) * SCALE);
        const float bh = (float)max(y1 - y0 + 1, 1) / PH, bw = (float)max(x1 - x0 + 1, 1) / PW;
        const int hs = min(max((int)floorf(ph * bh) + y0, 0), H);
        const int he = min(max((int)ceilf((ph + 1) * bh) + y0, 0), H);
        const int ws = min(max((int)floorf(pw * bw) + x0, 0), W);
        const int we = min(max((int)ceilf((pw + 1) * bw) + x0, 0), W);
        const long long base = (b * C + c) * H * W;
        long long best = -1; float top = 0.f;
        for (int yy = hs; yy < he; ++yy)
            for (int xx = ws; xx < we; ++xx) {
                const float v = sg_ld(data[base + yy * W + xx]);
                if (best < 0 || v > top) { top = v; best = base + yy * W + xx; }
            }
"""

_ALIGN_BOX = """        const float x0 = ROI(1) * SCALE - OFF, y0 = ROI(2) * SCALE - OFF;
        float rw = ROI(3) * SCALE - OFF - x0, rh = ROI(4) * SCALE - OFF - y0;
        if (!ALIGNED) { rw = fmaxf(rw, 1.f); rh = fmaxf(rh, 1.f); }
        const float ct = 1.f, st = 0.f, cy = 0.f, cx = 0.f;
"""
# RROIAlign: the grid of a box centred at 0, rotated and moved to the ROI's centre.
_ROTATED_BOX = """        const float cx = ROI(1) * SCALE, cy = ROI(2) * SCALE;
        const float rw = fmaxf(ROI(3) * SCALE, 1.f), rh = fmaxf(ROI(4) * SCALE, 1.f);
        const float th = ROI(5) * 0.017453292519943295f;
        const float ct = cosf(th), st = sinf(th), x0 = -rw / 2.f, y0 = -rh / 2.f;
"""
_GRID = """        const float bh = rh / PH, bw = rw / PW;
        const int gh = RATIO > 0 ? RATIO : (int)ceilf(rh / PH);
        const int gw = RATIO > 0 ? RATIO : (int)ceilf(rw / PW);
        const float cnt = (float)max(gh * gw, 1);
        const long long base = (b * C + CIN) * H * W;
        float acc = 0.f;
        for (int iy = 0; iy < gh; ++iy) {
            const float py = y0 + ph * bh + (iy + .5f) * bh / gh;
            for (int ix = 0; ix < gw; ++ix) {
                const float px = x0 + pw * bw + (ix + .5f) * bw / gw;
                const float y = py * ct - px * st + cy, x = px * ct + py * st + cx;
                if (y < -1.f || y > H || x < -1.f || x > W) continue;
                float yy = fmaxf(y, 0.f), xx = fmaxf(x, 0.f);
                int ylo = (int)yy, xlo = (int)xx, yhi, xhi;
                if (ylo >= H - 1) { ylo = yhi = H - 1; yy = (float)ylo; } else yhi = ylo + 1;
                if (xlo >= W - 1) { xlo = xhi = W - 1; xx = (float)xlo; } else xhi = xlo + 1;
                const float ly = yy - ylo, lx = xx - xlo, hy = 1.f - ly, hx = 1.f - lx;
                SAMPLE(ylo * W + xlo, hy * hx) SAMPLE(ylo * W + xhi, hy * lx)
                SAMPLE(yhi * W + xlo, ly * hx) SAMPLE(yhi * W + xhi, ly * lx)
            }
        }
"""
_ALIGN = _ALIGN_BOX + _GRID

_PSROI = """        const float x0 = roundf(ROI(1)) * SCALE, y0 = roundf(ROI(2)) * SCALE;
        const float x1 = (roundf(ROI(3)) + 1.f) * SCALE, y1 = (roundf(ROI(4)) + 1.f) * SCALE;
        const float bh = fmaxf(y1 - y0, 0.1f) / PH, bw = fmaxf(x1 - x0, 0.1f) / PW;
        const int hs = min(max((int)floorf(ph * bh + y0), 0), H);
        const int he = min(max((int)ceilf((ph + 1) * bh + y0), 0), H);
        const int ws = min(max((int)floorf(pw * bw + x0), 0), W);
        const int we = min(max((int)ceilf((pw + 1) * bw + x0), 0), W);
        const int gi = min(max((int)floorf((float)ph * G / PH), 0), G - 1);
        const int gj = min(max((int)floorf((float)pw * G / PW), 0), G - 1);
        const long long base = (b * C + (c * G + gi) * G + gj) * H * W;
        const float area = (float)((he - hs) * (we - ws));
"""

_SUM = ("        float acc = 0.f;\n"
        "        for (int yy = hs; yy < he; ++yy)\n"
        "            for (int xx = ws; xx < we; ++xx) acc += sg_ld(data[base + yy * W + xx]);\n")
_SPREAD = ("        if (area <= 0.f) continue;\n"
           "        const float g = sg_ld(dy[i]) / area;\n"
           "        for (int yy = hs; yy < he; ++yy)\n"
           "            for (int xx = ws; xx < we; ++xx) atomicAdd(&dx[base + yy * W + xx], (T)g);\n")
# kind -> (forward body after the head, storing y[i]; backward body, adding into dx)
_BODIES = {
    "max": (_MAX + "        y[i] = best < 0 ? 0.f : top;\n",
            _MAX.replace("sg_ld(data[base + yy * W + xx])", "sg_ld(src[base + yy * W + xx])")
            + "        if (best >= 0) atomicAdd(&dx[best], dy[i]);\n"),
    "align": (_ALIGN + "        y[i] = acc / cnt;\n",
              "        const float g = sg_ld(dy[i]);\n" + _ALIGN),
    "rotated": (_ROTATED_BOX + _GRID + "        y[i] = acc / cnt;\n", ""),
    "psroi": (_PSROI + _SUM + "        y[i] = area > 0.f ? acc / area : 0.f;\n", _PSROI + _SPREAD),
}
# ROIAlign's bilinear sample at flat position P with weight WT, forward and backward.
_SAMPLE = {False: r"acc += (\2) * sg_ld(data[base + (\1)]);",
           True: r"atomicAdd(&dx[base + (\1)], (T)((\2) * g / cnt));"}


def render_roi(kind: str, backward: bool, geometry: dict, dtype: str, rois_t: str,
               data_t: str = "") -> Rendered:
    """The forward (``y, data, rois``) or data-gradient (``dx, dy, [data,] rois``: ROIPooling's
    reads data as ``src`` for its maxima) kernel of ``kind`` (max, align, psroi; rotated
    forward only). ``geometry``: NB, C, H, W (data), CO, PH, PW (output), SCALE, and per kind
    CIN, OFF, RATIO, ALIGNED (align, rotated) or G (psroi)."""
    body = _HEAD.replace("STORE_ZERO", "" if backward else "y[i] = 0.f;")
    body += _BODIES[kind][1 if backward else 0]
    body = re.sub(r"SAMPLE\(([^,]+), ([^)]+)\)", _SAMPLE[backward], body)
    roi = index_load(f"rois[r * {6 if kind == 'rotated' else 5} + K]", rois_t)[1]
    body = re.sub(r"ROI\((\d)\)", lambda m: "(float)" + roi.replace("K", m.group(1)), body)
    body = with_constants(body, {**geometry, "T": ctype(dtype)})
    if backward:
        params = [ptr("dx", dtype, False, False), ptr("dy", dtype)]
        params += [ptr("src", data_t or dtype)] if kind == "max" else []
    else:
        params = [ptr("y", dtype, False), ptr("data", dtype)]
    params.append(ptr("rois", rois_t))
    return grid_stride_kernel(f"{kind}_roi{'_backward' if backward else ''}",
                              f"{sorted(geometry.items())}", ", ".join(params), body,
                              n_ptr=len(params))


# DeformablePSROIPooling: the bin's offset, channel and samples (``SAMPLES`` per side); each
# valid sample runs ``EACH`` with its clamped position (y, x), corners and fractions.
_DEFORMABLE = """        const float x0 = roundf(ROI(1)) * SCALE - 0.5f, y0 = roundf(ROI(2)) * SCALE - 0.5f;
        const float rw = fmaxf((roundf(ROI(3)) + 1.f) * SCALE - 0.5f - x0, 0.1f);
        const float rh = fmaxf((roundf(ROI(4)) + 1.f) * SCALE - 0.5f - y0, 0.1f);
        const float bw = rw / PW, bh = rh / PH;
        const long long pi = (long long)floorf((float)ph / PH * K);
        const long long pj = (long long)floorf((float)pw / PW * K);
        const long long t = (((r * CLASSES + c / (CO / CLASSES)) * 2) * K + pi) * K + pj;
        const float tx = NO_TRANS ? 0.f : sg_ld(trans[t]) * STD;
        const float ty = NO_TRANS ? 0.f : sg_ld(trans[t + K * K]) * STD;
        const float ws = pw * bw + x0 + tx * rw, hs = ph * bh + y0 + ty * rh;
        const int gi = min(max((int)floorf((float)ph * G / PH), 0), G - 1);
        const int gj = min(max((int)floorf((float)pw * G / PW), 0), G - 1);
        const long long base = (b * C + (c * G + gi) * G + gj) * H * W;
        int count = 0;
        for (int pass = PASSES; pass < 2; ++pass)
            for (int u = 0; u < SAMPLES; ++u)
                for (int v = 0; v < SAMPLES; ++v) {
                    float y = hs + u * bh / SAMPLES, x = ws + v * bw / SAMPLES;
                    if (x < -0.5f || x > W - 0.5f || y < -0.5f || y > H - 0.5f) continue;
                    if (pass == 0) { ++count; continue; }
                    y = fminf(fmaxf(y, 0.f), H - 1.f); x = fminf(fmaxf(x, 0.f), W - 1.f);
                    const int ya = (int)floorf(y), yb = (int)ceilf(y);
                    const int xa = (int)floorf(x), xb = (int)ceilf(x);
                    const float fy = y - ya, fx = x - xa;
                    EACH
                }
"""
_DEFORMABLE_FORWARD = (
    "const float v00 = sg_ld(data[base + ya * W + xa]), v01 = sg_ld(data[base + yb * W + xa]);\n"
    "                    const float v10 = sg_ld(data[base + ya * W + xb]), "
    "v11 = sg_ld(data[base + yb * W + xb]);\n"
    "                    acc += (1.f - fx) * (1.f - fy) * v00 + (1.f - fx) * fy * v01 + "
    "fx * (1.f - fy) * v10 + fx * fy * v11; ++count;")
_DEFORMABLE_BACKWARD = (
    "atomicAdd(&dx[base + ya * W + xa], (T)((1.f - fx) * (1.f - fy) * g));\n"
    "                    atomicAdd(&dx[base + yb * W + xa], (T)((1.f - fx) * fy * g));\n"
    "                    atomicAdd(&dx[base + ya * W + xb], (T)(fx * (1.f - fy) * g));\n"
    "                    atomicAdd(&dx[base + yb * W + xb], (T)(fx * fy * g));")
# the offsets' gradient, added after the data's when there are offsets (trans)
_DEFORMABLE_BACKWARD_TRANS = (
    "\n                    const float v00 = sg_ld(data[base + ya * W + xa]), "
    "v01 = sg_ld(data[base + yb * W + xa]);\n"
    "                    const float v10 = sg_ld(data[base + ya * W + xb]), "
    "v11 = sg_ld(data[base + yb * W + xb]);\n"
    "                    atomicAdd(&dtrans[t], (T)(((v11 - v01) * fy + (v10 - v00) * (1.f - fy))"
    " * STD * g * rw));\n"
    "                    atomicAdd(&dtrans[t + K * K], (T)(((v11 - v10) * fx + (v01 - v00) * "
    "(1.f - fx)) * STD * g * rh));")


def render_deformable(backward: bool, geometry: dict, dtype: str, rois_t: str,
                      trans_t: str | None) -> Rendered:
    """DeformablePSROIPooling's forward (``y, data, rois[, trans]``) or gradient (``dx[,
    dtrans], dy, data, rois[, trans]``) over the output elements. ``geometry``: NB, C, H, W,
    CO, PH, PW, SCALE, G, K (part size), CLASSES, SAMPLES, STD; ``trans_t`` None: no_trans."""
    head = _HEAD.replace("STORE_ZERO", "" if backward else "y[i] = 0.f;")
    if backward:
        body = (head + _DEFORMABLE.replace("PASSES", "0").replace(
            "if (pass == 0) { ++count; continue; }",
            "if (pass == 0) { ++count; continue; }\n"
            "                    const float g = sg_ld(dy[i]) / count;")
            .replace("EACH", _DEFORMABLE_BACKWARD
                     + (_DEFORMABLE_BACKWARD_TRANS if trans_t else "")))
    else:
        body = (head + "        float acc = 0.f;\n" + _DEFORMABLE.replace("PASSES", "1")
                .replace("EACH", _DEFORMABLE_FORWARD)
                + "        y[i] = count > 0 ? acc / count : 0.f;\n")
    roi = index_load("rois[r * 5 + K_]", rois_t)[1]
    body = re.sub(r"ROI\((\d)\)", lambda m: "(float)" + roi.replace("K_", m.group(1)), body)
    if trans_t is None:  # (before the constants replace K: the loads name no array then)
        body = body.replace("sg_ld(trans[t])", "0.f").replace("sg_ld(trans[t + K * K])", "0.f")
    body = with_constants(body, {**geometry, "NO_TRANS": "true" if trans_t is None else "false",
                                 "T": ctype(dtype)})
    outs = ([ptr("dx", dtype, False, False)] + ([ptr("dtrans", dtype, False, False)]
                                               if trans_t else []) + [ptr("dy", dtype)]
            if backward else [ptr("y", dtype, False)])
    params = outs + [ptr("data", dtype), ptr("rois", rois_t)]
    params += [ptr("trans", trans_t)] if trans_t else []
    return grid_stride_kernel(f"deformable_psroi{'_backward' if backward else ''}",
                              f"{sorted(geometry.items())}", ", ".join(params), body,
                              n_ptr=len(params))
