/*
 * cpu_kernels.c — the work items of the CPU back end: one (row b, key head kh) with the
 * `group` value heads that read that key head. All maths in float32 (ref.c has the float64
 * oracle and the exact semantics; docs/design.md the derivations).
 *
 * Per value head the checkpoint S0 [V][K] is streamed once, four rows at a time (rows g,
 * g + V/4, g + V/2, g + 3V/4: four sequential streams per core, see row_groups; row r = value
 * index):
 *   packed:  u = beta (v_r - S_r . (alpha k));  S_r <- fma(u, k, S_r alpha);  o_r = S_r . q
 *   replay:  dk_t = S0_r . (e^{G_t} k_t), dq_t = S0_r . (e^{G_t} q_t) for every window token t,
 *            plus the ring terms, which are small per-head vectors computed before the stream.
 *   fold:    S_n,r = S0_r e^{G_n} + sum_i u_i[r] kw_i  (+ u_n[r] k_n on an end fold), with
 *            kw_i = k_i e^{G_n - G_i} (GDN) or k~_i e^{G_n} (KDA, pre-decayed keys).
 * An end fold with an empty ring calls exactly the packed row routine (same row grouping), so
 * replay at L = 1 equals packed decode bit for bit. Replay's per-row scalar recurrence (ring
 * and window terms, u_t, o_t) runs after the stream as vector ops over all V rows.
 *
 * A work item owns whole (row, key-head group)s: a GDN group's shared ring_k is read (its
 * committed entries copied to scratch) before any head of the group appends or folds.
 */
#include <math.h>
#include <string.h>

#include "core/host.h"
#include "core/layout.h"
#include "cpu/cpu_internal.h"

/* ---- dtype helpers ------------------------------------------------------------------------ */

static size_t esize(rssm_dtype dt) { return dt == RSSM_DTYPE_BF16 ? 2 : 4; }

static void *at(const void *base, rssm_dtype dt, int64_t off) { return (char *)base + off * (int64_t)esize(dt); }

/* dst[0..n) <- src (f32 or bf16) */
static void load_f32(const cpu_vec *vec, const void *base, rssm_dtype dt, int64_t off, float *dst, int n)
{
    if (dt == RSSM_DTYPE_BF16)
        vec->bf16_load(at(base, dt, off), dst, n);
    else
        memcpy(dst, at(base, dt, off), sizeof(float) * (size_t)n);
}

/* dst (f32 or bf16) <- src[0..n), rounding to the dtype */
static void store_f32(const cpu_vec *vec, void *base, rssm_dtype dt, int64_t off, const float *src, int n)
{
    if (dt == RSSM_DTYPE_BF16)
        vec->bf16_store(src, at(base, dt, off), n);
    else
        memcpy(at(base, dt, off), src, sizeof(float) * (size_t)n);
}

/* ---- the checkpoint's rows -------------------------------------------------------------------
 * Row r of a head's state (value index r, its K channels) at element offset c0 of the head. In an
 * f32 V-first state a row is K contiguous floats, used in place; a bf16 V-first row passes
 * through [K] scratch. A K-first head is staged whole (stage_head): one SIMD transpose into a
 * [V][K] f32 scratch, where the rows are then used in place, and one back where it is written
 * (the same bits as V-first). */
static int rows_in_place(const rssm_layer *l)
{
    return l->state_dtype == RSSM_DTYPE_F32 && l->state_layout == RSSM_LAYOUT_VK;
}

static float *row_at(const rssm_layer *l, const void *ckpt, int64_t c0, int r)
{
    return (float *)ckpt + c0 + (int64_t)r * l->head_k_dim;
}

static void load_row(const cpu_vec *vec, const rssm_layer *l, const void *ckpt, int64_t c0, int r, float *dst)
{
    load_f32(vec, ckpt, l->state_dtype, c0 + (int64_t)r * l->head_k_dim, dst, l->head_k_dim);
}

static void store_row(const cpu_vec *vec, const rssm_layer *l, void *ckpt, int64_t c0, int r, const float *src)
{
    store_f32(vec, ckpt, l->state_dtype, c0 + (int64_t)r * l->head_k_dim, src, l->head_k_dim);
}

/* S [V][K] f32 <-> a head's whole state; K-first through one transpose (bf16: widened, or
 * rounded, in `tmp` [K][V] first). Staging scratch for K-first heads: staging_scratch. */
static void load_head(const cpu_vec *vec, const rssm_layer *l, const void *ckpt, int64_t c0, float *S, float *tmp)
{
    const int K = l->head_k_dim, V = l->head_v_dim;
    if (l->state_layout == RSSM_LAYOUT_VK) {
        load_f32(vec, ckpt, l->state_dtype, c0, S, V * K);
        return;
    }
    const float *src = (const float *)ckpt + c0;
    if (l->state_dtype == RSSM_DTYPE_BF16) load_f32(vec, ckpt, l->state_dtype, c0, tmp, V * K), src = tmp;
    vec->transpose(src, V, S, K, K, V);
}

static void store_head(const cpu_vec *vec, const rssm_layer *l, void *ckpt, int64_t c0, const float *S, float *tmp)
{
    const int K = l->head_k_dim, V = l->head_v_dim;
    if (l->state_layout == RSSM_LAYOUT_VK) {
        store_f32(vec, ckpt, l->state_dtype, c0, S, V * K);
        return;
    }
    if (l->state_dtype == RSSM_DTYPE_F32) {
        vec->transpose(S, K, (float *)ckpt + c0, V, V, K);
        return;
    }
    vec->transpose(S, K, tmp, V, V, K);
    store_f32(vec, ckpt, l->state_dtype, c0, tmp, V * K);
}

/* 2 V K floats for a K-first head (stage_head's scratch, then load_head's tmp); NULL otherwise */
static float *staging_scratch(const rssm_layer *l, cpu_arena *a)
{
    return l->state_layout == RSSM_LAYOUT_KV ? rssm_cpu_take(a, 2 * (size_t)l->head_v_dim * l->head_k_dim) : NULL;
}

/* The rows of the head at (*ckpt, *c0): a K-first head is loaded into `scratch` ([V][K]; `tmp`
 * [K][V] for load_head) and *ckpt, *c0 and the returned layer (`staged`: f32, V-first) then
 * describe the scratch; any other head is read where it is (returns l). Where the step writes the
 * head, a staged one goes back with store_head(l, ..., scratch, tmp). */
static const rssm_layer *stage_head(const cpu_vec *vec, const rssm_layer *l, const void **ckpt, int64_t *c0,
                                    float *scratch, float *tmp, rssm_layer *staged)
{
    if (l->state_layout != RSSM_LAYOUT_KV) return l;
    load_head(vec, l, *ckpt, *c0, scratch, tmp);
    *staged = *l;
    staged->state_layout = RSSM_LAYOUT_VK, staged->state_dtype = RSSM_DTYPE_F32;
    *ckpt = scratch, *c0 = 0;
    return staged;
}

static float min_of(const float *x, int n)
{
    float m = x[0];
    for (int i = 1; i < n; i++)
        m = x[i] < m ? x[i] : m;
    return m;
}

/* ---- rows in groups of streams ---------------------------------------------------------------
 * With n = RSSM_CPU_STREAMS and Vn = V / n, a head's V rows are walked as Vn groups
 * {g, g + Vn, ..., g + (n-1) Vn} (n sequential streams, read side by side), then the V mod n
 * last rows one by one. The 4-row kernels give every row the bits of the one-row kernels, so
 * the walk order never changes results. */

/* Row streams read side by side (a multiple of 4: the 4-row kernels are called
 * RSSM_CPU_STREAMS / 4 times). 4 because one core reads (dot2 over cold rows, dev VM)
 * 1 stream at 8-10 GB/s, 2 at 11-13, 4 at 13-18, 8 at 14-18, 16 at 12-16, and the bench shows
 * no difference between 4 and 8: 4 keeps fewer pointers live. -DRSSM_CPU_STREAMS=8 to try. */
