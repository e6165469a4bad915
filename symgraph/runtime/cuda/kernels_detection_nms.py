"""C templates of the detection ops that sort and suppress (``lowering_detection.py``):
box_nms, bipartite_matching, MultiBoxDetection and MultiBoxTarget, each one kernel with a block
per batch item (grid-stride over the items).

Sorting is by rank: a thread per element counts the elements that come before it (a larger
score, or an equal one earlier: the stable order of the numpy references) and writes itself at
that position of a scratch order. Suppression walks the sorted candidates serially with a
``__syncthreads`` per reference box while the threads test the boxes after it; the greedy
matchings run on thread 0 (MultiBoxTarget's argmax over (anchor, truth) pairs is a block
reduction). Quadratic in the boxes per item, correct first; any block size works, so the host
tests run them with one thread. Values are computed in float from buffers of any float dtype.
"""
from __future__ import annotations

from .codegen import Rendered, c_float, ctype, dtype_helpers, kernel_name, kernel_source, ptr
from .kernels_conv_pool import BLOCK_SIZE_FREE
from .kernels_detection import BOX_HELPER, load_box, with_constants

_NMS = r"""
    __shared__ int info[2];  // valid candidates, kept boxes
    for (long long b = blockIdx.x; b < ITEMS; b += gridDim.x) {
        const DT* x = data + b * N * WD;
        DT* y = out + b * N * WD;
        DT* rec = record + b * N;
        int* ord = order + b * N;
        int* alive = flags + b * N;
        if (TOPK == 0) {
            for (long long e = threadIdx.x; e < N * WD; e += blockDim.x) y[e] = x[e];
            for (long long e = threadIdx.x; e < N; e += blockDim.x) rec[e] = (float)(b * N + e);
            continue;
        }
        for (long long i = threadIdx.x; i < N; i += blockDim.x) {
            if (!VALID(i)) continue;
            const float s = SCORE(i);
            long long rank = 0;
            for (long long t = 0; t < N; ++t)
                rank += VALID(t) && (SCORE(t) > s || (SCORE(t) == s && t < i));
            ord[rank] = (int)i;
        }
        if (threadIdx.x == 0) {
            int count = 0;
            for (long long t = 0; t < N; ++t) count += VALID(t) ? 1 : 0;
            info[0] = count < TOPK ? count : TOPK;
        }
        __syncthreads();
        const int cand = info[0];
        for (int k = threadIdx.x; k < cand; k += blockDim.x) alive[k] = 1;
        __syncthreads();
        for (int ref = 0; ref < cand; ++ref) {
            if (alive[ref]) {
                const long long p = ord[ref];
                const sg_box a = BOX(p);
                for (int k = ref + 1 + threadIdx.x; k < cand; k += blockDim.x) {
                    const long long q = ord[k];
                    if (!alive[k] || !SAME_CLASS(p, q)) continue;
                    const sg_box o = BOX(q);
                    const float inter = sg_box_inter(a, o);
                    if (inter / (sg_box_area(a) + sg_box_area(o) - inter) > THRESH) alive[k] = 0;
                }
            }
            __syncthreads();
        }
        if (threadIdx.x == 0) {
            int kept = 0;
            for (int k = 0; k < cand; ++k) if (alive[k]) ord[kept++] = ord[k];
            info[1] = kept;
        }
        __syncthreads();
        const int kept = info[1];
        for (long long e = threadIdx.x; e < N * WD; e += blockDim.x) {
            const long long row = e / WD, col = e % WD;
            if (row >= kept) { y[e] = -1.f; continue; }
            const long long src = ord[row];
            float v = sg_ld(x[src * WD + col]);
            if (CONVERT && col >= CS && col < CS + 4 && sg_ld(x[src * WD + CS]) >= 0.f) v = CONVERTED;
            y[e] = v;
        }
        for (long long r = threadIdx.x; r < N; r += blockDim.x)
            rec[r] = r < kept ? (float)(b * N + ord[r]) : -1.f;
        __syncthreads();
    }
"""

_TO_CENTER = ("(col - CS < 2 ? (sg_ld(x[src * WD + col]) + sg_ld(x[src * WD + col + 2])) / 2 "
              ": sg_ld(x[src * WD + col]) - sg_ld(x[src * WD + col - 2]))")
_TO_CORNER = ("(col - CS < 2 ? sg_ld(x[src * WD + col]) - sg_ld(x[src * WD + col + 2]) / 2 "
              ": sg_ld(x[src * WD + col - 2]) + sg_ld(x[src * WD + col]) / 2)")


def block_kernel(stem: str, key: str, params: list[str], body: str,
                 dtypes: tuple = ()) -> Rendered:
    """A kernel of ``body`` (a block per item loop) over ``params`` and ``long long n``."""
    tag = kernel_name(stem, key + ",".join(params) + body)
    src = f"// {BLOCK_SIZE_FREE}\n" + kernel_source(tag, ", ".join(params + ["long long n"]),
                                                       body)
    helpers = dtype_helpers(*dtypes) + (BOX_HELPER,)
    return Rendered(tag, src, len(params), helpers=helpers)


