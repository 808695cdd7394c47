/*
 * ref.c — the float64 reference of every op: plain loops, no tricks. The oracle of every test.
 *
 * It reads tensors in their stored dtype, computes in double, and rounds once when it stores.
 * It keeps the exact ring format of the fast back ends (pre-decayed KDA keys, per-head ring
 * base and its position rule, the shared fold rules of replayssm.h), so states written by any
 * back end can be read by any other. With every dtype RSSM_DTYPE_F64 it is the float64
 * recurrence itself. Replay and verify clamp each log-gate at RSSM_GATE_FLOOR_F64 (exp of it
 * is 0 in double), packed decode and prefill do not.
 *
 * Notation per row b and value head hv (kh = hv / group):
 *   S0 [V][K] checkpoint, entries i < h: u_i [V], k_i [K] (KDA: k~_i = k_i e^{-G_i}), G_i [GK]
 *   GDN: S_n = S0 e^{G_n} + sum_i u_i k_i^T e^{G_n - G_i}
 *   KDA: S_n = (S0 + sum_i u_i k~_i^T) diag(e^{G_n})
 */
#include <stdlib.h>

#include "core/host.h"
#include "core/layout.h"

/* ---- element access in any dtype ------------------------------------------------------ */

static double ld(const void *p, rssm_dtype dt, int64_t i)
{
    switch (dt) {
    case RSSM_DTYPE_F32:
        return ((const float *)p)[i];
    case RSSM_DTYPE_BF16:
        return rssm_bf16_to_f32(((const uint16_t *)p)[i]);
    default:
        return ((const double *)p)[i];
    }
}

static void st(void *p, rssm_dtype dt, int64_t i, double x)
{
    switch (dt) {
    case RSSM_DTYPE_F32:
        ((float *)p)[i] = (float)x;
        break;
    case RSSM_DTYPE_BF16:
        ((uint16_t *)p)[i] = rssm_f32_to_bf16((float)x);
        break;
    default:
        ((double *)p)[i] = x;
        break;
    }
}

/* ring_g is f32, or f64 when the ring dtype is f64 (reference only). */
static rssm_dtype g_dtype(const rssm_layer *l)
{
    return l->ring_dtype == RSSM_DTYPE_F64 ? RSSM_DTYPE_F64 : RSSM_DTYPE_F32;
}

/* ---- one token's prepared inputs ---------------------------------------------------- */

typedef struct token {
    double q[RSSM_MAX_HEAD_DIM]; /* normalised and scaled */
    double k[RSSM_MAX_HEAD_DIM]; /* normalised */
    double v[RSSM_MAX_HEAD_DIM];
    double g[RSSM_MAX_HEAD_DIM]; /* log-gate, GK entries */
    double beta;
} token;

/* Loads token (b, t) for value head hv: normalised q, k of its key head, v, gate and beta. */
static void load_token(const rssm_params *p, int b, int t, int hv, token *tk)
{
    const rssm_layer *l = &p->layer;
    const rssm_step_io *io = &p->io;
    const int K = l->head_k_dim, V = l->head_v_dim, kh = hv / p->group;
    const int64_t bt = rssm_bt(io, b, t);
    double nq = 0, nk = 0;
    for (int c = 0; c < K; c++) {
        tk->q[c] = ld(io->q, l->io_dtype, bt * io->q_stride + (int64_t)kh * K + c);
        tk->k[c] = ld(io->k, l->io_dtype, bt * io->k_stride + (int64_t)kh * K + c);
        nq += tk->q[c] * tk->q[c];
        nk += tk->k[c] * tk->k[c];
    }
    /* x / sqrt(sum x^2 + eps), then q *= scale */
    double sq = l->qk_l2norm ? 1.0 / sqrt(nq + RSSM_L2NORM_EPS) : 1.0;
    double sk = l->qk_l2norm ? 1.0 / sqrt(nk + RSSM_L2NORM_EPS) : 1.0;
    for (int c = 0; c < K; c++) {
        tk->q[c] = tk->q[c] * sq * l->scale;
        tk->k[c] = tk->k[c] * sk;
    }
    for (int j = 0; j < V; j++)
        tk->v[j] = ld(io->v, l->io_dtype, bt * io->v_stride + (int64_t)hv * V + j);
    /* precomputed gates: float, or double with the f64 io dtype (replayssm.h) */
    const int g64 = l->io_dtype == RSSM_DTYPE_F64;
    for (int c = 0; c < p->gk; c++) {
        if (io->g) {
            const int64_t i = rssm_g_off(io, bt, hv, p->gk) + c;
            tk->g[c] = g64 ? ((const double *)io->g)[i] : io->g[i];
        } else {
            double a = ld(io->a, l->io_dtype, bt * io->a_stride + (int64_t)hv * p->gk + c);
            tk->g[c] = rssm_gate_f64(a, io->A_log[hv], io->dt_bias[hv * p->gk + c], l->has_lower_bound, l->lower_bound);
        }
    }
    const int64_t bi = rssm_beta_off(io, bt, hv);
    tk->beta = !io->g ? rssm_sigmoid_f64(ld(io->b, l->io_dtype, bt * io->b_stride + hv))
               : g64  ? ((const double *)io->beta)[bi]
                      : io->beta[bi];
}