#ifndef RSSM_CPU_STREAMS
#define RSSM_CPU_STREAMS 4
#endif

static int row_groups(int V) { return V / RSSM_CPU_STREAMS + V % RSSM_CPU_STREAMS; }

/* rows of group g; returns how many (RSSM_CPU_STREAMS, or 1 for the tail) */
static inline int group_rows(int V, int g, int rows[RSSM_CPU_STREAMS])
{
    const int Vn = V / RSSM_CPU_STREAMS;
    if (g < Vn) {
        for (int i = 0; i < RSSM_CPU_STREAMS; i++)
            rows[i] = g + i * Vn;
        return RSSM_CPU_STREAMS;
    }
    rows[0] = RSSM_CPU_STREAMS * Vn + (g - Vn);
    return 1;
}

static inline void dot_rows(const cpu_vec *vec, int nr, const float *const s[RSSM_CPU_STREAMS], const float *x, int K,
                            float d[RSSM_CPU_STREAMS])
{
    if (nr == RSSM_CPU_STREAMS)
        for (int q = 0; q < RSSM_CPU_STREAMS; q += 4)
            vec->dot_x4(s + q, x, K, d + q);
    else
        for (int i = 0; i < nr; i++)
            d[i] = vec->dot(s[i], x, K);
}

static inline void dot2_rows(const cpu_vec *vec, int nr, const float *const s[RSSM_CPU_STREAMS], const float *x,
                             const float *y, int K, float dx[RSSM_CPU_STREAMS], float dy[RSSM_CPU_STREAMS])
{
    if (nr == RSSM_CPU_STREAMS)
        for (int q = 0; q < RSSM_CPU_STREAMS; q += 4)
            vec->dot2_x4(s + q, x, y, K, dx + q, dy + q);
    else
        for (int i = 0; i < nr; i++)
            vec->dot2(s[i], x, y, K, dx + i, dy + i);
}

static inline void update_dot_rows(const cpu_vec *vec, int nr, const float *const s[RSSM_CPU_STREAMS],
                                   const float *alpha, const float u[RSSM_CPU_STREAMS], const float *k, const float *q,
                                   float *const out[RSSM_CPU_STREAMS], int K, float o[RSSM_CPU_STREAMS])
{
    if (nr == RSSM_CPU_STREAMS)
        for (int j = 0; j < RSSM_CPU_STREAMS; j += 4)
            vec->update_dot_x4(s + j, alpha, u + j, k, q, out + j, K, o + j);
    else
        for (int i = 0; i < nr; i++)
            o[i] = vec->update_dot(s[i], alpha, u[i], k, q, out[i], K);
}

static inline void fold_rows(const cpu_vec *vec, int nr, const float *const s[RSSM_CPU_STREAMS], const float *alpha,
                             int h, const float *const w[RSSM_CPU_STREAMS], const float *kw, int ld,
                             float *const out[RSSM_CPU_STREAMS], int K)
{
    if (nr == RSSM_CPU_STREAMS)
        for (int q = 0; q < RSSM_CPU_STREAMS; q += 4)
            vec->fold_x4(s + q, alpha, h, w + q, kw, ld, out + q, K);
    else
        for (int i = 0; i < nr; i++)
            vec->fold(s[i], alpha, h, w[i], kw, ld, out[i], K);
}

/* ---- one token's inputs --------------------------------------------------------------------- */

/* q, k of key head kh at token bt = b T + t: x / sqrt(sum x^2 + eps) when qk_l2norm, q *= scale */
static void prep_qk(const rssm_params *p, const cpu_vec *vec, int64_t bt, int kh, float *q, float *k)
{
    const rssm_layer *l = &p->layer;
    const int K = l->head_k_dim;
    load_f32(vec, p->io.q, l->io_dtype, bt * p->io.q_stride + (int64_t)kh * K, q, K);
    load_f32(vec, p->io.k, l->io_dtype, bt * p->io.k_stride + (int64_t)kh * K, k, K);
    float sq = 1.0f, sk = 1.0f;
    if (l->qk_l2norm) {
        sq = 1.0f / sqrtf(vec->dot(q, q, K) + (float)RSSM_L2NORM_EPS);
        sk = 1.0f / sqrtf(vec->dot(k, k, K) + (float)RSSM_L2NORM_EPS);
    }
    for (int c = 0; c < K; c++) {
        q[c] = q[c] * sq * l->scale;
        k[c] = k[c] * sk;
    }
}

/* v [V], log-gate g [gk] and beta of value head hv at token bt */
static void prep_head(const rssm_params *p, const cpu_vec *vec, int64_t bt, int hv, float *v, float *g, float *beta)
{
    const rssm_layer *l = &p->layer;
    const rssm_step_io *io = &p->io;
    const int V = l->head_v_dim, gk = p->gk;
    load_f32(vec, io->v, l->io_dtype, bt * io->v_stride + (int64_t)hv * V, v, V);
    if (io->g) {
        memcpy(g, io->g + rssm_g_off(io, bt, hv, gk), sizeof(float) * (size_t)gk);
        *beta = io->beta[rssm_beta_off(io, bt, hv)];
        return;
    }
    const int64_t a0 = bt * io->a_stride + (int64_t)hv * gk;
    /* rssm_gate_f32 with exp(A_log) made once per head (the same operations, the same bits):
     * plain g = -e^{A_log} softplus(a + dt_bias);  safe g = lb sigmoid(e^{A_log} (a + dt_bias)) */
    const float eA = expf(io->A_log[hv]), neA = -eA;
    const float *dtb = io->dt_bias + (int64_t)hv * gk;
    for (int c = 0; c < gk; c++) {
        const float a = l->io_dtype == RSSM_DTYPE_BF16 ? rssm_bf16_to_f32(((const uint16_t *)io->a)[a0 + c])
                                                       : ((const float *)io->a)[a0 + c];
        g[c] = l->has_lower_bound ? l->lower_bound * rssm_sigmoid_f32(eA * (a + dtb[c]))
                                  : neA * rssm_softplus_f32(a + dtb[c]);
    }
    const int64_t b0 = bt * io->b_stride + hv;
    const float bb =
        l->io_dtype == RSSM_DTYPE_BF16 ? rssm_bf16_to_f32(((const uint16_t *)io->b)[b0]) : ((const float *)io->b)[b0];
    *beta = rssm_sigmoid_f32(bb);
}

static void store_o(const rssm_params *p, const cpu_vec *vec, int64_t bt, int hv, const float *o)
{
    const rssm_layer *l = &p->layer;
    store_f32(vec, p->io.o, l->io_dtype, rssm_o_off(l, bt, hv), o, l->head_v_dim);
}

/* padding row: o = 0 for every token and the group's value heads */
static void zero_o(const rssm_params *p, int b, int kh)
{
    const rssm_layer *l = &p->layer;
    for (int t = 0, T = rssm_row_tokens(&p->io, b); t < T; t++)
        for (int hv = kh * p->group; hv < (kh + 1) * p->group; hv++)
            memset(at(p->io.o, l->io_dtype, rssm_o_off(l, rssm_bt(&p->io, b, t), hv)), 0,
                   esize(l->io_dtype) * (size_t)l->head_v_dim);
}

/* ---- the packed row: shared by packed decode, prefill and replay end folds ------------------ */

/* Rows of one recurrent step on srow [K] (f32), results in out [K] (out[i] may alias s[i]):
 *   u = beta (v_r - srow . ak);  out = fma(u, k, srow alpha);  o_r = out . q */
static inline void packed_rows(const cpu_vec *vec, int nr, const float *const s[RSSM_CPU_STREAMS], const float *alpha,
                               const float *ak, const float *k, const float *q, float beta,
                               const float vr[RSSM_CPU_STREAMS], float *const out[RSSM_CPU_STREAMS],
                               float o[RSSM_CPU_STREAMS], int K)
{
    float d[RSSM_CPU_STREAMS], u[RSSM_CPU_STREAMS];
    dot_rows(vec, nr, s, ak, K, d);
    for (int i = 0; i < nr; i++)
        u[i] = beta * (vr[i] - d[i]);
    update_dot_rows(vec, nr, s, alpha, u, k, q, out, K, o);
}