def render_box_nms(a: dict, items: int, n: int, width: int, dtype: str) -> Rendered:
    """box_nms over ``items`` x ``n`` boxes of ``width`` values: parameters ``out, record,
    data, order, flags`` (two int scratch arrays of items x n)."""
    cs, si, ii = a["coord_start"], a["score_index"], a["id_index"]
    valid = f"(sg_ld(x[(I) * WD + {si}]) > {c_float(a['valid_thresh'])}"
    if ii >= 0:
        valid += f" && sg_ld(x[(I) * WD + {ii}]) != {c_float(float(a['background_id']))}"
    same = ("true" if a["force_suppress"] or ii < 0 else
            f"((int)sg_ld(x[(P) * WD + {ii}]) == (int)sg_ld(x[(Q) * WD + {ii}]))")
    convert = a["in_format"] != a["out_format"]
    body = _NMS.replace("VALID(i)", valid.replace("(I)", "i") + ")").replace(
        "VALID(t)", valid.replace("(I)", "t") + ")")
    body = body.replace("SCORE(i)", f"sg_ld(x[i * WD + {si}])").replace(
        "SCORE(t)", f"sg_ld(x[t * WD + {si}])")
    body = body.replace("SAME_CLASS(p, q)", same.replace("(P)", "p").replace("(Q)", "q"))
    body = body.replace("BOX(p)", load_box("x", f"p * WD + {cs}", a["in_format"] == "center"))
    body = body.replace("BOX(q)", load_box("x", f"q * WD + {cs}", a["in_format"] == "center"))
    body = body.replace("CONVERTED", _TO_CENTER if a["out_format"] == "center" else _TO_CORNER)
    topk = n if a["topk"] < 0 else min(n, a["topk"])
    body = with_constants(body, {"ITEMS": items, "TOPK": topk, "THRESH":
                                 float(a["overlap_thresh"]), "CONVERT": convert,
                                 "DT": ctype(dtype), "N": n, "WD": width, "CS": cs})
    params = [ptr("out", dtype, False), ptr("record", dtype, False), ptr("data", dtype),
              "int* __restrict__ order", "int* __restrict__ flags"]
    return block_kernel("box_nms", str(sorted(a.items())) + f"{items},{n},{width}", params,
                        body, (dtype,))


_MATCHING = r"""
    for (long long b = blockIdx.x; b < ITEMS; b += gridDim.x) {
        const DT* s = data + b * RC;
        int* ord = order + b * RC;
        for (long long j = threadIdx.x; j < RC; j += blockDim.x) {
            const float v = sg_ld(s[j]);
            long long rank = 0;
            for (long long t = 0; t < RC; ++t) {
                const float w = sg_ld(s[t]);
                rank += BEFORE || (w == v && t < j);
            }
            ord[rank] = (int)j;
        }
        for (long long r = threadIdx.x; r < ROWS; r += blockDim.x) rows[b * ROWS + r] = -1.f;
        for (long long c = threadIdx.x; c < COLS; c += blockDim.x) cols[b * COLS + c] = -1.f;
        __syncthreads();
        if (threadIdx.x == 0) {
            long long count = 0;
            for (long long k = 0; k < RC; ++k) {
                const long long j = ord[k], r = j / COLS, c = j % COLS;
                if (sg_ld(rows[b * ROWS + r]) != -1.f || sg_ld(cols[b * COLS + c]) != -1.f)
                    continue;
                const float v = sg_ld(s[j]);
                if (!(PASSES)) break;
                rows[b * ROWS + r] = (float)c;
                cols[b * COLS + c] = (float)r;
                if (++count > TOPK && TOPK > 0) break;
            }
        }
        __syncthreads();
    }
"""


def render_matching(items: int, rows: int, cols: int, ascend: bool, threshold: float,
                    topk: int, dtype: str) -> Rendered:
    """bipartite_matching: parameters ``rows, cols, data, order`` (int scratch items x
    rows x cols)."""
    before, passes = (("w < v", f"v < {c_float(threshold)}") if ascend else
                      ("w > v", f"v > {c_float(threshold)}"))
    body = with_constants(_MATCHING, {"BEFORE": f"({before})", "PASSES": passes,
                                      "ITEMS": items, "RC": rows * cols, "ROWS": rows,
                                      "COLS": cols, "TOPK": topk, "DT": ctype(dtype)})
    params = [ptr("rows", dtype, False), ptr("cols", dtype, False), ptr("data", dtype),
              "int* __restrict__ order"]
    return block_kernel("bipartite_matching", f"{items},{rows},{cols},{ascend},{threshold},"
                         f"{topk}", params, body, (dtype,))