static void zero_output(const rssm_params *p, int b)
{
    const rssm_layer *l = &p->layer;
    const int64_t n = (int64_t)rssm_row_tokens(&p->io, b) * l->num_v_heads * l->head_v_dim;
    const int64_t base = rssm_o_off(l, rssm_bt(&p->io, b, 0), 0);
    for (int64_t i = 0; i < n; i++)
        st(p->io.o, l->io_dtype, base + i, 0.0);
}

static void store_output(const rssm_params *p, int b, int t, int hv, const double *o)
{
    const rssm_layer *l = &p->layer;
    const int64_t base = rssm_o_off(l, rssm_bt(&p->io, b, t), hv);
    for (int j = 0; j < l->head_v_dim; j++)
        st(p->io.o, l->io_dtype, base + j, o[j]);
}

/* x rounded to a storage dtype, as double. */
static double round_to(rssm_dtype dt, double x)
{
    if (dt == RSSM_DTYPE_F32) return (float)x;
    if (dt == RSSM_DTYPE_BF16) return rssm_bf16_to_f32(rssm_f32_to_bf16((float)x));
    return x;
}

/* ---- one head's state: checkpoint and live ring, in double ------------------------------ */

typedef struct head {
    int V, K, gk, h;   /* h = live entries */
    int base;          /* ring base: local entry i is the one of cursor value base + i */
    double *S;         /* [V][K] */
    double *u, *k, *G; /* [L][V], [L][K] (KDA: pre-decayed), [L][gk] */
    float *gw;         /* [L][gk] a verify window's log-gates (KDA clamp levels) */
} head;

static int head_alloc(head *hd, const rssm_layer *l, int gk)
{
    int V = l->head_v_dim, K = l->head_k_dim, L = l->ring_len;
    hd->V = V, hd->K = K, hd->gk = gk, hd->h = 0;
    hd->S = malloc(sizeof(double) * V * K);
    hd->u = malloc(sizeof(double) * L * V);
    hd->k = malloc(sizeof(double) * L * K);
    hd->G = malloc(sizeof(double) * L * gk);
    hd->gw = malloc(sizeof(float) * L * gk);
    return hd->S && hd->u && hd->k && hd->G && hd->gw;
}

static void head_free(head *hd) { free(hd->S), free(hd->u), free(hd->k), free(hd->G), free(hd->gw); }

/* The head's ring base (0 without a ring). */
static int head_base(const rssm_layer *l, const rssm_state *sp, int s, int hv)
{
    return sp->ring_base ? sp->ring_base[rssm_base_off(l, s, hv)] : 0;
}

/* Reads S0 and the live entries of (slot s, value head hv): with live = 1 those of cursor
 * values base .. cursor - 1 (positions by rssm_ring_pos), with live = 0 none. Keys come from
 * `kring` when given (a copy of the row's ring_k taken before any head of the row wrote to
 * it), else from sp. */
