"""C templates of MultiBoxDetection and MultiBoxTarget (``ops/detection_multibox.py``) for
``lowering_detection.py``: a block per batch item, in the steps of the numpy references.

Detection: a thread per anchor picks its class and decodes its box into a float scratch row;
a thread per valid anchor computes its place among the valid ones (anchor order) and its rank
by score (stable), the first ``nms_topk`` by rank land sorted, the others at their place with
class -1 (as MXNet leaves them); suppression walks the sorted rows serially.

Target: thread 0 counts the ground truth; the greedy matching repeats a block argmax of the
IoU over unmatched (anchor, truth) pairs (ties to the first pair in anchor-major order) until
every truth is matched or no IoU exceeds 1e-6; a thread per anchor then finds its best truth
and thresholds it; mined negatives are ranked by background probability among the candidates.
"""
from __future__ import annotations

from .codegen import Rendered, ctype, ptr
from .kernels_detection import with_constants
from .kernels_detection_nms import block_kernel

_DETECTION = r"""
    __shared__ int info[1];
    for (long long b = blockIdx.x; b < ITEMS; b += gridDim.x) {
        const DT* prob = cls_prob + b * NC * NA;
        const DT* loc = loc_pred + b * NA * 4;
        float* row = rows + b * NA * 6;
        float* srt = sorted + b * NA * 6;
        for (long long i = threadIdx.x; i < NA; i += blockDim.x) {
            float score = -1.f; int id = 0;
            for (int j = 1; j < NC; ++j) {
                const float p = sg_ld(prob[j * NA + i]);
                if (p > score) { score = p; id = j; }
            }
            if (id > 0 && score < THRESHOLD) id = 0;
            const float a0 = sg_ld(anchor[i * 4]), a1 = sg_ld(anchor[i * 4 + 1]);
            const float a2 = sg_ld(anchor[i * 4 + 2]), a3 = sg_ld(anchor[i * 4 + 3]);
            const float aw = a2 - a0, ah = a3 - a1, ax = (a0 + a2) / 2.f, ay = (a1 + a3) / 2.f;
            const float ox = sg_ld(loc[i * 4]) * V0 * aw + ax;
            const float oy = sg_ld(loc[i * 4 + 1]) * V1 * ah + ay;
            const float ow = expf(sg_ld(loc[i * 4 + 2]) * V2) * aw / 2.f;
            const float oh = expf(sg_ld(loc[i * 4 + 3]) * V3) * ah / 2.f;
            const float v[6] = {(float)(id - 1), score, CLIP(ox - ow), CLIP(oy - oh),
                                CLIP(ox + ow), CLIP(oy + oh)};
            for (int k = 0; k < 6; ++k) { row[i * 6 + k] = v[k]; srt[i * 6 + k] = -1.f; }
        }
        __syncthreads();
        if (threadIdx.x == 0) {
            int count = 0;
            for (long long t = 0; t < NA; ++t) count += row[t * 6] >= 0.f ? 1 : 0;
            info[0] = count;
        }
        __syncthreads();
        const int nvalid = info[0];
        const bool nms = nvalid > 0 && NMS_ON;
        const int nkeep = (TOPK > 0 && TOPK < nvalid) ? TOPK : nvalid;
        for (long long i = threadIdx.x; i < NA; i += blockDim.x) {
            if (row[i * 6] < 0.f) continue;
            const float s = row[i * 6 + 1];
            long long place = 0, rank = 0;
            for (long long t = 0; t < NA; ++t) {
                if (row[t * 6] < 0.f) continue;
                place += t < i;
                rank += row[t * 6 + 1] > s || (row[t * 6 + 1] == s && t < i);
            }
            if (!nms) {
                for (int k = 0; k < 6; ++k) srt[place * 6 + k] = row[i * 6 + k];
                continue;
            }
            if (rank < nkeep)
                for (int k = 0; k < 6; ++k) srt[rank * 6 + k] = row[i * 6 + k];
            if (place >= nkeep) {
                for (int k = 1; k < 6; ++k) srt[place * 6 + k] = row[i * 6 + k];
                srt[place * 6] = -1.f;
            }
        }
        __syncthreads();
        for (int i = 0; nms && i < nkeep; ++i) {
            if (srt[i * 6] >= 0.f) {
                const float* p = srt + i * 6;
                const float pa = (p[4] - p[2]) * (p[5] - p[3]);
                for (int j = i + 1 + threadIdx.x; j < nkeep; j += blockDim.x) {
                    float* q = srt + j * 6;
                    if (q[0] < 0.f || !(FORCE || p[0] == q[0])) continue;
                    const float w = fmaxf(0.f, fminf(p[4], q[4]) - fmaxf(p[2], q[2]));
                    const float h = fmaxf(0.f, fminf(p[5], q[5]) - fmaxf(p[3], q[3]));
                    const float inter = w * h;
                    const float u = pa + (q[4] - q[2]) * (q[5] - q[3]) - inter;
                    if ((u <= 0.f ? 0.f : inter / u) >= NMS_THRESHOLD) q[0] = -1.f;
                }
            }
            __syncthreads();
        }
        for (long long e = threadIdx.x; e < NA * 6; e += blockDim.x) out[b * NA * 6 + e] = srt[e];
        __syncthreads();
    }
"""


