/*
 * cpu_kernels.c — the work items of the CPU back end: one (row b, key head kh) with the
 * `group` value heads that read that key head. All maths in float32 (ref.c has the float64
 * oracle and the exact semantics; docs/design.md the derivations).
 *
 * Per value head the checkpoint S0 [V][K] is streamed once, row by row (row r = value index):
 *   packed:  u = beta (v_r - S_r . (alpha k));  S_r <- fma(u, k, S_r alpha);  o_r = S_r . q
 *   replay:  dk_t = S0_r . (e^{G_t} k_t), dq_t = S0_r . (e^{G_t} q_t) for every window token t,
 *            plus the ring terms, which are small per-head vectors computed before the stream.
 *   fold:    S_n,r = S0_r e^{G_n} + sum_i u_i[r] kw_i  (+ u_n[r] k_n on an end fold), with
 *            kw_i = k_i e^{G_n - G_i} (GDN) or k~_i e^{G_n} (KDA, pre-decayed keys).
 * An end fold with an empty ring calls exactly the packed row routine, so replay at L = 1
 * equals packed decode bit for bit.
 *
 * A work item owns whole (row, key-head group)s: a GDN group's shared ring_k is read (its
 * committed entries copied to scratch) before any head of the group appends or folds.
 */
#include <math.h>
#include <string.h>

#include "core/layout.h"
#include "cpu/cpu_internal.h"

/* ---- dtype helpers ------------------------------------------------------------------------ */

static size_t esize(rssm_dtype dt) { return dt == RSSM_DTYPE_BF16 ? 2 : 4; }

static void *at(const void *base, rssm_dtype dt, int64_t off) { return (char *)base + off * (int64_t)esize(dt); }

/* dst[0..n) <- src (f32 or bf16) */
static void load_f32(const cpu_vec *vec, const void *base, rssm_dtype dt, int64_t off, float *dst, int n)
{
    if (dt == RSSM_DTYPE_BF16) vec->bf16_load(at(base, dt, off), dst, n);
    else memcpy(dst, at(base, dt, off), sizeof(float) * (size_t)n);
}

/* dst (f32 or bf16) <- src[0..n), rounding to the dtype */
static void store_f32(const cpu_vec *vec, void *base, rssm_dtype dt, int64_t off, const float *src, int n)
{
    if (dt == RSSM_DTYPE_BF16) vec->bf16_store(src, at(base, dt, off), n);
    else memcpy(at(base, dt, off), src, sizeof(float) * (size_t)n);
}

/* x rounded to a storage dtype */
static float round_to(rssm_dtype dt, float x) { return dt == RSSM_DTYPE_BF16 ? rssm_bf16_to_f32(rssm_f32_to_bf16(x)) : x; }

static float min_of(const float *x, int n)
{
    float m = x[0];
    for (int i = 1; i < n; i++) m = x[i] < m ? x[i] : m;
    return m;
}

/* Software prefetch of the checkpoint ~2 KiB ahead of row `off` (the stream is latency
 * bound on few cores; a prefetch past the tensor's end is harmless). */
#define RSSM_PREFETCH_BYTES 2048
static inline void prefetch_ahead(const void *base, rssm_dtype dt, int64_t off, int K)
{
    const char *p = (const char *)base + off * (int64_t)esize(dt) + RSSM_PREFETCH_BYTES;
    const int64_t n = (int64_t)K * (int64_t)esize(dt);
    for (int64_t i = 0; i < n; i += 64) __builtin_prefetch(p + i, 0, 3);
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
    const int V = l->head_v_dim, gk = p->gk, HV = l->num_v_heads;
    load_f32(vec, io->v, l->io_dtype, bt * io->v_stride + (int64_t)hv * V, v, V);
    if (io->g) {
        memcpy(g, io->g + (bt * HV + hv) * gk, sizeof(float) * (size_t)gk);
        *beta = io->beta[bt * HV + hv];
        return;
    }
    const int64_t a0 = bt * io->a_stride + (int64_t)hv * gk;
    for (int c = 0; c < gk; c++) {
        const float a = l->io_dtype == RSSM_DTYPE_BF16 ? rssm_bf16_to_f32(((const uint16_t *)io->a)[a0 + c])
                                                       : ((const float *)io->a)[a0 + c];
        g[c] = rssm_gate_f32(a, io->A_log[hv], io->dt_bias[hv * gk + c], l->has_lower_bound, l->lower_bound);
    }
    const int64_t b0 = bt * io->b_stride + hv;
    const float bb = l->io_dtype == RSSM_DTYPE_BF16 ? rssm_bf16_to_f32(((const uint16_t *)io->b)[b0])
                                                    : ((const float *)io->b)[b0];
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
    for (int t = 0; t < p->io.tokens; t++)
        for (int hv = kh * p->group; hv < (kh + 1) * p->group; hv++)
            memset(at(p->io.o, l->io_dtype, rssm_o_off(l, rssm_bt(&p->io, b, t), hv)), 0,
                   esize(l->io_dtype) * (size_t)l->head_v_dim);
}