static void head_load(head *hd, const rssm_layer *l, const rssm_state *sp, const double *kring, int s, int hv, int live,
                      int group)
{
    const int V = hd->V, K = hd->K, gk = hd->gk;
    const int64_t c0 = rssm_ckpt_off(l, s, hv);
    for (int j = 0; j < V; j++)
        for (int c = 0; c < K; c++)
            hd->S[j * K + c] = ld(sp->checkpoint, l->state_dtype, c0 + rssm_ckpt_elem(l, j, c));
    const int base = live ? head_base(l, sp, s, hv) : 0, h = live ? sp->cursor[s] - base : 0;
    hd->base = base;
    hd->h = h;
    for (int i = 0; i < h; i++) {
        const int pos = rssm_ring_pos(l, base + i, base);
        const int64_t ru = rssm_ring_u_off(l, s, hv, pos), rk = rssm_ring_k_off(l, s, hv, group, pos);
        const int64_t rg = rssm_ring_g_off(l, s, hv, pos, gk);
        const int64_t rk0 = rssm_ring_k_off(l, s, 0, group, 0);
        for (int j = 0; j < V; j++)
            hd->u[i * V + j] = ld(sp->ring_u, l->ring_dtype, ru + j);
        for (int c = 0; c < K; c++)
            hd->k[i * K + c] = kring ? kring[rk - rk0 + c] : ld(sp->ring_k, l->ring_dtype, rk + c);
        for (int c = 0; c < gk; c++)
            hd->G[i * gk + c] = ld(sp->ring_g, g_dtype(l), rg + c);
    }
}

/* Appends entry h = hd->h (u, k, G; k pre-decayed for KDA) to memory and to the head, as
 * stored (rounded), at the position of cursor value base + h. GDN's k is the key head's, written
 * apart (gdn_key_store); here only the head's copy. */
static void head_append(head *hd, const rssm_layer *l, const rssm_state *sp, int s, int hv, int group, const double *u,
                        const double *k, const double *G)
{
    const int V = hd->V, K = hd->K, gk = hd->gk, i = hd->h, pos = rssm_ring_pos(l, hd->base + i, hd->base);
    const int64_t ru = rssm_ring_u_off(l, s, hv, pos), rk = rssm_ring_k_off(l, s, hv, group, pos);
    const int64_t rg = rssm_ring_g_off(l, s, hv, pos, gk);
    const int write_k = l->gate == RSSM_GATE_KDA;
    for (int j = 0; j < V; j++) {
        st(sp->ring_u, l->ring_dtype, ru + j, u[j]);
        hd->u[i * V + j] = round_to(l->ring_dtype, u[j]);
    }
    for (int c = 0; c < K; c++) {
        if (write_k) st(sp->ring_k, l->ring_dtype, rk + c, k[c]);
        hd->k[i * K + c] = round_to(l->ring_dtype, k[c]);
    }
    for (int c = 0; c < gk; c++) {
        st(sp->ring_g, g_dtype(l), rg + c, G[c]);
        hd->G[i * gk + c] = round_to(g_dtype(l), G[c]);
    }
    hd->h++;
}

/* Cumulative log-gate after the live entries: G_{h-1}, or 0 for an empty ring. */
static void head_G(const head *hd, double *G)
{
    for (int c = 0; c < hd->gk; c++)
        G[c] = hd->h > 0 ? hd->G[(hd->h - 1) * hd->gk + c] : 0.0;
}

/* out <- the state at cumulative gate Gn after the live entries, plus optionally one more
 * entry (un, kn) that is not in the ring (kn un-decayed):
 *   GDN: S0 e^{Gn} + sum_i u_i k_i^T e^{Gn - G_i} + un kn^T
 *   KDA: (S0 + sum_i u_i k~_i^T) diag(e^{Gn}) + un kn^T */