def render_detection(a: dict, items: int, classes: int, anchors: int, dtype: str) -> Rendered:
    """MultiBoxDetection: parameters ``out, cls_prob, loc_pred, anchor, rows, sorted`` (two
    float scratch arrays of items x anchors x 6)."""
    v = a["variances"]
    clip = "fminf(fmaxf(X, 0.f), 1.f)" if a["clip"] else "(X)"
    body = _DETECTION
    for k in range(4):
        body = body.replace(f"CLIP({('ox - ow', 'oy - oh', 'ox + ow', 'oy + oh')[k]})",
                            clip.replace("X", ("ox - ow", "oy - oh", "ox + ow", "oy + oh")[k]))
    body = with_constants(body, {
        "ITEMS": items, "NC": classes, "NA": anchors, "DT": ctype(dtype),
        "THRESHOLD": float(a["threshold"]), "V0": float(v[0]), "V1": float(v[1]),
        "V2": float(v[2]), "V3": float(v[3]), "TOPK": a["nms_topk"],
        "NMS_ON": 0 < a["nms_threshold"] <= 1, "FORCE": bool(a["force_suppress"]),
        "NMS_THRESHOLD": float(a["nms_threshold"])})
    params = [ptr("out", dtype, False), ptr("cls_prob", dtype), ptr("loc_pred", dtype),
              ptr("anchor", dtype), "float* __restrict__ rows", "float* __restrict__ sorted"]
    return block_kernel("multibox_detection", f"{sorted(a.items())},{items},{classes},"
                        f"{anchors}", params, body, (dtype,))


