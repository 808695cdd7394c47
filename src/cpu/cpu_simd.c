/*
 * cpu_simd.c — the vector kernels of the CPU back end: a portable scalar table and an
 * AVX2+FMA table (compiled with __attribute__((target)), chosen at run time), no -march.
 *
 * Each kernel has a fixed reduction order for its table. The scalar dot products are one
 * fmaf chain in order of c. The AVX2 ones keep two 8-lane accumulators over blocks of 16, put
 * a last block of 8 into the first, add the two, reduce the 8 lanes pairwise, then add the
 * remaining (< 8) elements with fmaf. Two calls with the same inputs give the same bits, which
 * is all that the packed / replay(L=1) identity needs; the two tables need not agree bit for bit.
 */
#include <math.h>
#include <string.h>

#include "core/params.h"
#include "cpu/cpu_internal.h"

/* ---- scalar ------------------------------------------------------------------------------ */

static float dot_scalar(const float *a, const float *b, int n)
{
    float s = 0.0f;
    for (int c = 0; c < n; c++)
        s = fmaf(a[c], b[c], s); /* s += a b */
    return s;
}

static void dot2_scalar(const float *s, const float *x, const float *y, int n, float *dx, float *dy)
{
    float a = 0.0f, b = 0.0f;
    for (int c = 0; c < n; c++)
        a = fmaf(s[c], x[c], a), b = fmaf(s[c], y[c], b);
    *dx = a, *dy = b;
}

static float update_dot_scalar(const float *s, const float *alpha, float u, const float *k, const float *q, float *out,
                               int n)
{
    float o = 0.0f;
    for (int c = 0; c < n; c++) {
        const float r = fmaf(u, k[c], s[c] * alpha[c]); /* S alpha + u k */
        out[c] = r;
        o = fmaf(r, q[c], o); /* o += S q */
    }
    return o;
}

static void fold_scalar(const float *s, const float *alpha, int h, const float *w, const float *kw, int ld, float *out,
                        int n)
{
    for (int c = 0; c < n; c++) {
        float r = s[c] * alpha[c];
        for (int i = 0; i < h; i++)
            r = fmaf(w[i], kw[(size_t)i * ld + c], r);
        out[c] = r;
    }
}

static void axpy_scalar(float a, const float *x, float *y, int n)
{
    for (int c = 0; c < n; c++)
        y[c] = fmaf(a, x[c], y[c]);
}

static void bf16_load_scalar(const uint16_t *src, float *dst, int n)
{
    for (int c = 0; c < n; c++)
        dst[c] = rssm_bf16_to_f32(src[c]);
}

static void bf16_store_scalar(const float *src, uint16_t *dst, int n)
{
    for (int c = 0; c < n; c++)
        dst[c] = rssm_f32_to_bf16(src[c]);
}

/* four rows: the one-row kernels, row after row (the fallback does not chase bandwidth) */
static void dot_x4_scalar(const float *const s[4], const float *x, int n, float d[4])
{
    for (int i = 0; i < 4; i++)
        d[i] = dot_scalar(s[i], x, n);
}

static void dot2_x4_scalar(const float *const s[4], const float *x, const float *y, int n, float dx[4], float dy[4])
{
    for (int i = 0; i < 4; i++)
        dot2_scalar(s[i], x, y, n, dx + i, dy + i);
}

static void update_dot_x4_scalar(const float *const s[4], const float *alpha, const float u[4], const float *k,
                                 const float *q, float *const out[4], int n, float o[4])
{
    for (int i = 0; i < 4; i++)
        o[i] = update_dot_scalar(s[i], alpha, u[i], k, q, out[i], n);
}

static void fold_x4_scalar(const float *const s[4], const float *alpha, int h, const float *const w[4], const float *kw,
                           int ld, float *const out[4], int n)
{
    for (int i = 0; i < 4; i++)
        fold_scalar(s[i], alpha, h, w[i], kw, ld, out[i], n);
}