static void head_fold(const head *hd, const double *Gn, const double *un, const double *kn, double *out)
{
    const int V = hd->V, K = hd->K;
    for (int j = 0; j < V; j++) {
        for (int c = 0; c < K; c++) {
            double s;
            if (hd->gk == 1) {
                s = hd->S[j * K + c] * exp(Gn[0]);
                for (int i = 0; i < hd->h; i++)
                    s += hd->u[i * V + j] * hd->k[i * K + c] * exp(Gn[0] - hd->G[i]);
            } else {
                s = hd->S[j * K + c];
                for (int i = 0; i < hd->h; i++)
                    s += hd->u[i * V + j] * hd->k[i * K + c];
                s *= exp(Gn[c]);
            }
            if (un) s += un[j] * kn[c];
            out[j * K + c] = s;
        }
    }
}

/* Stores S ([V][K]) as the checkpoint of (s, hv), in the layer's layout, and returns in S the stored (rounded) values.
 */
static void checkpoint_store(const rssm_layer *l, const rssm_state *sp, int64_t s, int hv, double *S)
{
    const int64_t c0 = rssm_ckpt_off(l, s, hv);
    const int K = l->head_k_dim;
    for (int j = 0; j < l->head_v_dim; j++)
        for (int c = 0; c < K; c++) {
            st(sp->checkpoint, l->state_dtype, c0 + rssm_ckpt_elem(l, j, c), S[j * K + c]);
            S[j * K + c] = round_to(l->state_dtype, S[j * K + c]);
        }
}

static void base_store(const rssm_layer *l, const rssm_state *sp, int s, int hv, int32_t base)
{
    if (sp->ring_base) sp->ring_base[rssm_base_off(l, s, hv)] = base;
}

/* GDN: a key at ring position pos of the key head's ring_k. Written by the group's first value
 * head whether or not that head folds early, since the group's other heads may store entries of
 * that cursor value. */
static void gdn_key_store(const rssm_layer *l, const rssm_state *sp, int s, int hv, int group, int pos, const double *k)
{
    const int64_t rk = rssm_ring_k_off(l, s, hv, group, pos);
    for (int c = 0; c < l->head_k_dim; c++)
        st(sp->ring_k, l->ring_dtype, rk + c, k[c]);
}

/* Replay read of the ring for a vector x at cumulative gate Gn:
 *   S0 (e^{Gn} x) + sum_i u_i w_i,  w_i = (k_i . x) e^{Gn - G_i} (GDN) or k~_i . (e^{Gn} x) (KDA) */
static void head_apply(const head *hd, const double *Gn, const double *x, double *out)
{
    const int V = hd->V, K = hd->K;
    double xs[RSSM_MAX_HEAD_DIM], w[RSSM_MAX_RING_LEN];
    for (int c = 0; c < K; c++)
        xs[c] = x[c] * exp(Gn[hd->gk == 1 ? 0 : c]);
    for (int i = 0; i < hd->h; i++) {
        double d = 0;
        for (int c = 0; c < K; c++)
            d += hd->k[i * K + c] * (hd->gk == 1 ? x[c] : xs[c]);
        w[i] = hd->gk == 1 ? d * exp(Gn[0] - hd->G[i]) : d;
    }
    for (int j = 0; j < V; j++) {
        double s = 0;
        for (int c = 0; c < K; c++)
            s += hd->S[j * K + c] * xs[c];
        for (int i = 0; i < hd->h; i++)
            s += hd->u[i * V + j] * w[i];
        out[j] = s;
    }
}

static double min_of(const double *x, int n)
{
    double m = x[0];
    for (int i = 1; i < n; i++)
        m = x[i] < m ? x[i] : m;
    return m;
}

/* ---- packed decode and prefill: the plain recurrence ------------------------------------ */

/* T recurrent steps of one head on S [V][K], writing o:
 *   u = beta (v - S diag(alpha) k);  S = S diag(alpha) + u k^T;  o = S q */