_TARGET = r"""
    __shared__ float best_v[MAXT];
    __shared__ long long best_i[MAXT];
    __shared__ int info[2];  // truths, positives
    for (long long b = blockIdx.x; b < ITEMS; b += gridDim.x) {
        const DT* lab = label + b * NL * LW;
        const DT* pred = cls_pred + b * NC * NA;
        int* flag = flags + b * NA;
        int* match = matches + b * NA;
        float* best = ious + b * NA;
        float* key = keys + b * NA;
        int* done = gt_done + b * NL;
        if (threadIdx.x == 0) {
            int n = 0;
            while (n < NL && sg_ld(lab[n * LW]) != -1.f) ++n;
            info[0] = n;
        }
        for (long long i = threadIdx.x; i < NA; i += blockDim.x) {
            flag[i] = -1; match[i] = -1; best[i] = -1.f;
            cls_t[b * NA + i] = IGNORE;
            for (int k = 0; k < 4; ++k) { loc_t[(b * NA + i) * 4 + k] = 0.f; mask_t[(b * NA + i) * 4 + k] = 0.f; }
        }
        for (long long k = threadIdx.x; k < NL; k += blockDim.x) done[k] = 0;
        __syncthreads();
        const int ngt = info[0];
        if (ngt == 0) continue;
        for (int round = 0; round < ngt; ++round) {
            float bv = 1e-6f; long long bi = -1;
            for (long long i = threadIdx.x; i < NA; i += blockDim.x) {
                if (flag[i] == 1) continue;
                for (int k = 0; k < ngt; ++k) {
                    if (done[k]) continue;
                    const float v = IOU(i, k);
                    if (v > bv) { bv = v; bi = i * ngt + k; }
                }
            }
            best_v[threadIdx.x] = bv; best_i[threadIdx.x] = bi;
            __syncthreads();
            if (threadIdx.x == 0) {
                for (int t = 1; t < (int)blockDim.x; ++t)
                    if (best_i[t] >= 0 && (best_v[t] > best_v[0] ||
                        (best_v[t] == best_v[0] && (best_i[0] < 0 || best_i[t] < best_i[0])))) {
                        best_v[0] = best_v[t]; best_i[0] = best_i[t];
                    }
                if (best_i[0] >= 0) {
                    const long long i = best_i[0] / ngt, k = best_i[0] % ngt;
                    flag[i] = 1; match[i] = (int)k; best[i] = best_v[0]; done[k] = 1;
                }
            }
            __syncthreads();
            if (best_i[0] < 0) break;
            __syncthreads();
        }
        for (long long i = threadIdx.x; i < NA; i += blockDim.x) {
            if (flag[i] == 1) continue;
            float bv = -1.f; int bk = -1;
            for (int k = 0; k < ngt; ++k) { const float v = IOU(i, k); if (v > bv) { bv = v; bk = k; } }
            best[i] = bv; match[i] = bk;
            if (OVERLAP > 0.f && bv > OVERLAP) flag[i] = 2;  // positive, counted below
        }
        __syncthreads();
        if (threadIdx.x == 0) {
            int pos = 0;
            for (long long i = 0; i < NA; ++i) { if (flag[i] == 2) flag[i] = 1; pos += flag[i] == 1; }
            info[1] = pos;
        }
        __syncthreads();
        const int npos = info[1];
        int nneg = (int)(npos * RATIO);
        if (nneg > NA - npos) nneg = NA - npos;
        for (long long i = threadIdx.x; i < NA; i += blockDim.x) {
            key[i] = -1.f;
            if (!(RATIO > 0.f) || flag[i] != -1 || !(best[i] < MINE_THRESH)) continue;
            float mx = sg_ld(pred[i]);
            for (int k = 1; k < NC; ++k) mx = fmaxf(mx, sg_ld(pred[k * NA + i]));
            float sum = 0.f;
            for (int k = 0; k < NC; ++k) sum += expf(sg_ld(pred[k * NA + i]) - mx);
            key[i] = expf(sg_ld(pred[i]) - mx) / sum;
        }
        __syncthreads();
        for (long long i = threadIdx.x; i < NA; i += blockDim.x) {
            if (RATIO > 0.f) {
                if (key[i] < 0.f) continue;
                long long rank = 0;
                for (long long t = 0; t < NA; ++t)
                    rank += key[t] >= 0.f && (key[t] < key[i] || (key[t] == key[i] && t < i));
                if (rank < nneg) cls_t[b * NA + i] = 0.f;
            } else if (flag[i] != 1) {
                cls_t[b * NA + i] = 0.f;
            }
        }
        for (long long i = threadIdx.x; i < NA; i += blockDim.x) {
            if (flag[i] != 1) continue;
            const DT* g = lab + match[i] * LW;
            cls_t[b * NA + i] = sg_ld(g[0]) + 1.f;
            const float al = sg_ld(anchor[i * 4]), at = sg_ld(anchor[i * 4 + 1]);
            const float ar = sg_ld(anchor[i * 4 + 2]), ab = sg_ld(anchor[i * 4 + 3]);
            const float gl = sg_ld(g[1]), gt = sg_ld(g[2]), gr = sg_ld(g[3]), gb = sg_ld(g[4]);
            const float aw = ar - al, ah = ab - at, gw = gr - gl, gh = gb - gt;
            const float t[4] = {((gl + gr) * 0.5f - (al + ar) * 0.5f) / aw / V0,
                                ((gt + gb) * 0.5f - (at + ab) * 0.5f) / ah / V1,
                                logf(gw / aw) / V2, logf(gh / ah) / V3};
            for (int k = 0; k < 4; ++k) {
                loc_t[(b * NA + i) * 4 + k] = t[k];
                mask_t[(b * NA + i) * 4 + k] = 1.f;
            }
        }
        __syncthreads();
    }
"""

