"""Device functions of the samplers' kernels (``kernels_random_draw``): a stream of random
words per element, drawn from the Philox-4x32-10 generator of ``kernels_random``, and the
laws built on it.

Element ``i`` of a step reads Philox of counter ``(i, SALT, j)`` for j = 0, 1, ... (four
words each), so its draws depend only on the step's key and ``i``, never on the launch
geometry, however many words a rejection loop takes. The laws:

* uniform: the top 24 bits of a word (exact floats in [0, 1)); normal: Box-Muller;
* exponential: inversion of the CDF;
* gamma: Marsaglia and Tsang's squeeze and rejection ("A simple method for generating gamma
  variables", 2000), alpha < 1 through Gamma(alpha + 1) * u^(1/alpha);
* Poisson: inversion of the CDF below ``POISSON_SPLIT``, Hoermann's PTRS transformed rejection
  ("The transformed rejection method for generating Poisson random variables", 1993) above,
  in double: its acceptance test subtracts terms of size lam log lam;
* negative binomial and the generalized one: a Poisson of a gamma-distributed rate;
* integers in [low, high): 64 random bits modulo the range (bias below range / 2^64).

A parameter out of the law's range gives NaN (a kernel cannot raise; the CPU checks them).
"""
from __future__ import annotations

SALT = 0x5367  # keeps the samplers' streams apart from Dropout's counters (word z = 0)
POISSON_SPLIT = 12.0  # below: inversion (about lam + 1 steps); above: PTRS (about 1.2 trials)

RNG_NAME = "sg_rng"
RNG_SOURCE = f"""\
// The random words of one element: Philox(counter (i, SALT, draw), key), four per draw.
struct sg_rng {{ uint2 key; unsigned int lo, hi, draw, left; uint4 bits; }};
__device__ __forceinline__ sg_rng sg_rng_at(unsigned long long key, long long i) {{
    sg_rng s;
    s.key = make_uint2((unsigned int)key, (unsigned int)(key >> 32));
    s.lo = (unsigned int)i;
    s.hi = (unsigned int)((unsigned long long)i >> 32);
    s.draw = 0u;
    s.left = 0u;
    return s;
}}
__device__ __forceinline__ unsigned int sg_rng_u32(sg_rng& s) {{
    if (s.left == 0u) {{
        s.bits = sg_philox4x32_10(make_uint4(s.lo, s.hi, {SALT}u, s.draw), s.key);
        s.draw += 1u;
        s.left = 4u;
    }}
    s.left -= 1u;
    return s.left == 3u ? s.bits.x : s.left == 2u ? s.bits.y : s.left == 1u ? s.bits.z
                                                                       : s.bits.w;
}}
__device__ __forceinline__ unsigned long long sg_rng_u64(sg_rng& s) {{
    const unsigned long long high = sg_rng_u32(s);
    return (high << 32) | sg_rng_u32(s);
}}
// [0, 1) from the top 24 bits: every value an exact float.
__device__ __forceinline__ float sg_rng_uniform(sg_rng& s) {{
    return (float)(sg_rng_u32(s) >> 8) * (1.f / 16777216.f);
}}
// (0, 1]: its logarithm is finite.
__device__ __forceinline__ float sg_rng_open(sg_rng& s) {{
    return (float)((sg_rng_u32(s) >> 8) + 1u) * (1.f / 16777216.f);
}}
// [0, 1) in double from 53 bits (the Poisson's inversion and rejection tests).
__device__ __forceinline__ double sg_rng_uniform_d(sg_rng& s) {{
    return (double)(sg_rng_u64(s) >> 11) * (1.0 / 9007199254740992.0);
}}
__device__ __forceinline__ float sg_rng_normal(sg_rng& s) {{
    const float u1 = sg_rng_open(s);
    const float u2 = sg_rng_uniform(s);
    return sqrtf(-2.f * logf(u1)) * cospif(2.f * u2);
}}
"""