static void recur(const rssm_params *p, int b, int hv, double *S)
{
    const int V = p->layer.head_v_dim, K = p->layer.head_k_dim;
    token tk;
    double o[RSSM_MAX_HEAD_DIM], alpha[RSSM_MAX_HEAD_DIM];
    for (int t = 0, T = rssm_row_tokens(&p->io, b); t < T; t++) {
        load_token(p, b, t, hv, &tk);
        for (int c = 0; c < K; c++)
            alpha[c] = exp(tk.g[p->gk == 1 ? 0 : c]);
        for (int j = 0; j < V; j++) {
            double d = 0;
            for (int c = 0; c < K; c++)
                d += S[j * K + c] * alpha[c] * tk.k[c];
            double u = tk.beta * (tk.v[j] - d);
            double s = 0;
            for (int c = 0; c < K; c++) {
                S[j * K + c] = S[j * K + c] * alpha[c] + u * tk.k[c];
                s += S[j * K + c] * tk.q[c];
            }
            o[j] = s;
        }
        store_output(p, b, t, hv, o);
    }
}

static rssm_status ref_packed_or_prefill(const rssm_params *p, head *hd)
{
    const rssm_layer *l = &p->layer;
    for (int b = 0; b < p->io.batch; b++) {
        const int s = p->io.slot[b];
        if (s < 0) {
            zero_output(p, b);
            continue;
        }
        const int w = (p->op == RSSM_OP_DECODE_PACKED && p->io.write_slot) ? p->io.write_slot[b] : s;
        for (int hv = 0; hv < l->num_v_heads; hv++) {
            if (p->op == RSSM_OP_PREFILL) {
                /* start from the materialised state: checkpoint with the live ring folded in */
                double G[RSSM_MAX_HEAD_DIM];
                head_load(hd, l, &p->state, NULL, s, hv, 1, p->group);
                head_G(hd, G);
                head_fold(hd, G, NULL, NULL, hd->S);
            } else {
                head_load(hd, l, &p->state, NULL, s, hv, 0, p->group);
            }
            recur(p, b, hv, hd->S);
            checkpoint_store(l, &p->state, w, hv, hd->S);
            if (p->op == RSSM_OP_PREFILL) {
                base_store(l, &p->state, s, hv, 0);
                rssm_host_ring_clear(l, &p->state, s, hv, p->state.cursor[s]);
            }
        }
    }
    return RSSM_OK;
}

/* ---- replay decode and verify ---------------------------------------------------------- */

/* Token (b, t) of value head hv as replay reads it: each log-gate clamped at the floor. */
static void load_token_replay(const rssm_params *p, int b, int t, int hv, token *tk)
{
    load_token(p, b, t, hv, tk);
    for (int c = 0; c < p->gk; c++)
        tk->g[c] = rssm_gate_floor_f64(tk->g[c]);
}

/* KDA verify: each channel's clamp level for the window's log-gates (params.h,
 * rssm_kda_window_level; -inf: none) into lvl; 1 when some channel clamps. */
static int window_levels(const rssm_params *p, int b, int hv, head *hd, double *lvl)
{
    const int T = p->io.tokens, K = p->layer.head_k_dim;
    float *g = hd->gw;
    token tk;
    for (int t = 0; t < T; t++) {
        load_token_replay(p, b, t, hv, &tk);
        for (int c = 0; c < K; c++)
            g[t * K + c] = (float)tk.g[c];
    }
    int deep = 0;
    for (int c = 0; c < K; c++) {
        lvl[c] = rssm_kda_window_level(g + c, K, T, rssm_kda_window_decay(&p->layer));
        deep |= lvl[c] > -INFINITY;
    }
    return deep;
}

/* Token (b, t) of a verify window as replay reads it: the floor, then (KDA) the window's levels. */
static void load_window_token(const rssm_params *p, int b, int t, int hv, const double *lvl, token *tk)
{
    load_token_replay(p, b, t, hv, tk);
    if (lvl)
        for (int c = 0; c < p->gk; c++)
            tk->g[c] = tk->g[c] < lvl[c] ? lvl[c] : tk->g[c];
}