/* ---- the packed row: shared by packed decode, prefill and replay end folds ------------------ */

/* One row r of one recurrent step on srow [K] (f32), result in out [K] (may alias srow):
 *   u = beta (v_r - srow . ak);  out = fma(u, k, srow alpha);  returns o_r = out . q  (*u_out = u) */
static inline float packed_row(const cpu_vec *vec, const float *srow, const float *alpha, const float *ak,
                               const float *k, const float *q, float beta, float vr, float *out, int K)
{
    const float d = vec->dot(srow, ak, K);
    const float u = beta * (vr - d);
    return vec->update_dot(srow, alpha, u, k, q, out, K);
}

/* ---- ring access ---------------------------------------------------------------------------- */

typedef struct ring {
    int h;       /* live entries */
    float *U;    /* [h][V] u_i as stored */
    float *UT;   /* [V][h] the same, transposed (per-row weights of a fold) */
    float *Kr;   /* [h][K] keys as stored (GDN normalised k; KDA pre-decayed k~) */
    float *G;    /* [h][gk] cumulative log-gates */
} ring;

static int live_entries(const rssm_layer *l, const rssm_state *sp, int s, int hv)
{
    const int base = (l->gate == RSSM_GATE_KDA && sp->ring_base) ? sp->ring_base[rssm_base_off(l, s, hv)] : 0;
    return sp->cursor ? sp->cursor[s] - base : 0;
}

/* Committed keys of entries 0..h-1 of (slot s, value head hv) (GDN: its key head's). */
static void load_keys(const cpu_vec *vec, const rssm_layer *l, const rssm_state *sp, int s, int hv, int group, int h,
                       float *Kr)
{
    const int K = l->head_k_dim;
    if (h > 0) load_f32(vec, sp->ring_k, l->ring_dtype, rssm_ring_k_off(l, s, hv, group, 0), Kr, h * K);
}

/* u and G of entries 0..h-1 of (s, hv); keys must already be in rg->Kr. */
static void load_ring(const cpu_vec *vec, const rssm_layer *l, const rssm_state *sp, int s, int hv, int gk, int h,
                      cpu_arena *a, ring *rg)
{
    const int V = l->head_v_dim;
    rg->h = h;
    rg->U = rssm_cpu_take(a, (size_t)h * V + 1);
    rg->UT = rssm_cpu_take(a, (size_t)h * V + 1);
    rg->G = rssm_cpu_take(a, (size_t)h * gk + 1);
    if (h == 0) return;
    load_f32(vec, sp->ring_u, l->ring_dtype, rssm_ring_u_off(l, s, hv, 0), rg->U, h * V);
    memcpy(rg->G, (const float *)sp->ring_g + rssm_ring_g_off(l, s, hv, 0, gk), sizeof(float) * (size_t)h * gk);
}

/* rg->UT [V][h] <- rg->U [h][V]: the per-row weights of a fold (only folds need it) */
static void ring_transpose(ring *rg, int V)
{
    const int h = rg->h;
    for (int i = 0; i < h; i++)
        for (int r = 0; r < V; r++) rg->UT[r * h + i] = rg->U[i * V + r];
}