/* One row (the multi-token path on a head in scratch) */
static inline float packed_row(const cpu_vec *vec, const float *srow, const float *alpha, const float *ak,
                               const float *k, const float *q, float beta, float vr, float *out, int K)
{
    const float d = vec->dot(srow, ak, K);
    const float u = beta * (vr - d);
    return vec->update_dot(srow, alpha, u, k, q, out, K);
}

/* ---- ring access ---------------------------------------------------------------------------- */

typedef struct ring {
    int h;     /* live entries */
    float *U;  /* [h][V] u_i as stored */
    float *UT; /* [V][h] the same, transposed (per-row weights of a fold) */
    float *Kr; /* [h][K] keys as stored (GDN normalised k; KDA pre-decayed k~) */
    float *G;  /* [h][gk] cumulative log-gates */
} ring;

/* The head's ring base (0 without a ring). Its live entries are cursor - base: those of cursor
 * values base .. cursor - 1, at positions rssm_ring_pos (GDN absolute, KDA from 0). */
static int head_base(const rssm_layer *l, const rssm_state *sp, int s, int hv)
{
    return sp->ring_base ? sp->ring_base[rssm_base_off(l, s, hv)] : 0;
}

/* Keys of a head's live entries within the keys loaded by load_keys: GDN's start at the head's
 * base (all committed positions of the key head are loaded), KDA's at 0. */
static float *live_keys(const rssm_layer *l, float *Kr, int base)
{
    return Kr + (size_t)rssm_ring_pos(l, base, base) * l->head_k_dim;
}

/* ---- software prefetch ----------------------------------------------------------------------
 * The checkpoint is NOT prefetched row by row: with four streams per core the hardware
 * prefetchers keep up, and prefetcht0 ahead of each row stalled on full fill buffers
 * (measured: none, t0, t1, t2 and nta at 1..8 KiB ahead are within noise of each other at four
 * streams; t0 at 2 KiB was 60% of replay's self time at one stream). What is prefetched is
 * the next head's small, scattered, cold data (its ring entries, v, the first lines of its four
 * row streams), so their latency overlaps this head's stream instead of adding to it. */
static void prefetch_lines(const void *p, int64_t bytes)
{
    const char *c = (const char *)p;
    for (int64_t i = 0; i < bytes; i += 64)
        __builtin_prefetch(c + i, 0, 2);
}

/* the head after (b, hv) in work-item order ((b, kh) items, their heads in order) */
static void prefetch_next_head(const rssm_params *p, int b, int hv, int ring)
{
    const rssm_layer *l = &p->layer;
    const rssm_state *sp = &p->state;
    const int K = l->head_k_dim, V = l->head_v_dim;
    if (++hv == l->num_v_heads) hv = 0, b++;
    if (b >= p->io.batch || p->io.tokens != 1) return;
    const int s = p->io.slot[b];
    if (s < 0) return;
    const int64_t es = (int64_t)esize(l->state_dtype), er = (int64_t)esize(l->ring_dtype);
    const int64_t c0 = rssm_ckpt_off(l, s, hv);
    for (int i = 0; i < RSSM_CPU_STREAMS; i++)
        prefetch_lines((const char *)sp->checkpoint + (c0 + rssm_ckpt_elem(l, i * (V / RSSM_CPU_STREAMS), 0)) * es,
                       128);
    const int64_t bt = rssm_bt(&p->io, b, 0), ei = (int64_t)esize(l->io_dtype);
    prefetch_lines(at(p->io.v, l->io_dtype, bt * p->io.v_stride + (int64_t)hv * V), (int64_t)V * ei);
    if (hv % p->group == 0) { /* a new work item: its q and k */
        const int kh = hv / p->group;
        prefetch_lines(at(p->io.q, l->io_dtype, bt * p->io.q_stride + (int64_t)kh * K), (int64_t)K * ei);
        prefetch_lines(at(p->io.k, l->io_dtype, bt * p->io.k_stride + (int64_t)kh * K), (int64_t)K * ei);
    }
    if (!ring || !sp->cursor) return;
    const int base = head_base(l, sp, s, hv), h = sp->cursor[s] - base, p0 = rssm_ring_pos(l, base, base);
    if (h <= 0) return;
    prefetch_lines((const char *)sp->ring_u + rssm_ring_u_off(l, s, hv, p0) * er, (int64_t)h * V * er);
    if (l->gate == RSSM_GATE_KDA || hv % p->group == 0)
        prefetch_lines((const char *)sp->ring_k + rssm_ring_k_off(l, s, hv, p->group, p0) * er, (int64_t)h * K * er);
    prefetch_lines((const float *)sp->ring_g + rssm_ring_g_off(l, s, hv, p0, p->gk), (int64_t)h * p->gk * 4);
}

/* Keys of ring positions 0..n-1 of (slot s, value head hv) (GDN: its key head's, every
 * committed position, n = cursor; KDA: the head's live entries, n = cursor - base). */
static void load_keys(const cpu_vec *vec, const rssm_layer *l, const rssm_state *sp, int s, int hv, int group, int n,
                      float *Kr)
{
    const int K = l->head_k_dim;
    if (n > 0) load_f32(vec, sp->ring_k, l->ring_dtype, rssm_ring_k_off(l, s, hv, group, 0), Kr, n * K);
}

/* u and G of the h live entries of (s, hv) from ring base `base`; keys must already be in
 * rg->Kr. */
static void load_ring(const cpu_vec *vec, const rssm_layer *l, const rssm_state *sp, int s, int hv, int gk, int base,
                      int h, cpu_arena *a, ring *rg)
{
    const int V = l->head_v_dim, p0 = rssm_ring_pos(l, base, base);
    rg->h = h;
    rg->U = rssm_cpu_take(a, (size_t)h * V + 1);
    rg->UT = rssm_cpu_take(a, (size_t)h * V + 1);
    rg->G = rssm_cpu_take(a, (size_t)h * gk + 1);
    if (h == 0) return;
    load_f32(vec, sp->ring_u, l->ring_dtype, rssm_ring_u_off(l, s, hv, p0), rg->U, h * V);
    memcpy(rg->G, (const float *)sp->ring_g + rssm_ring_g_off(l, s, hv, p0, gk), sizeof(float) * (size_t)h * gk);
}

/* rg->UT [V][h] <- rg->U [h][V]: the per-row weights of a fold (only folds need it) */
static void ring_transpose(ring *rg, int V)
{
    const int h = rg->h;
    for (int i = 0; i < h; i++)
        for (int r = 0; r < V; r++)
            rg->UT[r * h + i] = rg->U[i * V + r];
}

/* Cumulative gate after the live entries: G_{h-1}, or 0 */
static void ring_G(const ring *rg, int gk, float *G)
{
    for (int c = 0; c < gk; c++)
        G[c] = rg->h > 0 ? rg->G[(rg->h - 1) * gk + c] : 0.0f;
}

/* Fold weights of entries i < n at cumulative gate Gn:  alpha[c] = e^{Gn},
 *   KW[i][c] = k_i[c] e^{Gn - G_i}  (GDN)   or   k~_i[c] e^{Gn[c]}  (KDA) */
static void fold_weights(const ring *rg, int n, int K, int gk, const float *Gn, float *alpha, float *KW)
{
    for (int c = 0; c < K; c++)
        alpha[c] = expf(Gn[gk == 1 ? 0 : c]);
    for (int i = 0; i < n; i++) {
        const float *ki = rg->Kr + (size_t)i * K;
        float *kw = KW + (size_t)i * K;
        if (gk == 1) {
            const float e = expf(Gn[0] - rg->G[i]);
            for (int c = 0; c < K; c++)
                kw[c] = ki[c] * e;
        } else {
            for (int c = 0; c < K; c++)
                kw[c] = ki[c] * alpha[c];
        }
    }
}

