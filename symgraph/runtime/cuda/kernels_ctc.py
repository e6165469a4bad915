"""C template of ``lowering_ctc``: the CTC loss and its gradient (``ops/ctc.py``), one kernel.

A block takes one sequence at a time (grid-stride over the batch). Its threads run over the
``S = 2L+1`` states of the extended label (a blank around every label) and step through time
with a ``__syncthreads`` per step, in log space as the numpy reference does:

1. thread 0 reads the sequence's data and label lengths (given, or the full T and the labels up
   to the first pad); the threads check every label (a length or a label out of range makes the
   loss and the sequence's gradient NaN: the GPU cannot raise the CPU's DataError);
2. the log-sum-exp of each step's activations (a thread per step, one online pass over the
   classes): ``log p = x - lse``, the log-softmax MXNet applies to its unnormalised input;
3. each label position is linked to the next one of the same class, and the first of each
   class owns the chain (``owner[class]``), so a class's occupancy is summed without atomics,
   in a fixed order;
4. forward: log alpha of every (step, state), kept in float32 scratch (steps x states);
5. backward, from the last step: log beta of the step (two rows of scratch, alternating), the
   blank's occupancy as a block sum over the even states, then a thread per class writes
   ``softmax - occupancy``; rows past the sequence's length, and every row of an impossible
   alignment (loss inf), are 0.

Activations and outputs are stored in their dtype (float32, float16, bfloat16) and computed in
float; labels and lengths are read in any float or integer type.
"""
from __future__ import annotations

from .codegen import Rendered, c_float, ctype, dtype_helpers, index_load, kernel_name, ptr
from .codegen import with_dtype
from .kernels_conv_pool import BLOCK_SIZE_FREE
from .kernels_row_norm import BLOCK_SUM

LOGADDEXP = ("sg_logaddexp", r"""
// log(e^a + e^b), -inf when both are (no NaN from -inf - -inf).
__device__ __forceinline__ float sg_logaddexp(float a, float b) {
    const float m = fmaxf(a, b);
    if (!(m > __int_as_float(0xff800000))) return m;
    return m + log1pf(expf(-fabsf(a - b)));
}
""")

