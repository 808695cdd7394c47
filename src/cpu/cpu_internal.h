/*
 * cpu_internal.h — private pieces of the optimised CPU back end shared by its files:
 * the vector kernel table (cpu_simd.c), the per-thread scratch arena and the context data
 * (cpu_pool.c), and the per-(row, key-head group) kernels (cpu_kernels.c).
 *
 * Everything computes in float32. Vector kernels are chosen once at init (AVX2+FMA when the
 * CPU has it, else portable scalar) and every code path of one context calls the same table,
 * so two paths that perform the same operations (packed decode and replay at L = 1) get the
 * same bits. FMAs are explicit (fmaf / _mm256_fmadd_ps): the build uses -ffp-contract=off.
 */
#ifndef RSSM_CPU_INTERNAL_H
#define RSSM_CPU_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "core/backend.h"

/* ---- vector kernels over n floats (n >= 1, any n, no alignment needed) ------------------ */
typedef struct cpu_vec {
    const char *name;
    /* sum_c a[c] b[c] */
    float (*dot)(const float *a, const float *b, int n);
    /* *dx = sum_c s[c] x[c], *dy = sum_c s[c] y[c] in one pass over s */
    void (*dot2)(const float *s, const float *x, const float *y, int n, float *dx, float *dy);
    /* out[c] = fma(u, k[c], s[c] * alpha[c]); returns sum_c out[c] q[c]. out may alias s. */
    float (*update_dot)(const float *s, const float *alpha, float u, const float *k, const float *q, float *out, int n);
    /* out[c] = s[c] alpha[c] (+) sum_{i<h} w[i] kw[i*ld + c], FMAs in order of i. out may alias s. */
    void (*fold)(const float *s, const float *alpha, int h, const float *w, const float *kw, int ld, float *out, int n);
    /* y[c] = fma(a, x[c], y[c]) */
    void (*axpy)(float a, const float *x, float *y, int n);
    /* ---- four rows at once: each row gets exactly the bits of the one-row kernel above;
     * the four rows are four independent sequential streams (a core reads one stream at
     * well under DRAM speed). Rows must be distinct; out[i] may alias s[i]. */
    void (*dot_x4)(const float *const s[4], const float *x, int n, float d[4]);
    void (*dot2_x4)(const float *const s[4], const float *x, const float *y, int n, float dx[4], float dy[4]);
    void (*update_dot_x4)(const float *const s[4], const float *alpha, const float u[4], const float *k, const float *q,
                          float *const out[4], int n, float o[4]);
    /* w[i] is row i's weights [h] */
    void (*fold_x4)(const float *const s[4], const float *alpha, int h, const float *const w[4], const float *kw,
                    int ld, float *const out[4], int n);
    /* bf16 <-> f32; the store rounds to nearest even as rssm_f32_to_bf16 */
    void (*bf16_load)(const uint16_t *src, float *dst, int n);
    void (*bf16_store)(const float *src, uint16_t *dst, int n);
    /* dst[j ldd + i] = src[i lds + j] for i < rows, j < cols (an exact copy; K-first heads) */
    void (*transpose)(const float *src, int64_t lds, float *dst, int64_t ldd, int rows, int cols);
} cpu_vec;

extern const cpu_vec rssm_cpu_vec_scalar;
/* The best table for this CPU (AVX2+FMA when available). */
const cpu_vec *rssm_cpu_vec_select(void);

/* ---- per-thread scratch: a bump arena reset for every work item ------------------------ */
typedef struct cpu_arena {
    float *base;
    size_t cap, used; /* in floats */
} cpu_arena;

/* Floats of one thread's arena: enough for every op at K = V = 256, L = T = 64. */
#define RSSM_CPU_ARENA_FLOATS ((size_t)1 << 20)

/* n floats, 64-byte aligned, from the arena (internal invariant: it fits). */
float *rssm_cpu_take(cpu_arena *a, size_t n);

/* The context's data (ctx->impl). */
typedef struct cpu_pool cpu_pool;
typedef struct cpu_impl {
    int threads;
    cpu_pool *pool;     /* NULL for one thread */
    const cpu_vec *vec; /* selected kernels */
    cpu_arena *arenas;  /* [threads] */
} cpu_impl;

/* The vector kernels of ctx: its selected table, or the scalar table when ctx has no impl. */
const cpu_vec *rssm_cpu_vec_of(const rssm_context *ctx);

/* ---- work items (cpu_kernels.c): one (row b, key head kh) with its group of value heads -- */
typedef struct cpu_job {
    const rssm_params *p;             /* a step (packed, prefill, replay, verify), or NULL */
    const rssm_materialize_params *m; /* a materialise, or NULL */
    const cpu_vec *vec;
    cpu_arena *arenas; /* [threads] */
} cpu_job;

void rssm_cpu_item_packed(const cpu_job *j, int b, int kh, cpu_arena *a); /* packed decode, prefill */
void rssm_cpu_item_replay(const cpu_job *j, int b, int kh, cpu_arena *a); /* replay decode, verify */
void rssm_cpu_item_materialize(const cpu_job *j, int b, int kh, cpu_arena *a);

#endif /* RSSM_CPU_INTERNAL_H */