/* Cumulative gate after the live entries: G_{h-1}, or 0 */
static void ring_G(const ring *rg, int gk, float *G)
{
    for (int c = 0; c < gk; c++) G[c] = rg->h > 0 ? rg->G[(rg->h - 1) * gk + c] : 0.0f;
}

/* Fold weights of entries i < n at cumulative gate Gn:  alpha[c] = e^{Gn},
 *   KW[i][c] = k_i[c] e^{Gn - G_i}  (GDN)   or   k~_i[c] e^{Gn[c]}  (KDA) */
static void fold_weights(const ring *rg, int n, int K, int gk, const float *Gn, float *alpha, float *KW)
{
    for (int c = 0; c < K; c++) alpha[c] = expf(Gn[gk == 1 ? 0 : c]);
    for (int i = 0; i < n; i++) {
        const float *ki = rg->Kr + (size_t)i * K;
        float *kw = KW + (size_t)i * K;
        if (gk == 1) {
            const float e = expf(Gn[0] - rg->G[i]);
            for (int c = 0; c < K; c++) kw[c] = ki[c] * e;
        } else {
            for (int c = 0; c < K; c++) kw[c] = ki[c] * alpha[c];
        }
    }
}

/* S [V][K] f32 <- checkpoint of (s, hv) with its live ring folded in (not rounded) */
static void fold_head(const cpu_vec *vec, const rssm_layer *l, const rssm_state *sp, int s, int hv, int gk,
                      ring *rg, cpu_arena *a, float *S)
{
    const int V = l->head_v_dim, K = l->head_k_dim;
    float *alpha = rssm_cpu_take(a, K), *KW = rssm_cpu_take(a, (size_t)rg->h * K + 1), G[RSSM_MAX_HEAD_DIM];
    ring_transpose(rg, V);
    ring_G(rg, gk, G);
    fold_weights(rg, rg->h, K, gk, G, alpha, KW);
    load_f32(vec, sp->checkpoint, l->state_dtype, rssm_ckpt_off(l, s, hv), S, V * K);
    if (rg->h == 0) return; /* S0 e^0 = S0 */
    for (int r = 0; r < V; r++) vec->fold(S + (size_t)r * K, alpha, rg->h, rg->UT + (size_t)r * rg->h, KW, K, S + (size_t)r * K, K);
}

static void base_store(const rssm_layer *l, const rssm_state *sp, int s, int hv, int32_t base)
{
    if (l->gate == RSSM_GATE_KDA && sp->ring_base) sp->ring_base[rssm_base_off(l, s, hv)] = base;
}

/* ---- packed decode and prefill ----------------------------------------------------------- */