# The kernel after its constants and the C of the lengths (``STEPS``, ``LENS``); ``LAB(i)`` is
# label i of the sequence as a number, ``LABEL_OK(v)`` whether a loaded label is valid.
_BODY = r"""
    __shared__ float red[1024];
    // steps, label length, 1 when a length is out of range, 1 when a label is
    __shared__ long long info[4];
    for (int b = blockIdx.x; b < N; b += gridDim.x) {
        const lab_t* lab = label + (long long)b * L;
        float* al = alpha + (long long)b * T * S_MAX;
        float* ls = lse + (long long)b * T;
        float* bt = beta + (long long)b * 2 * S_MAX;
        int* own = owner + (long long)b * C;
        int* nxt = next_same + (long long)b * L_ROWS;
        if (threadIdx.x == 0) {
            const long long steps = STEPS;
            long long lens = LENS;
            info[0] = steps;
            info[1] = lens;
            info[2] = steps < 0 || steps > T || lens < 0 || lens > L;
            info[3] = 0;
        }
        __syncthreads();
        if (info[2] == 0)
            for (long long i = threadIdx.x; i < info[1]; i += blockDim.x) {
                const auto v = LAB(i);
                if (!(v >= LOW && v <= HIGH && LABEL_OK(v))) info[3] = 1;
            }
        __syncthreads();
        const bool bad = info[2] != 0 || info[3] != 0;
        const int steps = bad ? 0 : (int)info[0], len = bad ? 0 : (int)info[1];
        const int S = 2 * len + 1;
        auto ext = [&](int s) -> int { return (s & 1) ? (int)LAB(s >> 1) : BLANK; };
        // a label state may be entered from two states back unless it repeats that label
        auto skip = [&](int s) -> bool { return (s & 1) && s >= 2 && ext(s) != ext(s - 2); };
        for (int k = threadIdx.x; k < C; k += blockDim.x) own[k] = -1;
        for (int t = threadIdx.x; t < steps; t += blockDim.x) {
            const x_t* row = x + ((long long)t * N + b) * C;
            float m = NEG_INF, e = 0.f;
            for (int k = 0; k < C; ++k) {
                const float v = sg_ld(row[k]);
                if (v > m) { e = e * expf(m - v) + 1.f; m = v; } else e += expf(v - m);
            }
            ls[t] = m + logf(e);
        }
        __syncthreads();
        for (int i = threadIdx.x; i < len; i += blockDim.x) {
            const int c = ext(2 * i + 1);
            int j = i + 1, p = i - 1;
            while (j < len && ext(2 * j + 1) != c) ++j;
            while (p >= 0 && ext(2 * p + 1) != c) --p;
            nxt[i] = j < len ? j : -1;
            if (p < 0) own[c] = i;
        }
        for (int t = 0; t < steps; ++t) {
            const x_t* row = x + ((long long)t * N + b) * C;
            for (int s = threadIdx.x; s < S; s += blockDim.x) {
                float a = s < 2 ? 0.f : NEG_INF;
                if (t > 0) {
                    const float* prev = al + (long long)(t - 1) * S;
                    a = prev[s];
                    if (s >= 1) a = sg_logaddexp(a, prev[s - 1]);
                    if (skip(s)) a = sg_logaddexp(a, prev[s - 2]);
                }
                al[(long long)t * S + s] = a + (sg_ld(row[ext(s)]) - ls[t]);
            }
            __syncthreads();
        }
        float total = len == 0 ? 0.f : NEG_INF;
        if (steps > 0) {
            const float* last = al + (long long)(steps - 1) * S;
            total = S > 1 ? sg_logaddexp(last[S - 1], last[S - 2]) : last[0];
        }
        const bool ok = !bad && total > NEG_INF;
        if (threadIdx.x == 0) loss[b] = bad ? NAN_F : -total;
        const int done = ok ? steps : 0;
        for (int t = done - 1; t >= 0; --t) {
            const x_t* row = x + ((long long)t * N + b) * C;
            const float* at = al + (long long)t * S;
            const float* nb = bt + ((t + 1) & 1) * S;
            float* cur = bt + (t & 1) * S;  // log beta + log p of the state's class at t
            float part = 0.f;
            for (int s = threadIdx.x; s < S; s += blockDim.x) {
                float be = s >= S - 2 ? 0.f : NEG_INF;
                if (t < steps - 1) {
                    be = nb[s];
                    if (s + 1 < S) be = sg_logaddexp(be, nb[s + 1]);
                    if (s + 2 < S && skip(s + 2)) be = sg_logaddexp(be, nb[s + 2]);
                }
                cur[s] = be + (sg_ld(row[ext(s)]) - ls[t]);
                if (!(s & 1)) part += expf(at[s] + be - total);
            }
            const float blank_occ = sg_block_sum(part, red);  // its barriers publish cur
            x_t* g = grad + ((long long)t * N + b) * C;
            for (int k = threadIdx.x; k < C; k += blockDim.x) {
                const float lp = sg_ld(row[k]) - ls[t];
                float occ = k == BLANK ? blank_occ : 0.f;
                for (int i = own[k]; i >= 0; i = nxt[i])
                    occ += expf(at[2 * i + 1] + cur[2 * i + 1] - lp - total);
                g[k] = expf(lp) - occ;
            }
        }
        const float fill = bad ? NAN_F : 0.f;
        for (long long e = (long long)done * C + threadIdx.x; e < (long long)T * C;
             e += blockDim.x)
            grad[((e / C) * N + b) * C + e % C] = fill;
        __syncthreads();  // info is the next sequence's
    }
"""

SCRATCH = ("alpha", "lse", "beta", "owner", "next_same")