/* One (row, value head) of a replay decode (T = 1) or a verify (T tokens). */
static void replay_head(const rssm_params *p, int b, int hv, head *hd, const double *kring, double *scratch)
{
    const rssm_layer *l = &p->layer;
    const rssm_state *sp = &p->state;
    const int V = l->head_v_dim, K = l->head_k_dim, L = l->ring_len, gk = p->gk, T = p->io.tokens;
    const int s = p->io.slot[b], c = sp->cursor[s];
    const int forced = p->io.fold ? p->io.fold[b] != 0 : 0;
    const int verify = p->op == RSSM_OP_VERIFY;
    /* GDN keys: the group's first value head writes the key head's */
    const int gdn_keys = l->gate == RSSM_GATE_GDN && hv % p->group == 0;
    token tk;
    double G[RSSM_MAX_HEAD_DIM], u[RSSM_MAX_HEAD_DIM], o[RSSM_MAX_HEAD_DIM], kst[RSSM_MAX_HEAD_DIM];

    head_load(hd, l, sp, kring, s, hv, 1, p->group);
    head_G(hd, G);

    /* KDA verify: windows that decay too far for pre-decayed keys clamp and fold (params.h) */
    double lvl_[RSSM_MAX_HEAD_DIM];
    const double *lvl = verify && l->gate == RSSM_GATE_KDA ? lvl_ : NULL;
    const int deep = lvl ? window_levels(p, b, hv, hd, lvl_) : 0;

    /* start fold: the shared rule, or the head's early fold when the window would pass -G_MAX */
    const int uniform = rssm_start_fold(c, T, L, verify && forced);
    int early = 0;
    if (!uniform && verify && hd->h > 0) {
        double W[RSSM_MAX_HEAD_DIM] = {0};
        for (int i = 0; i < gk; i++)
            W[i] = G[i];
        for (int t = 0; t < T; t++) {
            load_window_token(p, b, t, hv, lvl, &tk);
            for (int i = 0; i < gk; i++)
                W[i] += tk.g[i];
        }
        early = deep || min_of(W, gk) < -l->fold_threshold;
    }
    const int c0 = uniform ? 0 : c; /* the cursor the window starts from */
    if (uniform || early) {
        head_fold(hd, G, NULL, NULL, scratch);
        checkpoint_store(l, sp, s, hv, scratch); /* continue from the stored (rounded) values */
        memcpy(hd->S, scratch, sizeof(double) * V * K);
        hd->h = 0;
        hd->base = c0;
        head_G(hd, G);
        base_store(l, sp, s, hv, c0);
    }

    for (int t = 0; t < T; t++) {
        load_window_token(p, b, t, hv, lvl, &tk);
        for (int i = 0; i < gk; i++)
            G[i] += tk.g[i];
        /* u_t = beta (v - [S0 (e^G k) + sum_i u_i w_i(k)]) */
        head_apply(hd, G, tk.k, o);
        for (int j = 0; j < V; j++)
            u[j] = tk.beta * (tk.v[j] - o[j]);

        int end = 0; /* decode only: 1 shared end fold, 2 the head's early fold */
        if (!verify) {
            end = (c0 + 1 == L || forced) ? 1 : 0;
            if (!end && min_of(G, gk) < -l->fold_threshold) end = 2;
        }
        if (gdn_keys && end != 1) gdn_key_store(l, sp, s, hv, p->group, rssm_ring_pos(l, c0 + t, hd->base), tk.k);
        if (end) {
            /* fold with the new entry: S_n; o = S_n q */
            head_fold(hd, G, u, tk.k, scratch);
            for (int j = 0; j < V; j++) {
                double d = 0;
                for (int cc = 0; cc < K; cc++)
                    d += scratch[j * K + cc] * tk.q[cc];
                o[j] = d;
            }
            store_output(p, b, t, hv, o);
            checkpoint_store(l, sp, s, hv, scratch);
            base_store(l, sp, s, hv, end == 2 ? c0 + 1 : 0);
            continue;
        }
        /* o_t = S0 (e^G q) + sum_i u_i w_i(q) + u_t (k_t . q_t) */
        head_apply(hd, G, tk.q, o);
        double kq = 0;
        for (int cc = 0; cc < K; cc++)
            kq += tk.k[cc] * tk.q[cc];
        for (int j = 0; j < V; j++)
            o[j] += u[j] * kq;
        store_output(p, b, t, hv, o);

        /* append the entry (KDA key pre-decayed: k e^{-G}); later tokens use it as stored */
        for (int cc = 0; cc < K; cc++)
            kst[cc] = gk > 1 ? tk.k[cc] * exp(-G[cc]) : tk.k[cc];
        head_append(hd, l, sp, s, hv, p->group, u, kst, G);
        head_G(hd, G);
    }
}