void rssm_cpu_item_packed(const cpu_job *j, int b, int kh, cpu_arena *a)
{
    const rssm_params *p = j->p;
    const cpu_vec *vec = j->vec;
    const rssm_layer *l = &p->layer;
    const rssm_state *sp = &p->state;
    const int K = l->head_k_dim, V = l->head_v_dim, T = p->io.tokens, gk = p->gk;
    const int s = p->io.slot[b];
    if (s < 0) {
        zero_o(p, b, kh);
        return;
    }
    const int w = (p->op == RSSM_OP_DECODE_PACKED && p->io.write_slot) ? p->io.write_slot[b] : s;
    const rssm_dtype sdt = l->state_dtype;
    float *q = rssm_cpu_take(a, K), *k = rssm_cpu_take(a, K), *alpha = rssm_cpu_take(a, K), *ak = rssm_cpu_take(a, K);
    float *v = rssm_cpu_take(a, V), *o = rssm_cpu_take(a, V), *tmp = rssm_cpu_take(a, K);
    float g[RSSM_MAX_HEAD_DIM], beta;

    if (p->op == RSSM_OP_DECODE_PACKED && T == 1) {
        /* streaming: each row of S read once, updated, written once */
        const int64_t bt = rssm_bt(&p->io, b, 0);
        prep_qk(p, vec, bt, kh, q, k);
        for (int hv = kh * p->group; hv < (kh + 1) * p->group; hv++) {
            prep_head(p, vec, bt, hv, v, g, &beta);
            for (int c = 0; c < K; c++) alpha[c] = expf(g[gk == 1 ? 0 : c]), ak[c] = alpha[c] * k[c];
            const int64_t src = rssm_ckpt_off(l, s, hv), dst = rssm_ckpt_off(l, w, hv);
            for (int r = 0; r < V; r++) {
                prefetch_ahead(sp->checkpoint, sdt, src + (int64_t)r * K, K);
                if (sdt == RSSM_DTYPE_F32) {
                    const float *srow = (const float *)sp->checkpoint + src + (int64_t)r * K;
                    float *drow = (float *)sp->checkpoint + dst + (int64_t)r * K;
                    o[r] = packed_row(vec, srow, alpha, ak, k, q, beta, v[r], drow, K);
                } else {
                    load_f32(vec, sp->checkpoint, sdt, src + (int64_t)r * K, tmp, K);
                    o[r] = packed_row(vec, tmp, alpha, ak, k, q, beta, v[r], tmp, K);
                    store_f32(vec, sp->checkpoint, sdt, dst + (int64_t)r * K, tmp, K);
                }
            }
            store_o(p, vec, bt, hv, o);
        }
        return;
    }

    /* T tokens on an f32 copy of the head's state, rounded once at the end */
    float *S = rssm_cpu_take(a, (size_t)V * K), *Kr = rssm_cpu_take(a, (size_t)l->ring_len * K);
    const size_t mark = a->used;
    for (int hv = kh * p->group; hv < (kh + 1) * p->group; hv++) {
        a->used = mark;
        if (p->op == RSSM_OP_PREFILL) {
            /* start from the materialised state: checkpoint with its live ring folded in */
            ring rg;
            const int h = live_entries(l, sp, s, hv);
            if (l->gate == RSSM_GATE_KDA || hv == kh * p->group) load_keys(vec, l, sp, s, hv, p->group, h, Kr);
            load_ring(vec, l, sp, s, hv, gk, h, a, &rg);
            rg.Kr = Kr;
            fold_head(vec, l, sp, s, hv, gk, &rg, a, S);
        } else {
            load_f32(vec, sp->checkpoint, sdt, rssm_ckpt_off(l, s, hv), S, V * K);
        }
        for (int t = 0; t < T; t++) {
            const int64_t bt = rssm_bt(&p->io, b, t);
            prep_qk(p, vec, bt, kh, q, k);
            prep_head(p, vec, bt, hv, v, g, &beta);
            for (int c = 0; c < K; c++) alpha[c] = expf(g[gk == 1 ? 0 : c]), ak[c] = alpha[c] * k[c];
            for (int r = 0; r < V; r++) {
                float *srow = S + (size_t)r * K;
                o[r] = packed_row(vec, srow, alpha, ak, k, q, beta, v[r], srow, K);
            }
            store_o(p, vec, bt, hv, o);
        }
        store_f32(vec, sp->checkpoint, sdt, rssm_ckpt_off(l, w, hv), S, V * K);
        if (p->op == RSSM_OP_PREFILL) base_store(l, sp, s, hv, 0);
    }
}

/* ---- replay decode (T = 1) and verify (T tokens) ------------------------------------------ */