/* S [V][K] f32 <- checkpoint of (s, hv) with its live ring folded in (not rounded) */
static void fold_head(const cpu_vec *vec, const rssm_layer *l, const rssm_state *sp, int s, int hv, int gk, ring *rg,
                      cpu_arena *a, float *S)
{
    const int V = l->head_v_dim, K = l->head_k_dim;
    float *alpha = rssm_cpu_take(a, K), *KW = rssm_cpu_take(a, (size_t)rg->h * K + 1), G[RSSM_MAX_HEAD_DIM];
    ring_transpose(rg, V);
    ring_G(rg, gk, G);
    fold_weights(rg, rg->h, K, gk, G, alpha, KW);
    int64_t c0 = rssm_ckpt_off(l, s, hv);
    float *tmp = l->state_layout == RSSM_LAYOUT_KV ? rssm_cpu_take(a, (size_t)V * K) : NULL;
    if (rg->h == 0) { /* S0 e^0 = S0 */
        load_head(vec, l, sp->checkpoint, c0, S, tmp);
        return;
    }
    const void *ck = sp->checkpoint;
    rssm_layer staged;
    const rssm_layer *lr = stage_head(vec, l, &ck, &c0, S, tmp, &staged); /* K-first: S0 in S, folded in place */
    /* four row streams at a time, straight from the checkpoint into S */
    for (int gi = 0, ng = row_groups(V); gi < ng; gi++) {
        int rows[RSSM_CPU_STREAMS];
        const int nr = group_rows(V, gi, rows);
        const float *src[RSSM_CPU_STREAMS], *w[RSSM_CPU_STREAMS];
        float *out[RSSM_CPU_STREAMS];
        for (int i = 0; i < nr; i++) {
            out[i] = S + (size_t)rows[i] * K;
            w[i] = rg->UT + (size_t)rows[i] * rg->h;
            if (rows_in_place(lr)) {
                src[i] = row_at(lr, ck, c0, rows[i]);
            } else {
                load_row(vec, lr, ck, c0, rows[i], out[i]);
                src[i] = out[i];
            }
        }
        fold_rows(vec, nr, src, alpha, rg->h, w, KW, K, out, K);
    }
}

static void base_store(const rssm_layer *l, const rssm_state *sp, int s, int hv, int32_t base)
{
    if (sp->ring_base) sp->ring_base[rssm_base_off(l, s, hv)] = base;
}

/* ---- packed decode and prefill ----------------------------------------------------------- */

void rssm_cpu_item_packed(const cpu_job *j, int b, int kh, cpu_arena *a)
{
    const rssm_params *p = j->p;
    const cpu_vec *vec = j->vec;
    const rssm_layer *l = &p->layer;
    const rssm_state *sp = &p->state;
    const int K = l->head_k_dim, V = l->head_v_dim, T = rssm_row_tokens(&p->io, b), gk = p->gk;
    const int s = p->io.slot[b];
    if (s < 0) {
        zero_o(p, b, kh);
        return;
    }
    const int w = (p->op == RSSM_OP_DECODE_PACKED && p->io.write_slot) ? p->io.write_slot[b] : s;
    float *q = rssm_cpu_take(a, K), *k = rssm_cpu_take(a, K), *alpha = rssm_cpu_take(a, K), *ak = rssm_cpu_take(a, K);
    float *v = rssm_cpu_take(a, V), *o = rssm_cpu_take(a, V), *tmp = rssm_cpu_take(a, (size_t)RSSM_CPU_STREAMS * K);
    float g[RSSM_MAX_HEAD_DIM], beta;

    if (p->op == RSSM_OP_DECODE_PACKED && T == 1) {
        float *Sh = staging_scratch(l, a);
        /* streaming: each row of S read once, updated, written once */
        const int64_t bt = rssm_bt(&p->io, b, 0);
        prep_qk(p, vec, bt, kh, q, k);
        for (int hv = kh * p->group; hv < (kh + 1) * p->group; hv++) {
            prep_head(p, vec, bt, hv, v, g, &beta);
            for (int c = 0; c < K; c++)
                alpha[c] = expf(g[gk == 1 ? 0 : c]), ak[c] = alpha[c] * k[c];
            const int64_t dst = rssm_ckpt_off(l, w, hv);
            int64_t src = rssm_ckpt_off(l, s, hv);
            const void *ck = sp->checkpoint;
            rssm_layer staged;
            const rssm_layer *lr = stage_head(vec, l, &ck, &src, Sh, Sh + (size_t)V * K, &staged); /* K-first: in Sh */
            const int64_t rdst = lr == l ? dst : 0;
            prefetch_next_head(p, b, hv, 0);
            for (int gi = 0, ng = row_groups(V); gi < ng; gi++) {
                int rows[RSSM_CPU_STREAMS];
                const int nr = group_rows(V, gi, rows);
                const float *sr[RSSM_CPU_STREAMS];
                float *dr[RSSM_CPU_STREAMS], vr[RSSM_CPU_STREAMS], o4[RSSM_CPU_STREAMS];
                for (int i = 0; i < nr; i++) {
                    vr[i] = v[rows[i]];
                    if (rows_in_place(lr)) {
                        sr[i] = row_at(lr, ck, src, rows[i]);
                        dr[i] = row_at(lr, ck, rdst, rows[i]);
                    } else {
                        dr[i] = tmp + (size_t)i * K;
                        load_row(vec, lr, ck, src, rows[i], dr[i]);
                        sr[i] = dr[i];
                    }
                }
                packed_rows(vec, nr, sr, alpha, ak, k, q, beta, vr, dr, o4, K);
                for (int i = 0; i < nr; i++) {
                    o[rows[i]] = o4[i];
                    if (!rows_in_place(lr)) store_row(vec, lr, sp->checkpoint, dst, rows[i], dr[i]);
                }
            }
            if (lr != l) store_head(vec, l, sp->checkpoint, dst, Sh, Sh + (size_t)V * K);
            store_o(p, vec, bt, hv, o);
        }
        return;
    }

    /* T tokens on an f32 copy of the head's state, rounded once at the end */
    float *S = rssm_cpu_take(a, (size_t)V * K), *Kr = rssm_cpu_take(a, (size_t)l->ring_len * K);
    float *tmpS = l->state_layout == RSSM_LAYOUT_KV ? rssm_cpu_take(a, (size_t)V * K) : NULL;
    const size_t mark = a->used;
    for (int hv = kh * p->group; hv < (kh + 1) * p->group; hv++) {
        a->used = mark;
        if (p->op == RSSM_OP_PREFILL) {
            /* start from the materialised state: checkpoint with its live ring folded in */
            ring rg;
            const int base = head_base(l, sp, s, hv), h = sp->cursor[s] - base;
            if (l->gate == RSSM_GATE_KDA) load_keys(vec, l, sp, s, hv, p->group, h, Kr);
            if (l->gate == RSSM_GATE_GDN && hv == kh * p->group)
                load_keys(vec, l, sp, s, hv, p->group, sp->cursor[s], Kr);
            load_ring(vec, l, sp, s, hv, gk, base, h, a, &rg);
            rg.Kr = live_keys(l, Kr, base);
            fold_head(vec, l, sp, s, hv, gk, &rg, a, S);
        } else {
            load_head(vec, l, sp->checkpoint, rssm_ckpt_off(l, s, hv), S, tmpS);
        }
        for (int t = 0; t < T; t++) {
            const int64_t bt = rssm_bt(&p->io, b, t);
            prep_qk(p, vec, bt, kh, q, k);
            prep_head(p, vec, bt, hv, v, g, &beta);
            for (int c = 0; c < K; c++)
                alpha[c] = expf(g[gk == 1 ? 0 : c]), ak[c] = alpha[c] * k[c];
            for (int r = 0; r < V; r++) {
                float *srow = S + (size_t)r * K;
                o[r] = packed_row(vec, srow, alpha, ak, k, q, beta, v[r], srow, K);
            }
            store_o(p, vec, bt, hv, o);
        }
        store_head(vec, l, sp->checkpoint, rssm_ckpt_off(l, w, hv), S, tmpS);
        if (p->op == RSSM_OP_PREFILL) {
            base_store(l, sp, s, hv, 0);
            rssm_host_ring_clear(l, sp, s, hv, sp->cursor[s]);
        }
    }
}