/* in 16 x 16 blocks, so that both sides stay in cache */
static void transpose_scalar(const float *src, int64_t lds, float *dst, int64_t ldd, int rows, int cols)
{
    for (int i0 = 0; i0 < rows; i0 += 16)
        for (int j0 = 0; j0 < cols; j0 += 16)
            for (int i = i0; i < i0 + 16 && i < rows; i++)
                for (int j = j0; j < j0 + 16 && j < cols; j++)
                    dst[(int64_t)j * ldd + i] = src[(int64_t)i * lds + j];
}

const cpu_vec rssm_cpu_vec_scalar = {
    "scalar",         dot_scalar,        dot2_scalar,      update_dot_scalar,    fold_scalar,
    axpy_scalar,      dot_x4_scalar,     dot2_x4_scalar,   update_dot_x4_scalar, fold_x4_scalar,
    bf16_load_scalar, bf16_store_scalar, transpose_scalar,
};

/* ---- AVX2 + FMA ----------------------------------------------------------------------------- */
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#define AVX2 __attribute__((target("avx2,fma")))

AVX2 static inline float hsum8(__m256 v)
{
    __m128 lo = _mm256_castps256_ps128(v), hi = _mm256_extractf128_ps(v, 1);
    lo = _mm_add_ps(lo, hi);                    /* 4 lanes */
    lo = _mm_add_ps(lo, _mm_movehl_ps(lo, lo)); /* 2 lanes */
    lo = _mm_add_ss(lo, _mm_shuffle_ps(lo, lo, 1));
    return _mm_cvtss_f32(lo);
}

/* The one-row kernels are "main loop over blocks of 16, then *_tail"; the four-row kernels
 * run the same main loop for four rows side by side and finish each row with the same tail,
 * so every row gets the same bits from either. */

AVX2 static inline float dot_tail(__m256 s0, __m256 s1, const float *a, const float *b, int c, int n)
{
    if (c + 8 <= n) s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + c), _mm256_loadu_ps(b + c), s0), c += 8;
    float s = hsum8(_mm256_add_ps(s0, s1));
    for (; c < n; c++)
        s = fmaf(a[c], b[c], s);
    return s;
}

AVX2 static float dot_avx2(const float *a, const float *b, int n)
{
    __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
    int c = 0;
    for (; c + 16 <= n; c += 16) {
        s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + c), _mm256_loadu_ps(b + c), s0);
        s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + c + 8), _mm256_loadu_ps(b + c + 8), s1);
    }
    return dot_tail(s0, s1, a, b, c, n);
}

AVX2 static inline void dot_x4_body(const float *const s[4], const float *x, int n, float d[4])
{
    const float *p0 = s[0], *p1 = s[1], *p2 = s[2], *p3 = s[3];
    __m256 a0 = _mm256_setzero_ps(), b0 = a0, a1 = a0, b1 = a0, a2 = a0, b2 = a0, a3 = a0, b3 = a0;
    int c = 0;
    for (; c + 16 <= n; c += 16) {
        const __m256 x0 = _mm256_loadu_ps(x + c), x1 = _mm256_loadu_ps(x + c + 8);
        a0 = _mm256_fmadd_ps(_mm256_loadu_ps(p0 + c), x0, a0);
        a1 = _mm256_fmadd_ps(_mm256_loadu_ps(p1 + c), x0, a1);
        a2 = _mm256_fmadd_ps(_mm256_loadu_ps(p2 + c), x0, a2);
        a3 = _mm256_fmadd_ps(_mm256_loadu_ps(p3 + c), x0, a3);
        b0 = _mm256_fmadd_ps(_mm256_loadu_ps(p0 + c + 8), x1, b0);
        b1 = _mm256_fmadd_ps(_mm256_loadu_ps(p1 + c + 8), x1, b1);
        b2 = _mm256_fmadd_ps(_mm256_loadu_ps(p2 + c + 8), x1, b2);
        b3 = _mm256_fmadd_ps(_mm256_loadu_ps(p3 + c + 8), x1, b3);
    }
    d[0] = dot_tail(a0, b0, p0, x, c, n);
    d[1] = dot_tail(a1, b1, p1, x, c, n);
    d[2] = dot_tail(a2, b2, p2, x, c, n);
    d[3] = dot_tail(a3, b3, p3, x, c, n);
}