void rssm_cpu_item_replay(const cpu_job *j, int b, int kh, cpu_arena *a)
{
    const rssm_params *p = j->p;
    const cpu_vec *vec = j->vec;
    const rssm_layer *l = &p->layer;
    const rssm_state *sp = &p->state;
    const int K = l->head_k_dim, V = l->head_v_dim, L = l->ring_len, T = p->io.tokens, gk = p->gk;
    const int s = p->io.slot[b];
    if (s < 0) {
        zero_o(p, b, kh);
        return;
    }
    const rssm_dtype sdt = l->state_dtype, rdt = l->ring_dtype;
    const int c = sp->cursor[s];
    const int forced = p->io.fold ? p->io.fold[b] != 0 : 0;
    const int verify = p->op == RSSM_OP_VERIFY;
    const int uniform = rssm_start_fold(c, T, L, verify && forced);
    const float thr = l->kda_fold_threshold;

    /* per key head: normalised q_t, k_t and k_t . q_t */
    float *qn = rssm_cpu_take(a, (size_t)T * K), *kn = rssm_cpu_take(a, (size_t)T * K), *kq = rssm_cpu_take(a, T);
    for (int t = 0; t < T; t++) {
        prep_qk(p, vec, rssm_bt(&p->io, b, t), kh, qn + (size_t)t * K, kn + (size_t)t * K);
        kq[t] = vec->dot(kn + (size_t)t * K, qn + (size_t)t * K, K);
    }
    /* GDN: the group's committed keys, read before any head of the group writes ring_k */
    float *Kr = rssm_cpu_take(a, (size_t)L * K);
    if (l->gate == RSSM_GATE_GDN) load_keys(vec, l, sp, s, kh * p->group, p->group, c, Kr);
    float *ones = rssm_cpu_take(a, K);
    for (int cc = 0; cc < K; cc++) ones[cc] = 1.0f;

    const size_t mark = a->used;
    for (int hv = kh * p->group; hv < (kh + 1) * p->group; hv++) {
        a->used = mark;
        const int h = live_entries(l, sp, s, hv);
        if (l->gate == RSSM_GATE_KDA) load_keys(vec, l, sp, s, hv, p->group, h, Kr);
        ring rg;
        load_ring(vec, l, sp, s, hv, gk, h, a, &rg);
        rg.Kr = Kr;

        /* the window's inputs and cumulative gates G_t = G_{t-1} + g_t */
        float *vv = rssm_cpu_take(a, (size_t)T * V), *g = rssm_cpu_take(a, (size_t)T * gk), *beta = rssm_cpu_take(a, T);
        for (int t = 0; t < T; t++)
            prep_head(p, vec, rssm_bt(&p->io, b, t), hv, vv + (size_t)t * V, g + (size_t)t * gk, beta + t);
        float Gh[RSSM_MAX_HEAD_DIM];
        ring_G(&rg, gk, Gh);

        /* start fold: the shared rule, or KDA's early fold when the window would pass -G_MAX */
        int early = 0;
        if (!uniform && verify && gk > 1 && h > 0) {
            float W[RSSM_MAX_HEAD_DIM];
            for (int i = 0; i < gk; i++) {
                W[i] = Gh[i];
                for (int t = 0; t < T; t++) W[i] += g[(size_t)t * gk + i];
            }
            early = min_of(W, gk) < -thr;
        }
        const int start = uniform || early;
        const int c0 = uniform ? 0 : c;     /* the cursor the window starts from */
        const int hw = start ? 0 : h;       /* committed entries the window reads */
        float *alphaS = NULL, *KWs = NULL;
        if (start && h > 0) {
            alphaS = rssm_cpu_take(a, K), KWs = rssm_cpu_take(a, (size_t)h * K);
            fold_weights(&rg, h, K, gk, Gh, alphaS, KWs);
        }
        float G0[RSSM_MAX_HEAD_DIM];
        for (int i = 0; i < gk; i++) G0[i] = start ? 0.0f : Gh[i];

        /* per token: G_t, x_k = e^{G_t} k_t, x_q = e^{G_t} q_t, the stored key (KDA k e^{-G_t}) */
        float *Gt = rssm_cpu_take(a, (size_t)T * gk), *xk = rssm_cpu_take(a, (size_t)T * K);
        float *xq = rssm_cpu_take(a, (size_t)T * K), *kst = rssm_cpu_take(a, (size_t)T * K);
        for (int t = 0; t < T; t++) {
            float *G = Gt + (size_t)t * gk;
            const float *Gp = t ? Gt + (size_t)(t - 1) * gk : G0;
            for (int i = 0; i < gk; i++) G[i] = Gp[i] + g[(size_t)t * gk + i];
            const float *kt = kn + (size_t)t * K, *qt = qn + (size_t)t * K;
            float *xkt = xk + (size_t)t * K, *xqt = xq + (size_t)t * K, *ks = kst + (size_t)t * K;
            if (gk == 1) {
                const float e = expf(G[0]);
                for (int cc = 0; cc < K; cc++) xkt[cc] = e * kt[cc], xqt[cc] = e * qt[cc], ks[cc] = round_to(rdt, kt[cc]);
            } else {
                for (int cc = 0; cc < K; cc++) {
                    const float e = expf(G[cc]);
                    xkt[cc] = e * kt[cc], xqt[cc] = e * qt[cc];
                    ks[cc] = round_to(rdt, kt[cc] * expf(-G[cc]));
                }
            }
        }

        /* decode end fold: 1 shared rule, 2 KDA early fold (the entry is folded, never stored) */
        int end = 0;
        if (!verify) {
            end = (c0 + 1 == L || forced) ? 1 : 0;
            if (!end && gk > 1 && min_of(Gt, gk) < -thr) end = 2;
        }
        if ((start && h > 0) || (end && hw > 0)) ring_transpose(&rg, V);
        float *alphaN = NULL, *KWn = NULL;
        if (end) {
            alphaN = rssm_cpu_take(a, K), KWn = rssm_cpu_take(a, (size_t)hw * K + 1);
            fold_weights(&rg, hw, K, gk, Gt, alphaN, KWn);
        }

        /* ring weights of the committed entries i < hw and of the window entries t' < t:
         *   GDN w = (k_i . x) e^{G_t - G_i};  KDA w = k~_i . (e^{G_t} x) */
        float *rk = rssm_cpu_take(a, (size_t)T * V), *rq = rssm_cpu_take(a, (size_t)T * V);
        float *wkk = rssm_cpu_take(a, (size_t)T * T), *wqk = rssm_cpu_take(a, (size_t)T * T);
        memset(rk, 0, sizeof(float) * (size_t)T * V);
        memset(rq, 0, sizeof(float) * (size_t)T * V);
        for (int t = 0; t < T; t++) {
            const float *G = Gt + (size_t)t * gk;
            const float *xa = gk == 1 ? kn + (size_t)t * K : xk + (size_t)t * K;
            const float *xb = gk == 1 ? qn + (size_t)t * K : xq + (size_t)t * K;
            for (int i = 0; i < hw; i++) {
                const float *ki = Kr + (size_t)i * K;
                float wk = vec->dot(ki, xa, K), wq = vec->dot(ki, xb, K);
                if (gk == 1) {
                    const float e = expf(G[0] - rg.G[i]);
                    wk *= e, wq *= e;
                }
                vec->axpy(wk, rg.U + (size_t)i * V, rk + (size_t)t * V, V); /* rk_t += w u_i */
                vec->axpy(wq, rg.U + (size_t)i * V, rq + (size_t)t * V, V);
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

        /* the stream over S0's rows */
        float *Uo = rssm_cpu_take(a, (size_t)T * V), *O = rssm_cpu_take(a, (size_t)T * V);
        float *r1 = rssm_cpu_take(a, K), *r2 = rssm_cpu_take(a, K);
        float dk[RSSM_MAX_RING_LEN], dq[RSSM_MAX_RING_LEN], ust[RSSM_MAX_RING_LEN];
        const int64_t c_off = rssm_ckpt_off(l, s, hv);
        for (int r = 0; r < V; r++) {
            const int64_t roff = c_off + (int64_t)r * K;
            prefetch_ahead(sp->checkpoint, sdt, roff, K);
            const float *srow;
            if (sdt == RSSM_DTYPE_F32) {
                srow = (const float *)sp->checkpoint + roff;
            } else {
                load_f32(vec, sp->checkpoint, sdt, roff, r1, K);
                srow = r1;
            }
            if (start && h > 0) {
                /* S0' = S0 e^{G_h} + sum_i u_i kw_i, stored; continue from the stored values */
                vec->fold(srow, alphaS, h, rg.UT + (size_t)r * h, KWs, K, r1, K);
                store_f32(vec, sp->checkpoint, sdt, roff, r1, K);
                if (sdt == RSSM_DTYPE_BF16) load_f32(vec, sp->checkpoint, sdt, roff, r1, K);
                srow = r1;
            }
            if (end) {
                /* S_n = S0' e^{G_n} + sum_i u_i kw_i + u_n k_n;  o = S_n q  (hw = 0: the packed row) */
                float *out = sdt == RSSM_DTYPE_F32 ? (float *)sp->checkpoint + roff : r2;
                if (hw == 0) {
                    O[r] = packed_row(vec, srow, alphaN, xk, kn, qn, beta[0], vv[r], out, K);
                } else {
                    const float d = vec->dot(srow, xk, K) + rk[r];
                    const float u = beta[0] * (vv[r] - d);
                    vec->fold(srow, alphaN, hw, rg.UT + (size_t)r * hw, KWn, K, r2, K);
                    O[r] = vec->update_dot(r2, ones, u, kn, qn, out, K);
                }
                if (sdt != RSSM_DTYPE_F32) store_f32(vec, sp->checkpoint, sdt, roff, out, K);
                continue;
            }
            for (int t = 0; t < T; t++) vec->dot2(srow, xk + (size_t)t * K, xq + (size_t)t * K, K, dk + t, dq + t);
            for (int t = 0; t < T; t++) {
                /* u_t = beta (v - [S0 x_k + ring + window]);  o_t = S0 x_q + ring + window + u_t (k.q) */
                float d = dk[t] + rk[(size_t)t * V + r], o = dq[t] + rq[(size_t)t * V + r];
                for (int tp = 0; tp < t; tp++) d = fmaf(ust[tp], wkk[t * T + tp], d), o = fmaf(ust[tp], wqk[t * T + tp], o);
                const float u = beta[t] * (vv[(size_t)t * V + r] - d);
                ust[t] = round_to(rdt, u); /* later tokens use the entry as stored */
                Uo[(size_t)t * V + r] = u;
                O[(size_t)t * V + r] = fmaf(u, kq[t], o);
            }
        }
        for (int t = 0; t < T; t++) store_o(p, vec, rssm_bt(&p->io, b, t), hv, O + (size_t)t * V);

        if (start) base_store(l, sp, s, hv, c0);
        if (end) {
            base_store(l, sp, s, hv, end == 2 ? c0 + 1 : 0);
            continue;
        }
        /* append the window's entries at positions hw .. hw+T-1 */
        const int write_k = l->gate == RSSM_GATE_KDA || hv % p->group == 0;
        for (int t = 0; t < T; t++) {
            store_f32(vec, sp->ring_u, rdt, rssm_ring_u_off(l, s, hv, hw + t), Uo + (size_t)t * V, V);
            if (write_k) store_f32(vec, sp->ring_k, rdt, rssm_ring_k_off(l, s, hv, p->group, hw + t), kst + (size_t)t * K, K);
            memcpy((float *)sp->ring_g + rssm_ring_g_off(l, s, hv, hw + t, gk), Gt + (size_t)t * gk, sizeof(float) * (size_t)gk);
        }
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
    float *Kr = rssm_cpu_take(a, (size_t)l->ring_len * K), *row = rssm_cpu_take(a, K);
    const size_t mark = a->used;
    for (int hv = kh * m->group; hv < (kh + 1) * m->group; hv++) {
        a->used = mark;
        ring rg;
        const int h = live_entries(l, &m->src, s, hv);
        if (l->gate == RSSM_GATE_KDA || hv == kh * m->group) load_keys(vec, l, &m->src, s, hv, m->group, h, Kr);
        load_ring(vec, l, &m->src, s, hv, gk, h, a, &rg);
        rg.Kr = Kr;
        float *alpha = rssm_cpu_take(a, K), *KW = rssm_cpu_take(a, (size_t)h * K + 1), G[RSSM_MAX_HEAD_DIM];
        ring_transpose(&rg, V);
        ring_G(&rg, gk, G);
        fold_weights(&rg, h, K, gk, G, alpha, KW);
        /* dst row = S0 row e^{G_h} + sum_i u_i kw_i, row by row (src may be dst) */
        const int64_t so = rssm_ckpt_off(l, s, hv), dof = rssm_ckpt_off(l, d, hv);
        for (int r = 0; r < V; r++) {
            load_f32(vec, m->src.checkpoint, l->state_dtype, so + (int64_t)r * K, row, K);
            if (h > 0) vec->fold(row, alpha, h, rg.UT + (size_t)r * h, KW, K, row, K);
            store_f32(vec, m->dst.checkpoint, l->state_dtype, dof + (int64_t)r * K, row, K);
        }
        base_store(l, &m->dst, d, hv, 0);
    }
}