_IOU = ("sg_target_iou(anchor + (I) * 4, lab + (K) * LW + 1)")
IOU_HELPER = ("sg_target_iou", r"""
// IoU of an anchor and a truth box (corners), 0 where the union is 0 (MXNet's safe_divide).
template <class A, class G>
__device__ __forceinline__ float sg_target_iou(const A* a, const G* g) {
    const float a0 = sg_ld(a[0]), a1 = sg_ld(a[1]), a2 = sg_ld(a[2]), a3 = sg_ld(a[3]);
    const float g0 = sg_ld(g[0]), g1 = sg_ld(g[1]), g2 = sg_ld(g[2]), g3 = sg_ld(g[3]);
    const float inter = fmaxf(0.f, fminf(a2, g2) - fmaxf(a0, g0)) *
                        fmaxf(0.f, fminf(a3, g3) - fmaxf(a1, g1));
    const float u = (a2 - a0) * (a3 - a1) + (g2 - g0) * (g3 - g1) - inter;
    return u == 0.f ? 0.f : inter / u;
}
""")
TARGET_THREADS = 256


def render_target(a: dict, items: int, labels: int, width: int, classes: int, anchors: int,
                  dtype: str) -> Rendered:
    """MultiBoxTarget: parameters ``loc_t, mask_t, cls_t, anchor, label, cls_pred, flags,
    matches, gt_done, ious, keys`` (int, int, int, float, float scratch)."""
    v = a["variances"]
    body = _TARGET.replace("IOU(i, k)", _IOU.replace("(I)", "i").replace("(K)", "k"))
    body = with_constants(body, {
        "ITEMS": items, "NL": labels, "LW": width, "NC": classes, "NA": anchors,
        "DT": ctype(dtype), "MAXT": TARGET_THREADS, "IGNORE": float(a["ignore_label"]),
        "OVERLAP": float(a["overlap_threshold"]), "RATIO": float(a["negative_mining_ratio"]),
        "MINE_THRESH": float(a["negative_mining_thresh"]), "V0": float(v[0]),
        "V1": float(v[1]), "V2": float(v[2]), "V3": float(v[3])})
    params = [ptr("loc_t", dtype, False), ptr("mask_t", dtype, False),
              ptr("cls_t", dtype, False), ptr("anchor", dtype), ptr("label", dtype),
              ptr("cls_pred", dtype), "int* __restrict__ flags", "int* __restrict__ matches",
              "int* __restrict__ gt_done", "float* __restrict__ ious",
              "float* __restrict__ keys"]
    kern = block_kernel("multibox_target", f"{sorted(a.items())},{items},{labels},{width},"
                        f"{classes},{anchors}", params, body, (dtype,))
    return Rendered(kern.name, kern.source, kern.n_ptr, helpers=kern.helpers + (IOU_HELPER,))