/* ---- replay decode (T = 1) and verify (T tokens) ------------------------------------------
 * A work item (row b, key head kh) first prepares what its value heads share (replay_item_init:
 * q_t, k_t, the key head's committed keys), then runs, per value head, these phases in order:
 *   replay_head_load     the head's ring and window inputs; whether the step folds at start
 *   replay_window_gates  G_t, e^{G_t} k_t, e^{G_t} q_t and the keys as the ring will store them
 *   replay_end_plan      whether the step folds at its end; the fold weights it needs
 *   replay_ring_weights  the ring and window terms (small per-head vectors, before the stream)
 *   replay_stream        the one pass over S0's rows (start fold, end fold or S0 x_k, S0 x_q)
 *   replay_tokens        u_t and o_t of every token over all V rows (steps without an end fold)
 *   replay_store         outputs, fold bases and the window's ring entries */

/* What the value heads of one work item (row b, key head kh) share. */
typedef struct replay_item {
    const rssm_params *p;
    const cpu_vec *vec;
    const rssm_layer *l;
    const rssm_state *sp;
    int b, kh, s; /* row, key head, slot */
    int K, V, L, T, gk;
    int c;          /* the slot's cursor (committed entries) */
    int forced;     /* the row's fold flag */
    int verify;     /* a verify step (T tokens kept or rejected later) */
    int uniform;    /* the shared start-fold rule fires (the same for every head of the row) */
    float thr;      /* G_MAX: a head folds early when min(G) < -thr */
    float *qn, *kn; /* [T][K] normalised q (scaled) and k of the key head */
    float *kq;      /* [T] k_t . q_t */
    float *Kr;      /* [L][K] committed keys (GDN: the key head's, loaded once; KDA: per value head) */
    float *ones;    /* [K] 1.0: the alpha of the end fold's last update */
    /* GDN: k_i . k_t and k_i . q_t [T][L] of the committed positions 0..c-1 are the key head's,
     * shared by the group's value heads (each reads its live positions base..c-1, or none after
     * a start fold); made by the first head that needs them (wd_ready) */
    float *wkd, *wqd;
    int wd_ready;
    uint16_t *k16; /* [K] a key rounded to bf16 */
} replay_item;

/* One value head's step. */
typedef struct replay_head {
    int hv;
    int base; /* the head's ring base before the step */
    int h;    /* live ring entries (cursor values base .. c - 1) */
    ring rg;
    float *vv, *g, *beta;        /* the window's inputs: v [T][V], log-gates [T][gk], beta [T] */
    float Gh[RSSM_MAX_HEAD_DIM]; /* cumulative gate after the live entries */
    int start;                   /* fold the live entries into S0 before the window */
    int c0;                      /* the cursor the window starts from */
    int wbase;                   /* the ring base during the window: c0 after a start fold, else base */
    int hw;                      /* committed entries the window reads */
    float *alphaS, *KWs;         /* start fold weights over the h live entries */
    float *Gt;                   /* [T][gk] G_t */
    float *xk, *xq;              /* [T][K] e^{G_t} k_t, e^{G_t} q_t */
    float *kst;                  /* [T][K] the keys as stored (KDA: k e^{-G_t}), rounded to the ring dtype */
    int end;                     /* decode end fold: 0 none, 1 the shared rule, 2 the head's early fold */
    float *alphaN, *KWn;         /* end fold weights over the hw entries */
    float *rk, *rq;              /* [T][V] the committed ring's part of S_{t-1} alpha_t k_t, S_t q_t */
    float *wkk, *wqk;            /* [T][T] weights of the window's earlier entries t' < t */
    float *Uo;                   /* [T][V] u_t (the ring entries to append) */
    float *O;                    /* [T][V] outputs */
    float *DK;                   /* [T][V] S0 x_k, then the whole S_{t-1} alpha_t k_t */
} replay_head;

/* The per-key-head part of an item: normalised q_t, k_t, k_t . q_t and the group's committed keys. */
static void replay_item_init(replay_item *it, const cpu_job *j, int b, int kh, cpu_arena *a)
{
    const rssm_params *p = j->p;
    const cpu_vec *vec = j->vec;
    const rssm_layer *l = &p->layer;
    const rssm_state *sp = &p->state;
    const int K = l->head_k_dim, L = l->ring_len, T = p->io.tokens;
    it->p = p, it->vec = vec, it->l = l, it->sp = sp;
    it->b = b, it->kh = kh, it->s = p->io.slot[b];
    it->K = K, it->V = l->head_v_dim, it->L = L, it->T = T, it->gk = p->gk;
    it->c = sp->cursor[it->s];
    it->forced = p->io.fold ? p->io.fold[b] != 0 : 0;
    it->verify = p->op == RSSM_OP_VERIFY;
    it->uniform = rssm_start_fold(it->c, T, L, it->verify && it->forced);
    it->thr = l->fold_threshold;

    float *qn = rssm_cpu_take(a, (size_t)T * K), *kn = rssm_cpu_take(a, (size_t)T * K), *kq = rssm_cpu_take(a, T);
    for (int t = 0; t < T; t++) {
        prep_qk(p, vec, rssm_bt(&p->io, b, t), kh, qn + (size_t)t * K, kn + (size_t)t * K);
        kq[t] = vec->dot(kn + (size_t)t * K, qn + (size_t)t * K, K);
    }
    it->qn = qn, it->kn = kn, it->kq = kq;
    /* GDN: the group's committed keys (positions 0..c-1), read before any head of the group
     * writes ring_k */
    it->Kr = rssm_cpu_take(a, (size_t)L * K);
    if (l->gate == RSSM_GATE_GDN) load_keys(vec, l, sp, it->s, kh * p->group, p->group, it->c, it->Kr);
    it->ones = rssm_cpu_take(a, K);
    for (int cc = 0; cc < K; cc++)
        it->ones[cc] = 1.0f;
    it->wkd = rssm_cpu_take(a, (size_t)T * L), it->wqd = rssm_cpu_take(a, (size_t)T * L);
    it->wd_ready = 0;
    it->k16 = (uint16_t *)rssm_cpu_take(a, (size_t)K);
}

/* The head's live ring, the window's inputs (log-gates clamped at RSSM_GATE_FLOOR_F32; KDA
 * verify: at the window's levels) and the start fold: the shared rule, or the head's early fold
 * when the window would take min(G) past -G_MAX or is deep. */