LAWS_NAME = "sg_rng_laws"
LAWS_SOURCE = f"""\
// Gamma(alpha, 1): Marsaglia-Tsang; alpha < 1 as Gamma(alpha + 1) * u^(1/alpha).
__device__ inline float sg_rng_gamma(sg_rng& s, float alpha) {{
    if (!(alpha > 0.f)) return __int_as_float(0x7fffffff);
    const float boost = alpha < 1.f ? powf(sg_rng_open(s), 1.f / alpha) : 1.f;
    const float d = (alpha < 1.f ? alpha + 1.f : alpha) - 1.f / 3.f;
    const float c = 1.f / sqrtf(9.f * d);
    for (;;) {{
        float x, v;
        do {{
            x = sg_rng_normal(s);
            v = 1.f + c * x;
        }} while (v <= 0.f);
        v = v * v * v;
        const float u = sg_rng_open(s);
        if (u < 1.f - 0.0331f * (x * x) * (x * x)) return d * v * boost;
        // the exact test, rarely reached; in double, since 1 - v + log v cancels for large d
        const double vd = 1.0 + (double)c * x;
        const double v3 = vd * vd * vd;
        if (log((double)u) < 0.5 * x * x + d * (1.0 - v3 + log(v3))) return d * v * boost;
    }}
}}
// Poisson(lam): inversion below {POISSON_SPLIT}, PTRS above (Hoermann 1993).
__device__ inline float sg_rng_poisson(sg_rng& s, float lam) {{
    if (!(lam >= 0.f)) return __int_as_float(0x7fffffff);
    if (isinf(lam)) return lam;
    if (lam < {POISSON_SPLIT}f) {{
        double u = sg_rng_uniform_d(s), p = exp(-(double)lam);
        int k = 0;
        while (u >= p && k < 200) {{  // P(k >= 200) < 1e-150 below the split
            u -= p;
            k += 1;
            p *= (double)lam / k;
        }}
        return (float)k;
    }}
    const double slam = sqrt((double)lam), loglam = log((double)lam);
    const double b = 0.931 + 2.53 * slam, a = -0.059 + 0.02483 * b;
    const double inv_alpha = 1.1239 + 1.1328 / (b - 3.4), v_r = 0.9277 - 3.6224 / (b - 2.0);
    for (;;) {{
        const double u = sg_rng_uniform_d(s) - 0.5;
        const double v = sg_rng_uniform_d(s);
        const double us = 0.5 - fabs(u);
        const double k = floor((2.0 * a / us + b) * u + lam + 0.43);
        if (us >= 0.07 && v <= v_r) return (float)k;
        if (k < 0.0 || (us < 0.013 && v > us)) continue;
        if (log(v) + log(inv_alpha) - log(a / (us * us) + b)
                <= -lam + k * loglam - lgamma(k + 1.0)) return (float)k;
    }}
}}
// Failures before the k-th success of probability p: Poisson(Gamma(k, (1 - p) / p)).
__device__ inline float sg_rng_negative_binomial(sg_rng& s, float k, float p) {{
    return sg_rng_poisson(s, sg_rng_gamma(s, k) * ((1.f - p) / p));
}}
// Mean mu, variance mu + alpha mu^2: Poisson(Gamma(1/alpha, alpha mu)); Poisson(mu) at 0.
__device__ inline float sg_rng_generalized_negative_binomial(sg_rng& s, float mu, float alpha) {{
    if (alpha == 0.f) return sg_rng_poisson(s, mu);
    return sg_rng_poisson(s, sg_rng_gamma(s, 1.f / alpha) * (alpha * mu));
}}
"""

# law: (C type of its parameters a and b, C expression of one draw from stream ``st``)
LAW_DRAWS: dict[str, tuple[str, str]] = {
    "uniform": ("float", "a + (b - a) * sg_rng_uniform(st)"),
    "normal": ("float", "a + b * sg_rng_normal(st)"),
    "gamma": ("float", "b * sg_rng_gamma(st, a)"),  # beta: a scale when sampling
    "exponential": ("float", "-logf(sg_rng_open(st)) / a"),  # lam: a rate
    "poisson": ("float", "sg_rng_poisson(st, a)"),
    "negative_binomial": ("float", "sg_rng_negative_binomial(st, truncf(a), b)"),  # k: a count
    "generalized_negative_binomial": ("float", "sg_rng_generalized_negative_binomial(st, a, b)"),
    "randint": ("long long", "a + (long long)(sg_rng_u64(st) % (unsigned long long)(b - a))"),
}
