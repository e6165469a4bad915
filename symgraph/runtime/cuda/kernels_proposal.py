"""C template of Proposal and MultiProposal (``ops/detection_proposal.py``) for
``lowering_detection.py``: a block per image (grid-stride over the batch), in the steps of
the numpy reference: a thread per (position, anchor) decodes, clips and filters its box into
float scratch rows [x1, y1, x2, y2, score]; each box's rank by score (stable) places the first
``rpn_pre_nms_top_n`` in a scratch order; greedy NMS walks them with a ``__syncthreads`` per
box, every thread counting the kept boxes alike (thread 0 records them); the kept boxes fill
the output rows cyclically. Quadratic in the boxes per image, correct first.
"""
from __future__ import annotations

from typing import Sequence

from .codegen import Rendered, c_float, ctype, ptr
from .kernels_detection import with_constants
from .kernels_detection_nms import block_kernel

_PROPOSAL = r"""
    for (long long b = blockIdx.x; b < ITEMS; b += gridDim.x) {
        const DT* score = cls_prob + (b * 2 * K + K) * HH * WW;
        const DT* delta = bbox_pred + b * 4 * K * HH * WW;
        const float ih = sg_ld(im_info[b * 3]), iw = sg_ld(im_info[b * 3 + 1]);
        const float min_size = MIN_SIZE * sg_ld(im_info[b * 3 + 2]);
        float* det = dets + b * COUNT * 5;
        int* ord = order + b * PRE;
        int* kept_at = keep + b * POST;
        int* gone = flags + b * PRE;
        for (long long i = threadIdx.x; i < COUNT; i += blockDim.x) {
            const long long a = i % K, cell = i / K, h = cell / WW, w = cell % WW;
            const float x0 = BASE[a * 4] + w * STRIDE, y0 = BASE[a * 4 + 1] + h * STRIDE;
            const float x1 = BASE[a * 4 + 2] + w * STRIDE, y1 = BASE[a * 4 + 3] + h * STRIDE;
            const long long at = (a * 4 * HH + h) * WW + w, plane = HH * WW;
            const float d0 = sg_ld(delta[at]), d1 = sg_ld(delta[at + plane]);
            const float d2 = sg_ld(delta[at + 2 * plane]), d3 = sg_ld(delta[at + 3 * plane]);
            float box[4];
            if (IOU_LOSS) {
                box[0] = x0 + d0; box[1] = y0 + d1; box[2] = x1 + d2; box[3] = y1 + d3;
            } else {
                const float bw = x1 - x0 + 1.f, bh = y1 - y0 + 1.f;
                const float cx = x0 + 0.5f * (bw - 1.f), cy = y0 + 0.5f * (bh - 1.f);
                const float px = d0 * bw + cx, py = d1 * bh + cy;
                const float pw = expf(d2) * bw, ph = expf(d3) * bh;
                box[0] = px - 0.5f * (pw - 1.f); box[1] = py - 0.5f * (ph - 1.f);
                box[2] = px + 0.5f * (pw - 1.f); box[3] = py + 0.5f * (ph - 1.f);
            }
            for (int k = 0; k < 4; ++k)
                box[k] = fmaxf(fminf(box[k], (k & 1 ? ih : iw) - 1.f), 0.f);
            float s = sg_ld(score[(a * HH + h) * WW + w]);
            if (h >= (long long)(ih / STRIDE) || w >= (long long)(iw / STRIDE)) s = -1.f;
            if (box[2] - box[0] + 1.f < min_size || box[3] - box[1] + 1.f < min_size) {
                box[0] -= min_size / 2; box[1] -= min_size / 2;
                box[2] += min_size / 2; box[3] += min_size / 2;
                s = -1.f;
            }
            for (int k = 0; k < 4; ++k) det[i * 5 + k] = box[k];
            det[i * 5 + 4] = s;
        }
        __syncthreads();
        for (long long i = threadIdx.x; i < COUNT; i += blockDim.x) {
            const float s = det[i * 5 + 4];
            long long rank = 0;
            for (long long t = 0; t < COUNT; ++t)
                rank += det[t * 5 + 4] > s || (det[t * 5 + 4] == s && t < i);
            if (rank < PRE) ord[rank] = (int)i;
        }
        for (long long k = threadIdx.x; k < PRE; k += blockDim.x) gone[k] = 0;
        __syncthreads();
        int kept = 0;
        for (int i = 0; i < PRE && kept < LIMIT; ++i) {
            if (!gone[i]) {
                const float* p = det + ord[i] * 5;
                const float pa = (p[2] - p[0] + 1.f) * (p[3] - p[1] + 1.f);
                for (int j = i + 1 + threadIdx.x; j < PRE; j += blockDim.x) {
                    if (gone[j]) continue;
                    const float* q = det + ord[j] * 5;
                    const float w = fmaxf(0.f, fminf(p[2], q[2]) - fmaxf(p[0], q[0]) + 1.f);
                    const float h = fmaxf(0.f, fminf(p[3], q[3]) - fmaxf(p[1], q[1]) + 1.f);
                    const float inter = w * h;
                    if (inter / (pa + (q[2] - q[0] + 1.f) * (q[3] - q[1] + 1.f) - inter) > THRESH)
                        gone[j] = 1;
                }
                if (threadIdx.x == 0) kept_at[kept] = i;
                ++kept;
            }
            __syncthreads();
        }
        for (long long r = threadIdx.x; r < POST; r += blockDim.x) {
            const float* src = det + ord[kept_at[r % kept]] * 5;
            DT* row = out + (b * POST + r) * 5;
            row[0] = (float)b;
            for (int k = 0; k < 4; ++k) row[k + 1] = src[k];
            out_score[b * POST + r] = src[4];
        }
        __syncthreads();
    }
"""


def render_proposal(a: dict, items: int, k: int, h: int, w: int,
                    base: Sequence[Sequence[float]], dtype: str) -> Rendered:
    """Parameters ``out, out_score, cls_prob, bbox_pred, im_info, dets, order, keep, flags``
    (float items x count x 5; int items x pre, items x post, items x pre)."""
    count = k * h * w
    pre = count if a["rpn_pre_nms_top_n"] <= 0 else min(a["rpn_pre_nms_top_n"], count)
    table = ", ".join(c_float(float(v)) for row in base for v in row)
    body = _PROPOSAL.replace("        const float ih", f"        const float BASE[{4 * k}] = "
                             f"{{{table}}};\n        const float ih")
    body = with_constants(body, {
        "ITEMS": items, "K": k, "HH": h, "WW": w, "COUNT": count, "PRE": pre,
        "POST": a["rpn_post_nms_top_n"], "LIMIT": min(a["rpn_post_nms_top_n"], pre),
        "STRIDE": float(a["feature_stride"]), "MIN_SIZE": float(a["rpn_min_size"]),
        "THRESH": float(a["threshold"]), "IOU_LOSS": bool(a["iou_loss"]), "DT": ctype(dtype)})
    params = [ptr("out", dtype, False), ptr("out_score", dtype, False), ptr("cls_prob", dtype),
              ptr("bbox_pred", dtype), ptr("im_info", dtype), "float* __restrict__ dets",
              "int* __restrict__ order", "int* __restrict__ keep", "int* __restrict__ flags"]
    return block_kernel("proposal", f"{sorted(a.items())},{items},{k},{h},{w}", params, body,
                        (dtype,))