static void replay_head_load(const replay_item *it, replay_head *hd, int hv, cpu_arena *a)
{
    const rssm_params *p = it->p;
    const cpu_vec *vec = it->vec;
    const rssm_layer *l = it->l;
    const int K = it->K, V = it->V, T = it->T, gk = it->gk, s = it->s;
    hd->hv = hv;
    const int base = hd->base = head_base(l, it->sp, s, hv);
    const int h = hd->h = it->c - base;
    if (l->gate == RSSM_GATE_KDA) load_keys(vec, l, it->sp, s, hv, p->group, h, it->Kr);
    load_ring(vec, l, it->sp, s, hv, gk, base, h, a, &hd->rg);
    hd->rg.Kr = live_keys(l, it->Kr, base);

    /* the window's inputs */
    float *vv = rssm_cpu_take(a, (size_t)T * V), *g = rssm_cpu_take(a, (size_t)T * gk), *beta = rssm_cpu_take(a, T);
    for (int t = 0; t < T; t++)
        prep_head(p, vec, rssm_bt(&p->io, it->b, t), hv, vv + (size_t)t * V, g + (size_t)t * gk, beta + t);
    for (int i = 0; i < T * gk; i++)
        g[i] = rssm_gate_floor_f32(g[i]);
    hd->vv = vv, hd->g = g, hd->beta = beta;
    ring_G(&hd->rg, gk, hd->Gh);

    /* KDA verify: windows that decay too far for pre-decayed keys clamp and fold (params.h) */
    int deep = 0;
    const float decay = rssm_kda_window_decay(l);
    if (it->verify && l->gate == RSSM_GATE_KDA)
        for (int c = 0; c < K; c++) {
            const float lvl = rssm_kda_window_level(g + c, gk, T, decay);
            if (!(lvl > -INFINITY)) continue; /* no clamp: the common window */
            for (int t = 0; t < T; t++)
                g[(size_t)t * gk + c] = rssm_kda_clamp(g[(size_t)t * gk + c], lvl);
            deep = 1;
        }

    int early = 0;
    if (!it->uniform && it->verify && h > 0) {
        float m = INFINITY;
        for (int i = 0; i < gk; i++) {
            float W = hd->Gh[i];
            for (int t = 0; t < T; t++)
                W += g[(size_t)t * gk + i];
            m = W < m ? W : m;
        }
        early = deep || m < -it->thr;
    }
    hd->start = it->uniform || early;
    hd->c0 = it->uniform ? 0 : it->c;
    hd->wbase = hd->start ? hd->c0 : base;
    hd->hw = hd->start ? 0 : h;
    hd->alphaS = NULL, hd->KWs = NULL;
    if (hd->start && h > 0) {
        hd->alphaS = rssm_cpu_take(a, K), hd->KWs = rssm_cpu_take(a, (size_t)h * K);
        fold_weights(&hd->rg, h, K, gk, hd->Gh, hd->alphaS, hd->KWs);
    }
}

/* Per token: G_t = G_{t-1} + g_t (from 0 after a start fold), x_k = e^{G_t} k_t,
 * x_q = e^{G_t} q_t and the key as the ring stores it (KDA pre-decayed: k e^{-G_t}). */
static void replay_window_gates(const replay_item *it, replay_head *hd, cpu_arena *a)
{
    const cpu_vec *vec = it->vec;
    const int K = it->K, T = it->T, gk = it->gk;
    const float *g = hd->g, *kn = it->kn, *qn = it->qn;
    float G0[RSSM_MAX_HEAD_DIM];
    for (int i = 0; i < gk; i++)
        G0[i] = hd->start ? 0.0f : hd->Gh[i];

    float *Gt = rssm_cpu_take(a, (size_t)T * gk), *xk = rssm_cpu_take(a, (size_t)T * K);
    float *xq = rssm_cpu_take(a, (size_t)T * K), *kst = rssm_cpu_take(a, (size_t)T * K);
    for (int t = 0; t < T; t++) {
        float *G = Gt + (size_t)t * gk;
        const float *Gp = t ? Gt + (size_t)(t - 1) * gk : G0;
        for (int i = 0; i < gk; i++)
            G[i] = Gp[i] + g[(size_t)t * gk + i];
        const float *kt = kn + (size_t)t * K, *qt = qn + (size_t)t * K;
        float *xkt = xk + (size_t)t * K, *xqt = xq + (size_t)t * K, *ks = kst + (size_t)t * K;
        if (gk == 1) {
            const float e = expf(G[0]);
            for (int cc = 0; cc < K; cc++)
                xkt[cc] = e * kt[cc], xqt[cc] = e * qt[cc], ks[cc] = kt[cc];
        } else {
            for (int cc = 0; cc < K; cc++) {
                const float e = expf(G[cc]);
                xkt[cc] = e * kt[cc], xqt[cc] = e * qt[cc];
                ks[cc] = kt[cc] / e; /* k e^{-G}: one expf per channel, not two */
            }
        }
        if (it->l->ring_dtype == RSSM_DTYPE_BF16) { /* the key as stored */
            vec->bf16_store(ks, it->k16, K);
            vec->bf16_load(it->k16, ks, K);
        }
    }
    hd->Gt = Gt, hd->xk = xk, hd->xq = xq, hd->kst = kst;
}

/* Decode end fold: 1 the shared rule (ring full or forced), 2 the head's early fold when G_1
 * passes -G_MAX (the entry is folded, never stored). Makes the per-row fold weights (the
 * transposed ring) when a start or an end fold reads them. */
static void replay_end_plan(const replay_item *it, replay_head *hd, cpu_arena *a)
{
    const int K = it->K, gk = it->gk, hw = hd->hw;
    hd->end = 0;
    if (!it->verify) {
        hd->end = (hd->c0 + 1 == it->L || it->forced) ? 1 : 0;
        if (!hd->end && min_of(hd->Gt, gk) < -it->thr) hd->end = 2;
    }
    if ((hd->start && hd->h > 0) || (hd->end && hw > 0)) ring_transpose(&hd->rg, it->V);
    hd->alphaN = NULL, hd->KWn = NULL;
    if (hd->end) {
        hd->alphaN = rssm_cpu_take(a, K), hd->KWn = rssm_cpu_take(a, (size_t)hw * K + 1);
        fold_weights(&hd->rg, hw, K, gk, hd->Gt, hd->alphaN, hd->KWn);
    }
}

/* Ring weights of the committed entries i < hw and of the window entries t' < t:
 *   GDN w = (k_i . x) e^{G_t - G_i};  KDA w = k~_i . (e^{G_t} x)
 * rk_t = sum_i w(k_t) u_i, rq_t = sum_i w(q_t) u_i [T][V]; the window's weights wkk, wqk [T][T].
 * GDN's dot products k_i . x are those of the key head's committed positions 0..c-1, made once
 * for the group; a head reads positions base..c-1 of them. */
static void replay_ring_weights(replay_item *it, replay_head *hd, cpu_arena *a)
{
    const cpu_vec *vec = it->vec;
    const int K = it->K, V = it->V, L = it->L, T = it->T, gk = it->gk, hw = hd->hw;
    const float *kn = it->kn, *qn = it->qn, *Kr = hd->rg.Kr, *Gt = hd->Gt, *kst = hd->kst;
    float *wkd = it->wkd + (gk == 1 ? hd->base : 0), *wqd = it->wqd + (gk == 1 ? hd->base : 0);
    const ring *rg = &hd->rg;
    float *rk = rssm_cpu_take(a, (size_t)T * V), *rq = rssm_cpu_take(a, (size_t)T * V);
    float *wkk = rssm_cpu_take(a, (size_t)T * T), *wqk = rssm_cpu_take(a, (size_t)T * T);
    memset(rk, 0, sizeof(float) * (size_t)T * V);
    memset(rq, 0, sizeof(float) * (size_t)T * V);
    for (int t = 0; t < T; t++) {
        const float *G = Gt + (size_t)t * gk;
        const float *xa = gk == 1 ? kn + (size_t)t * K : hd->xk + (size_t)t * K;
        const float *xb = gk == 1 ? qn + (size_t)t * K : hd->xq + (size_t)t * K;
        if (gk == 1 && hw > 0 && !it->wd_ready)
            for (int i = 0; i < it->c; i++) {
                it->wkd[(size_t)t * L + i] = vec->dot(it->Kr + (size_t)i * K, xa, K);
                it->wqd[(size_t)t * L + i] = vec->dot(it->Kr + (size_t)i * K, xb, K);
            }
        for (int i = 0; i < hw; i++) {
            const float *ki = Kr + (size_t)i * K;
            float wk, wq;
            if (gk == 1) {
                const float e = expf(G[0] - rg->G[i]);
                wk = wkd[(size_t)t * L + i] * e, wq = wqd[(size_t)t * L + i] * e;
            } else {
                wk = vec->dot(ki, xa, K), wq = vec->dot(ki, xb, K);
            }
            vec->axpy(wk, rg->U + (size_t)i * V, rk + (size_t)t * V, V); /* rk_t += w u_i */
            vec->axpy(wq, rg->U + (size_t)i * V, rq + (size_t)t * V, V);
        }
        for (int tp = 0; tp < t; tp++) {
            const float *ks = kst + (size_t)tp * K;
            float wk = vec->dot(ks, xa, K), wq = vec->dot(ks, xb, K);
            if (gk == 1) {
                const float e = expf(G[0] - Gt[tp]);
                wk *= e, wq *= e;
            }
            wkk[t * T + tp] = wk, wqk[t * T + tp] = wq;
        }
    }
    if (gk == 1 && hw > 0) it->wd_ready = 1;
    hd->rk = rk, hd->rq = rq, hd->wkk = wkk, hd->wqk = wqk;
}