def states(label_len: int) -> int:
    """States of the longest extended label: a blank around every label."""
    return 2 * label_len + 1


def scratch_counts(t: int, n: int, c: int, label_len: int) -> list[tuple[int, str]]:
    """(element count, dtype) of each scratch buffer, in :data:`SCRATCH` order."""
    s = states(label_len)
    return [(n * t * s, "float32"), (n * t, "float32"), (n * 2 * s, "float32"),
            (n * c, "int32"), (n * max(label_len, 1), "int32")]


def block_for(label_len: int, classes: int) -> int:
    """Threads of a sequence's block: one per state (or class, if more), a multiple of 32,
    at most 256."""
    want = max(states(label_len), min(classes, 256))
    return min(256, max(32, -(-want // 32) * 32))


def _length(given: str | None, element: str, default: str) -> str:
    """C of a sequence length: ``default``, or the given one truncated toward zero."""
    if given is None:
        return default
    return f"(long long){index_load(element, given)[1]}"


def _constants(t: int, n: int, c: int, label_len: int, blank_first: bool) -> str:
    blank, low, high = (0, 1, c - 1) if blank_first else (c - 1, 0, c - 2)
    return (f"    constexpr int T = {t}, N = {n}, C = {c}, L = {label_len}, "
            f"L_ROWS = {max(label_len, 1)}, S_MAX = {states(label_len)};\n"
            f"    constexpr int BLANK = {blank}, LOW = {low}, HIGH = {high};\n")


def render_ctc(t: int, n: int, c: int, label_len: int, blank_first: bool, x_t: str,
               label_t: str, steps_t: str | None = None, lens_t: str | None = None) -> Rendered:
    """The CTC kernel over (T, N, C) activations of ``x_t`` and (N, L) labels of ``label_t``;
    ``steps_t`` / ``lens_t``: the dtypes of the data and label lengths when given. Parameters:
    ``loss, grad, x, label[, data_lengths][, label_lengths]``, the :data:`SCRATCH` buffers,
    then ``n`` (unused)."""
    pad = "0" if blank_first else "-1"
    lab_kind, lab = index_load("lab[IDX]", label_t)
    scan = (f"[&]() -> long long {{ for (long long i = 0; i < L; ++i) "
            f"if (LAB(i) == {pad}) return i; return L; }}()")
    body = (_BODY.replace("STEPS", _length(steps_t, "steps_in[b]", "T"))
            .replace("LENS", _length(lens_t, "lens_in[b]", scan))
            .replace("LAB(i)", lab.replace("IDX", "i")).replace("LAB(s >> 1)",
                                                                 lab.replace("IDX", "s >> 1"))
            .replace("LABEL_OK(v)", "v == truncf(v)" if lab_kind == "float" else "true")
            .replace("NEG_INF", c_float(float("-inf"))).replace("NAN_F", c_float(float("nan"))))
    params = [ptr("loss", x_t, False), ptr("grad", x_t, False), ptr("x", x_t),
              ptr("label", label_t)]
    params += [] if steps_t is None else [ptr("steps_in", steps_t)]
    params += [] if lens_t is None else [ptr("lens_in", lens_t)]
    params += [ptr(name, dt, False) for name, (_, dt) in
               zip(SCRATCH, scratch_counts(t, n, c, label_len))]
    types = f"    typedef {ctype(x_t)} x_t;\n    typedef {ctype(label_t)} lab_t;\n"
    full = (f"    {BLOCK_SIZE_FREE}\n{types}{_constants(t, n, c, label_len, blank_first)}"
            f"{body}")
    sig = ", ".join(params)
    tag = kernel_name(with_dtype("ctc_loss", x_t), sig + full)
    src = f"extern \"C\" __global__ void {tag}({sig}, long long n) {{\n{full}}}\n"
    return Rendered(tag, src, len(params),
                    helpers=(BLOCK_SUM, LOGADDEXP) + dtype_helpers(x_t, label_t,
                                                                   steps_t or "", lens_t or ""))