static rssm_status ref_replay(const rssm_params *p, head *hd, double *scratch, double *kring)
{
    const rssm_layer *l = &p->layer;
    const int heads_k = l->gate == RSSM_GATE_GDN ? l->num_k_heads : l->num_v_heads;
    const int64_t row_k = (int64_t)heads_k * l->ring_len * l->head_k_dim;
    for (int b = 0; b < p->io.batch; b++) {
        const int s = p->io.slot[b];
        if (s < 0) {
            zero_output(p, b);
            continue;
        }
        /* GDN keys are shared by a group and a start fold overwrites them: read them first */
        for (int64_t i = 0; i < row_k; i++)
            kring[i] = ld(p->state.ring_k, l->ring_dtype, s * row_k + i);
        for (int hv = 0; hv < l->num_v_heads; hv++)
            replay_head(p, b, hv, hd, kring, scratch);
    }
    return RSSM_OK;
}

static rssm_status ref_step(rssm_context *ctx, const rssm_params *p, void *stream)
{
    (void)ctx, (void)stream;
    const rssm_layer *l = &p->layer;
    const int heads_k = l->gate == RSSM_GATE_GDN ? l->num_k_heads : l->num_v_heads;
    head hd;
    int ok = head_alloc(&hd, l, p->gk);
    double *scratch = malloc(sizeof(double) * l->head_v_dim * l->head_k_dim);
    double *kring = malloc(sizeof(double) * heads_k * l->ring_len * l->head_k_dim);
    rssm_status st_ = RSSM_OK;
    if (!ok || !scratch || !kring)
        st_ = rssm_fail(RSSM_ERROR_OUT_OF_MEMORY, "reference: out of host memory");
    else if (p->op == RSSM_OP_DECODE_PACKED || p->op == RSSM_OP_PREFILL)
        st_ = ref_packed_or_prefill(p, &hd);
    else
        st_ = ref_replay(p, &hd, scratch, kring);
    head_free(&hd);
    free(scratch);
    free(kring);
    return st_;
}

/* ---- materialise and cursors --------------------------------------------------------- */

static rssm_status ref_materialize(rssm_context *ctx, const rssm_materialize_params *p, void *stream)
{
    (void)ctx, (void)stream;
    const rssm_layer *l = &p->layer;
    head hd;
    rssm_status st_ = RSSM_OK;
    if (!head_alloc(&hd, l, p->gk)) {
        st_ = rssm_fail(RSSM_ERROR_OUT_OF_MEMORY, "reference: out of host memory");
    } else {
        for (int b = 0; b < p->batch; b++) {
            const int s = p->src_slot[b], d = p->dst_slot[b];
            if (s < 0 || d < 0) continue;
            for (int hv = 0; hv < l->num_v_heads; hv++) {
                double G[RSSM_MAX_HEAD_DIM];
                head_load(&hd, l, &p->src, NULL, s, hv, 1, p->group);
                head_G(&hd, G);
                head_fold(&hd, G, NULL, NULL, hd.S);
                checkpoint_store(l, &p->dst, d, hv, hd.S);
                base_store(l, &p->dst, d, hv, 0);
            }
        }
    }
    head_free(&hd);
    return st_;
}

static rssm_status ref_init(rssm_context *ctx, const rssm_context_params *params)
{
    (void)ctx, (void)params;
    return RSSM_OK;
}

static void ref_info(const rssm_context *ctx, rssm_context_info *out)
{
    (void)ctx;
    out->threads = 1;
}

/* every dtype, f64 included: the reference is the float64 oracle */
static rssm_status ref_check_layer(const rssm_layer *layer)
{
    (void)layer;
    return RSSM_OK;
}

const rssm_backend rssm_reference_backend = {
    .name = "reference",
    .init = ref_init,
    .info = ref_info,
    .check_layer = ref_check_layer,
    .step = ref_step,
    .materialize = ref_materialize,
    RSSM_HOST_BACKEND_ENTRIES,
};