/* One group of S0's rows in the stream (see row_groups). */
typedef struct replay_rows {
    int nr, rows[RSSM_CPU_STREAMS];
    const rssm_layer *l;                                /* the rows' layer (stage_head's for a staged head) */
    void *ck;                                           /* the rows' memory: the checkpoint or the staged head */
    int64_t c0;                                         /* the head's offset there */
    const float *src[RSSM_CPU_STREAMS];                 /* the rows in f32: in the checkpoint, or loaded into b1 */
    float *b1[RSSM_CPU_STREAMS], *b2[RSSM_CPU_STREAMS]; /* [K] scratch rows */
} replay_rows;

/* S0' = S0 e^{G_h} + sum_i u_i kw_i on the group's rows, stored; the stream continues from the
 * stored values (rounded to the state dtype). */
static void replay_rows_start_fold(const replay_item *it, const replay_head *hd, replay_rows *g)
{
    const cpu_vec *vec = it->vec;
    const int K = it->K, nr = g->nr, h = hd->h;
    const float *wS[RSSM_CPU_STREAMS];
    for (int i = 0; i < nr; i++)
        wS[i] = hd->rg.UT + (size_t)g->rows[i] * h;
    fold_rows(vec, nr, g->src, hd->alphaS, h, wS, hd->KWs, K, g->b1, K);
    for (int i = 0; i < nr; i++) {
        store_row(vec, g->l, g->ck, g->c0, g->rows[i], g->b1[i]);
        if (it->l->state_dtype == RSSM_DTYPE_BF16) /* continue from the stored values */
            for (int c = 0; c < K; c++)
                g->b1[i][c] = rssm_bf16_to_f32(rssm_f32_to_bf16(g->b1[i][c]));
        g->src[i] = g->b1[i];
    }
}

/* The whole step on the group's rows, stored as the new checkpoint:
 *   S_n = S0' e^{G_n} + sum_i u_i kw_i + u_n k_n;  o = S_n q   (hw = 0: the packed rows) */
static void replay_rows_end_fold(const replay_item *it, const replay_head *hd, const replay_rows *g)
{
    const cpu_vec *vec = it->vec;
    const int K = it->K, nr = g->nr, hw = hd->hw;
    const int *rows = g->rows;
    const float *beta = hd->beta;
    float *out[RSSM_CPU_STREAMS], vr[RSSM_CPU_STREAMS], o4[RSSM_CPU_STREAMS];
    for (int i = 0; i < nr; i++) {
        out[i] = rows_in_place(g->l) ? row_at(g->l, g->ck, g->c0, rows[i]) : g->b2[i];
        vr[i] = hd->vv[rows[i]];
    }
    if (hw == 0) {
        packed_rows(vec, nr, g->src, hd->alphaN, hd->xk, it->kn, it->qn, beta[0], vr, out, o4, K);
    } else {
        float u[RSSM_CPU_STREAMS], dx[RSSM_CPU_STREAMS];
        const float *wN[RSSM_CPU_STREAMS];
        dot_rows(vec, nr, g->src, hd->xk, K, dx);
        for (int i = 0; i < nr; i++)
            u[i] = beta[0] * (vr[i] - (dx[i] + hd->rk[rows[i]]));
        for (int i = 0; i < nr; i++)
            wN[i] = hd->rg.UT + (size_t)rows[i] * hw;
        fold_rows(vec, nr, g->src, hd->alphaN, hw, wN, hd->KWn, K, g->b2, K);
        update_dot_rows(vec, nr, (const float *const *)g->b2, it->ones, u, it->kn, it->qn, out, K, o4);
    }
    for (int i = 0; i < nr; i++) {
        hd->O[rows[i]] = o4[i];
        if (!rows_in_place(g->l)) store_row(vec, g->l, g->ck, g->c0, rows[i], out[i]);
    }
}

/* The stream over S0's rows, RSSM_CPU_STREAMS rows at a time: S0 x_k and S0 x_q of every token
 * into DK, O [T][V] (or, on an end fold, the whole step), after the start fold if there is one. */
static void replay_stream(const replay_item *it, replay_head *hd, cpu_arena *a)
{
    const cpu_vec *vec = it->vec;
    const rssm_layer *l = it->l;
    const int K = it->K, V = it->V, T = it->T;
    hd->Uo = rssm_cpu_take(a, (size_t)T * V), hd->O = rssm_cpu_take(a, (size_t)T * V);
    hd->DK = rssm_cpu_take(a, (size_t)T * V);
    float *buf1 = rssm_cpu_take(a, (size_t)RSSM_CPU_STREAMS * K),
          *buf2 = rssm_cpu_take(a, (size_t)RSSM_CPU_STREAMS * K);
    const int64_t c_off = rssm_ckpt_off(l, it->s, hd->hv);
    const void *ck = it->sp->checkpoint;
    int64_t c0 = c_off;
    rssm_layer staged;
    float *Sh = staging_scratch(l, a);
    const rssm_layer *lr = stage_head(vec, l, &ck, &c0, Sh, Sh + (size_t)V * K, &staged);
    prefetch_next_head(it->p, it->b, hd->hv, 1);
    for (int gi = 0, ng = row_groups(V); gi < ng; gi++) {
        replay_rows g;
        const int nr = g.nr = group_rows(V, gi, g.rows);
        g.l = lr, g.ck = (void *)ck, g.c0 = c0;
        for (int i = 0; i < nr; i++) {
            g.b1[i] = buf1 + (size_t)i * K, g.b2[i] = buf2 + (size_t)i * K;
            if (rows_in_place(lr)) {
                g.src[i] = row_at(lr, ck, c0, g.rows[i]);
            } else {
                load_row(vec, lr, ck, c0, g.rows[i], g.b1[i]);
                g.src[i] = g.b1[i];
            }
        }
        if (hd->start && hd->h > 0) replay_rows_start_fold(it, hd, &g);
        if (hd->end) {
            replay_rows_end_fold(it, hd, &g);
            continue;
        }
        float dx[RSSM_CPU_STREAMS], dy[RSSM_CPU_STREAMS];
        for (int t = 0; t < T; t++) {
            dot2_rows(vec, nr, g.src, hd->xk + (size_t)t * K, hd->xq + (size_t)t * K, K, dx, dy);
            for (int i = 0; i < nr; i++)
                hd->DK[(size_t)t * V + g.rows[i]] = dx[i], hd->O[(size_t)t * V + g.rows[i]] = dy[i];
        }
    }
    if (lr != l && ((hd->start && hd->h > 0) || hd->end))
        store_head(vec, l, it->sp->checkpoint, c_off, Sh, Sh + (size_t)V * K);
}

/* Per token, over all rows at once (steps without an end fold):
 *   u_t = beta (v - [S0 x_k + ring + window]);  o_t = S0 x_q + ring + window + u_t (k.q)
 * window terms use the entries as stored (rounded to the ring dtype) */