AVX2 static void dot_x4_avx2(const float *const s[4], const float *x, int n, float d[4]) { dot_x4_body(s, x, n, d); }

AVX2 static inline void dot2_tail(__m256 a0, __m256 a1, __m256 b0, __m256 b1, const float *s, const float *x,
                                  const float *y, int c, int n, float *dx, float *dy)
{
    if (c + 8 <= n) {
        const __m256 v0 = _mm256_loadu_ps(s + c);
        a0 = _mm256_fmadd_ps(v0, _mm256_loadu_ps(x + c), a0);
        b0 = _mm256_fmadd_ps(v0, _mm256_loadu_ps(y + c), b0);
        c += 8;
    }
    float ra = hsum8(_mm256_add_ps(a0, a1)), rb = hsum8(_mm256_add_ps(b0, b1));
    for (; c < n; c++)
        ra = fmaf(s[c], x[c], ra), rb = fmaf(s[c], y[c], rb);
    *dx = ra, *dy = rb;
}

AVX2 static void dot2_avx2(const float *s, const float *x, const float *y, int n, float *dx, float *dy)
{
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, b0 = a0, b1 = a0;
    int c = 0;
    for (; c + 16 <= n; c += 16) {
        const __m256 v0 = _mm256_loadu_ps(s + c), v1 = _mm256_loadu_ps(s + c + 8);
        a0 = _mm256_fmadd_ps(v0, _mm256_loadu_ps(x + c), a0);
        a1 = _mm256_fmadd_ps(v1, _mm256_loadu_ps(x + c + 8), a1);
        b0 = _mm256_fmadd_ps(v0, _mm256_loadu_ps(y + c), b0);
        b1 = _mm256_fmadd_ps(v1, _mm256_loadu_ps(y + c + 8), b1);
    }
    dot2_tail(a0, a1, b0, b1, s, x, y, c, n, dx, dy);
}

/* dot2 (s, x, y) has exactly the bits of (dot (s, x), dot (s, y)) (same chains, same tail):
 * two passes of dot_x4, the second from L1. Eight accumulators per pass stay in registers;
 * one pass with sixteen spills, and the spill code starves the loads of the four streams
 * (measured: 6.3 vs 13.5 GB/s on one core). */
AVX2 static void dot2_x4_avx2(const float *const s[4], const float *x, const float *y, int n, float dx[4], float dy[4])
{
    dot_x4_body(s, x, n, dx);
    dot_x4_body(s, y, n, dy);
}

AVX2 static inline float update_dot_tail(__m256 o0, __m256 o1, const float *s, const float *alpha, float u,
                                         const float *k, const float *q, float *out, int c, int n)
{
    if (c + 8 <= n) {
        const __m256 r0 = _mm256_fmadd_ps(_mm256_set1_ps(u), _mm256_loadu_ps(k + c),
                                          _mm256_mul_ps(_mm256_loadu_ps(s + c), _mm256_loadu_ps(alpha + c)));
        _mm256_storeu_ps(out + c, r0);
        o0 = _mm256_fmadd_ps(r0, _mm256_loadu_ps(q + c), o0);
        c += 8;
    }
    float o = hsum8(_mm256_add_ps(o0, o1));
    for (; c < n; c++) {
        const float r = fmaf(u, k[c], s[c] * alpha[c]);
        out[c] = r;
        o = fmaf(r, q[c], o);
    }
    return o;
}