static void replay_tokens(const replay_item *it, const replay_head *hd, cpu_arena *a)
{
    const cpu_vec *vec = it->vec;
    const int V = it->V, T = it->T;
    const float *wkk = hd->wkk, *wqk = hd->wqk;
    float *Ust = rssm_cpu_take(a, (size_t)T * V);
    uint16_t *u16 = (uint16_t *)rssm_cpu_take(a, (size_t)V);
    for (int t = 0; t < T; t++) {
        float *d = hd->DK + (size_t)t * V, *o = hd->O + (size_t)t * V, *u = hd->Uo + (size_t)t * V;
        const float *rkt = hd->rk + (size_t)t * V, *rqt = hd->rq + (size_t)t * V, *vt = hd->vv + (size_t)t * V;
        for (int r = 0; r < V; r++)
            d[r] += rkt[r], o[r] += rqt[r];
        for (int tp = 0; tp < t; tp++) {
            vec->axpy(wkk[t * T + tp], Ust + (size_t)tp * V, d, V); /* d += ust_tp wkk */
            vec->axpy(wqk[t * T + tp], Ust + (size_t)tp * V, o, V);
        }
        const float bt = hd->beta[t];
        for (int r = 0; r < V; r++)
            u[r] = bt * (vt[r] - d[r]);
        if (t + 1 < T) {
            if (it->l->ring_dtype == RSSM_DTYPE_BF16) {
                vec->bf16_store(u, u16, V);
                vec->bf16_load(u16, Ust + (size_t)t * V, V);
            } else {
                memcpy(Ust + (size_t)t * V, u, sizeof(float) * (size_t)V);
            }
        }
        vec->axpy(it->kq[t], u, o, V); /* o = fma(u, k.q, o) */
    }
}

/* The outputs; the fold base of a folded head; without an end fold, the window's entries at the
 * positions of cursor values c0 .. c0+T-1 (rssm_ring_pos). GDN's keys are the key head's: the
 * group's first value head writes them whenever the step stores entries (also when that head
 * itself folds early: the group's other heads may store theirs). */
static void replay_store(const replay_item *it, const replay_head *hd)
{
    const rssm_params *p = it->p;
    const cpu_vec *vec = it->vec;
    const rssm_layer *l = it->l;
    const rssm_state *sp = it->sp;
    const int K = it->K, V = it->V, T = it->T, gk = it->gk, s = it->s, hv = hd->hv;
    const rssm_dtype rdt = l->ring_dtype;
    for (int t = 0; t < T; t++)
        store_o(p, vec, rssm_bt(&p->io, it->b, t), hv, hd->O + (size_t)t * V);

    if (hd->start) base_store(l, sp, s, hv, hd->c0);
    if (hd->end) base_store(l, sp, s, hv, hd->end == 2 ? hd->c0 + 1 : 0);
    const int write_k = l->gate == RSSM_GATE_KDA ? !hd->end : hv % p->group == 0 && hd->end != 1;
    for (int t = 0; t < T; t++) {
        const int pos = rssm_ring_pos(l, hd->c0 + t, hd->wbase);
        if (write_k)
            store_f32(vec, sp->ring_k, rdt, rssm_ring_k_off(l, s, hv, p->group, pos), hd->kst + (size_t)t * K, K);
        if (hd->end) continue;
        store_f32(vec, sp->ring_u, rdt, rssm_ring_u_off(l, s, hv, pos), hd->Uo + (size_t)t * V, V);
        memcpy((float *)sp->ring_g + rssm_ring_g_off(l, s, hv, pos, gk), hd->Gt + (size_t)t * gk,
               sizeof(float) * (size_t)gk);
    }
}

void rssm_cpu_item_replay(const cpu_job *j, int b, int kh, cpu_arena *a)
{
    const rssm_params *p = j->p;
    if (p->io.slot[b] < 0) {
        zero_o(p, b, kh);
        return;
    }
    replay_item it;
    replay_item_init(&it, j, b, kh, a);
    const size_t mark = a->used;
    for (int hv = kh * p->group; hv < (kh + 1) * p->group; hv++) {
        a->used = mark;
        replay_head hd;
        replay_head_load(&it, &hd, hv, a);
        replay_window_gates(&it, &hd, a);
        replay_end_plan(&it, &hd, a);
        replay_ring_weights(&it, &hd, a);
        replay_stream(&it, &hd, a);
        if (!hd.end) replay_tokens(&it, &hd, a);
        replay_store(&it, &hd);
    }
}

/* ---- materialise ------------------------------------------------------------------------ */

void rssm_cpu_item_materialize(const cpu_job *j, int b, int kh, cpu_arena *a)
{
    const rssm_materialize_params *m = j->m;
    const cpu_vec *vec = j->vec;
    const rssm_layer *l = &m->layer;
    const int K = l->head_k_dim, V = l->head_v_dim, gk = m->gk;
    const int s = m->src_slot[b], d = m->dst_slot[b];
    if (s < 0 || d < 0) return;
    float *Kr = rssm_cpu_take(a, (size_t)l->ring_len * K), *row = rssm_cpu_take(a, (size_t)RSSM_CPU_STREAMS * K);
    float *Sh = staging_scratch(l, a);
    const size_t mark = a->used;
    for (int hv = kh * m->group; hv < (kh + 1) * m->group; hv++) {
        a->used = mark;
        ring rg;
        const int base = head_base(l, &m->src, s, hv), h = m->src.cursor[s] - base;
        if (l->gate == RSSM_GATE_KDA) load_keys(vec, l, &m->src, s, hv, m->group, h, Kr);
        if (l->gate == RSSM_GATE_GDN && hv == kh * m->group)
            load_keys(vec, l, &m->src, s, hv, m->group, m->src.cursor[s], Kr);
        load_ring(vec, l, &m->src, s, hv, gk, base, h, a, &rg);
        rg.Kr = live_keys(l, Kr, base);
        float *alpha = rssm_cpu_take(a, K), *KW = rssm_cpu_take(a, (size_t)h * K + 1), G[RSSM_MAX_HEAD_DIM];
        ring_transpose(&rg, V);
        ring_G(&rg, gk, G);
        fold_weights(&rg, h, K, gk, G, alpha, KW);
        /* dst row = S0 row e^{G_h} + sum_i u_i kw_i, four row streams at a time (src may be dst:
         * every row is read before it is written, and rows are distinct) */
        const int64_t dof = rssm_ckpt_off(l, d, hv);
        int64_t so = rssm_ckpt_off(l, s, hv);
        const void *ck = m->src.checkpoint;
        rssm_layer staged;
        const rssm_layer *lr = stage_head(vec, l, &ck, &so, Sh, Sh + (size_t)V * K, &staged); /* K-first: in Sh */
        void *dck = lr == l ? m->dst.checkpoint : Sh;
        const int64_t ddo = lr == l ? dof : 0;
        const int in_place = rows_in_place(lr);
        for (int gi = 0, ng = row_groups(V); gi < ng; gi++) {
            int rows[RSSM_CPU_STREAMS];
            const int nr = group_rows(V, gi, rows);
            const float *src[RSSM_CPU_STREAMS], *w[RSSM_CPU_STREAMS];
            float *out[RSSM_CPU_STREAMS];
            for (int i = 0; i < nr; i++) {
                w[i] = rg.UT + (size_t)rows[i] * h;
                if (in_place) {
                    src[i] = row_at(lr, ck, so, rows[i]);
                    out[i] = row_at(lr, dck, ddo, rows[i]);
                } else {
                    out[i] = row + (size_t)i * K;
                    load_row(vec, lr, ck, so, rows[i], out[i]);
                    src[i] = out[i];
                }
            }
            if (h > 0) {
                fold_rows(vec, nr, src, alpha, h, w, KW, K, out, K);
            } else if (in_place) {
                for (int i = 0; i < nr; i++)
                    if (out[i] != src[i]) memmove(out[i], src[i], sizeof(float) * (size_t)K);
            }
            if (!in_place)
                for (int i = 0; i < nr; i++)
                    store_row(vec, lr, m->dst.checkpoint, dof, rows[i], out[i]);
        }
        if (lr != l) store_head(vec, l, m->dst.checkpoint, dof, Sh, Sh + (size_t)V * K);
        base_store(l, &m->dst, d, hv, 0);
    }
}