AVX2 static float update_dot_avx2(const float *s, const float *alpha, float u, const float *k, const float *q,
                                  float *out, int n)
{
    const __m256 vu = _mm256_set1_ps(u);
    __m256 o0 = _mm256_setzero_ps(), o1 = _mm256_setzero_ps();
    int c = 0;
    for (; c + 16 <= n; c += 16) {
        /* r = fma(u, k, S alpha); o += r q */
        const __m256 r0 = _mm256_fmadd_ps(vu, _mm256_loadu_ps(k + c),
                                          _mm256_mul_ps(_mm256_loadu_ps(s + c), _mm256_loadu_ps(alpha + c)));
        const __m256 r1 = _mm256_fmadd_ps(vu, _mm256_loadu_ps(k + c + 8),
                                          _mm256_mul_ps(_mm256_loadu_ps(s + c + 8), _mm256_loadu_ps(alpha + c + 8)));
        _mm256_storeu_ps(out + c, r0);
        _mm256_storeu_ps(out + c + 8, r1);
        o0 = _mm256_fmadd_ps(r0, _mm256_loadu_ps(q + c), o0);
        o1 = _mm256_fmadd_ps(r1, _mm256_loadu_ps(q + c + 8), o1);
    }
    return update_dot_tail(o0, o1, s, alpha, u, k, q, out, c, n);
}

AVX2 static void update_dot_x4_avx2(const float *const s[4], const float *alpha, const float u[4], const float *k,
                                    const float *q, float *const out[4], int n, float o[4])
{
    __m256 o0[4], o1[4];
    for (int i = 0; i < 4; i++)
        o0[i] = o1[i] = _mm256_setzero_ps();
    int c = 0;
    for (; c + 16 <= n; c += 16) {
        const __m256 k0 = _mm256_loadu_ps(k + c), k1 = _mm256_loadu_ps(k + c + 8);
        const __m256 al0 = _mm256_loadu_ps(alpha + c), al1 = _mm256_loadu_ps(alpha + c + 8);
        for (int i = 0; i < 4; i++) {
            const __m256 vu = _mm256_broadcast_ss(u + i);
            const __m256 r0 = _mm256_fmadd_ps(vu, k0, _mm256_mul_ps(_mm256_loadu_ps(s[i] + c), al0));
            const __m256 r1 = _mm256_fmadd_ps(vu, k1, _mm256_mul_ps(_mm256_loadu_ps(s[i] + c + 8), al1));
            _mm256_storeu_ps(out[i] + c, r0);
            _mm256_storeu_ps(out[i] + c + 8, r1);
            o0[i] = _mm256_fmadd_ps(r0, _mm256_loadu_ps(q + c), o0[i]);
            o1[i] = _mm256_fmadd_ps(r1, _mm256_loadu_ps(q + c + 8), o1[i]);
        }
    }
    for (int i = 0; i < 4; i++)
        o[i] = update_dot_tail(o0[i], o1[i], s[i], alpha, u[i], k, q, out[i], c, n);
}

/* The fold is element-wise (each column its own FMA chain over i in order), so any column
 * blocking gives the same bits. */
AVX2 static inline void fold_cols_tail(const float *s, const float *alpha, int h, const float *w, const float *kw,
                                       int ld, float *out, int c, int n)
{
    for (; c + 8 <= n; c += 8) {
        __m256 r0 = _mm256_mul_ps(_mm256_loadu_ps(s + c), _mm256_loadu_ps(alpha + c));
        for (int i = 0; i < h; i++)
            r0 = _mm256_fmadd_ps(_mm256_set1_ps(w[i]), _mm256_loadu_ps(kw + (size_t)i * ld + c), r0);
        _mm256_storeu_ps(out + c, r0);
    }
    for (; c < n; c++) {
        float r = s[c] * alpha[c];
        for (int i = 0; i < h; i++)
            r = fmaf(w[i], kw[(size_t)i * ld + c], r);
        out[c] = r;
    }
}

AVX2 static void fold_avx2(const float *s, const float *alpha, int h, const float *w, const float *kw, int ld,
                           float *out, int n)
{
    int c = 0;
    /* 32 columns at a time: four independent FMA chains over the entries i */
    for (; c + 32 <= n; c += 32) {
        __m256 r0 = _mm256_mul_ps(_mm256_loadu_ps(s + c), _mm256_loadu_ps(alpha + c));
        __m256 r1 = _mm256_mul_ps(_mm256_loadu_ps(s + c + 8), _mm256_loadu_ps(alpha + c + 8));
        __m256 r2 = _mm256_mul_ps(_mm256_loadu_ps(s + c + 16), _mm256_loadu_ps(alpha + c + 16));
        __m256 r3 = _mm256_mul_ps(_mm256_loadu_ps(s + c + 24), _mm256_loadu_ps(alpha + c + 24));
        for (int i = 0; i < h; i++) {
            const __m256 wi = _mm256_set1_ps(w[i]);
            const float *kr = kw + (size_t)i * ld + c;
            r0 = _mm256_fmadd_ps(wi, _mm256_loadu_ps(kr), r0);
            r1 = _mm256_fmadd_ps(wi, _mm256_loadu_ps(kr + 8), r1);
            r2 = _mm256_fmadd_ps(wi, _mm256_loadu_ps(kr + 16), r2);
            r3 = _mm256_fmadd_ps(wi, _mm256_loadu_ps(kr + 24), r3);
        }
        _mm256_storeu_ps(out + c, r0);
        _mm256_storeu_ps(out + c + 8, r1);
        _mm256_storeu_ps(out + c + 16, r2);
        _mm256_storeu_ps(out + c + 24, r3);
    }
    fold_cols_tail(s, alpha, h, w, kw, ld, out, c, n);
}

AVX2 static void fold_x4_avx2(const float *const s[4], const float *alpha, int h, const float *const w[4],
                              const float *kw, int ld, float *const out[4], int n)
{
    int c = 0;
    /* 16 columns of four rows: eight independent FMA chains, each key block loaded once */
    for (; c + 16 <= n; c += 16) {
        const __m256 al0 = _mm256_loadu_ps(alpha + c), al1 = _mm256_loadu_ps(alpha + c + 8);
        __m256 r0[4], r1[4];
        for (int j = 0; j < 4; j++) {
            r0[j] = _mm256_mul_ps(_mm256_loadu_ps(s[j] + c), al0);
            r1[j] = _mm256_mul_ps(_mm256_loadu_ps(s[j] + c + 8), al1);
        }
        for (int i = 0; i < h; i++) {
            const float *kr = kw + (size_t)i * ld + c;
            const __m256 k0 = _mm256_loadu_ps(kr), k1 = _mm256_loadu_ps(kr + 8);
            for (int j = 0; j < 4; j++) {
                const __m256 wi = _mm256_broadcast_ss(w[j] + i);
                r0[j] = _mm256_fmadd_ps(wi, k0, r0[j]);
                r1[j] = _mm256_fmadd_ps(wi, k1, r1[j]);
            }
        }
        for (int j = 0; j < 4; j++) {
            _mm256_storeu_ps(out[j] + c, r0[j]);
            _mm256_storeu_ps(out[j] + c + 8, r1[j]);
        }
    }
    for (int j = 0; j < 4; j++)
        fold_cols_tail(s[j], alpha, h, w[j], kw, ld, out[j], c, n);
}

AVX2 static void axpy_avx2(float a, const float *x, float *y, int n)
{
    const __m256 va = _mm256_set1_ps(a);
    int c = 0;
    for (; c + 8 <= n; c += 8)
        _mm256_storeu_ps(y + c, _mm256_fmadd_ps(va, _mm256_loadu_ps(x + c), _mm256_loadu_ps(y + c)));
    for (; c < n; c++)
        y[c] = fmaf(a, x[c], y[c]);
}

AVX2 static void bf16_load_avx2(const uint16_t *src, float *dst, int n)
{
    int c = 0;
    for (; c + 8 <= n; c += 8) {
        /* f32 bits = bf16 bits << 16 */
        const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(src + c)));
        _mm256_storeu_ps(dst + c, _mm256_castsi256_ps(_mm256_slli_epi32(w, 16)));
    }
    for (; c < n; c++)
        dst[c] = rssm_bf16_to_f32(src[c]);
}

AVX2 static void bf16_store_avx2(const float *src, uint16_t *dst, int n)
{
    const __m256i bias = _mm256_set1_epi32(0x7fff), one = _mm256_set1_epi32(1);
    const __m256i absmask = _mm256_set1_epi32(0x7fffffff), inf = _mm256_set1_epi32(0x7f800000);
    const __m256i quiet = _mm256_set1_epi32(0x40);
    int c = 0;
    for (; c + 8 <= n; c += 8) {
        const __m256i u = _mm256_castps_si256(_mm256_loadu_ps(src + c));
        /* round to nearest even: (u + 0x7fff + ((u >> 16) & 1)) >> 16; NaN: (u >> 16) | 0x40 */
        const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), one);
        const __m256i r = _mm256_srli_epi32(_mm256_add_epi32(u, _mm256_add_epi32(bias, lsb)), 16);
        const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, absmask), inf);
        const __m256i qn = _mm256_or_si256(_mm256_srli_epi32(u, 16), quiet);
        const __m256i x = _mm256_blendv_epi8(r, qn, nan);
        const __m128i p = _mm_packus_epi32(_mm256_castsi256_si128(x), _mm256_extracti128_si256(x, 1));
        _mm_storeu_si128((__m128i *)(dst + c), p);
    }
    for (; c < n; c++)
        dst[c] = rssm_f32_to_bf16(src[c]);
}

/* one 8 x 8 block: unpack pairs of rows, shuffle pairs of pairs, exchange 128-bit halves */
AVX2 static inline void transpose8x8_avx2(const float *src, int64_t lds, float *dst, int64_t ldd)
{
    __m256 r[8], t[8], u[8];
    for (int i = 0; i < 8; i++)
        r[i] = _mm256_loadu_ps(src + i * lds);
    for (int i = 0; i < 8; i += 2)
        t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]), t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
    for (int i = 0; i < 8; i += 4) {
        u[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44), u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xEE);
        u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44), u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
    }
    for (int i = 0; i < 4; i++) {
        _mm256_storeu_ps(dst + i * ldd, _mm256_permute2f128_ps(u[i], u[i + 4], 0x20));
        _mm256_storeu_ps(dst + (i + 4) * ldd, _mm256_permute2f128_ps(u[i], u[i + 4], 0x31));
    }
}

AVX2 static void transpose_avx2(const float *src, int64_t lds, float *dst, int64_t ldd, int rows, int cols)
{
    const int r8 = rows & ~7, c8 = cols & ~7;
    for (int i = 0; i < r8; i += 8)
        for (int j = 0; j < c8; j += 8)
            transpose8x8_avx2(src + i * lds + j, lds, dst + j * ldd + i, ldd);
    for (int i = 0; i < rows; i++) /* the edges */
        for (int j = i < r8 ? c8 : 0; j < cols; j++)
            dst[(int64_t)j * ldd + i] = src[(int64_t)i * lds + j];
}

static const cpu_vec vec_avx2 = {
    "avx2",       dot_avx2,           dot2_avx2,    update_dot_avx2, fold_avx2,       axpy_avx2,      dot_x4_avx2,
    dot2_x4_avx2, update_dot_x4_avx2, fold_x4_avx2, bf16_load_avx2,  bf16_store_avx2, transpose_avx2,
};

const cpu_vec *rssm_cpu_vec_select(void)
{
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return &vec_avx2;
    return &rssm_cpu_vec_scalar;
}
#else
const cpu_vec *rssm_cpu_vec_select(void) { return &rssm_cpu_vec_scalar; }
#endif
