/*
 * check.c — `replayssm check`: the equivalence matrix of a device against the float64
 * reference, and the golden vectors through every decode path.
 *
 * Matrix: each case runs one scripted sequence of ops (replay decode + advance with forced
 * folds, verify + commit with per-row acceptance, prefill + reset, packed decode with
 * copy-on-write) on the device under test and on the reference with the same dtypes, in lock
 * step, from the same random state; it compares every output (norm-relative), the cursors
 * (exactly), the materialised states, padding rows (zero), untouched slots (bitwise) and the
 * guard bytes around every tensor (inside the harness). The last cases give decode steps
 * extreme gates (-inf, -1e38, -1e4, A_log = 88.5): per-head early folds and the gate floor.
 *
 * Tolerances (norm-relative, max|x - y| / max|y| per tensor; NaN never passes):
 *   all f32: 1e-5.  bf16 I/O only: 1e-2.  bf16 state or ring: 2e-2 (one bf16 ulp is up to
 *   2^-7 of a value; a rounding that lands on the other side in the device and in the reference
 *   moves an element by one ulp, and such flips feed later steps).
 *   Golden vectors (FLA, float64): f64 1e-6 (A_log, dt_bias, g and beta are f32 by the API; FLA
 *   agrees with float64 to ~1e-7), f32 1e-5, any bf16 5e-2 (input rounding dominates).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "harness.h"
#include "vectors.h"

typedef struct tally {
    int passed, failed, skipped;
} tally;

static void report(tally *t, int rc, const char *name, double err, double tol)
{
    if (rc == RH_UNSUPPORTED) {
        t->skipped++;
        printf("SKIP %s (%s)\n", name, rh_msg());
    } else if (rc == RH_OK && err <= tol) {
        t->passed++;
        printf("PASS %s max_rel_err=%.3g (tol %.0e)\n", name, err, tol);
    } else {
        t->failed++;
        if (rc == RH_OK)
            printf("FAIL %s max_rel_err=%.3g > tol %.0e\n", name, err, tol);
        else
            printf("FAIL %s: %s\n", name, rh_msg());
    }
    fflush(stdout);
}

/* =========================================================================================
 * Golden vectors
 * ========================================================================================= */

typedef enum vpath { VP_PACKED, VP_REPLAY, VP_VERIFY, VP_PREFILL } vpath;

/* A case's FLA tensors (float64), shapes checked by rv_get. */
typedef struct vgold {
    const double *q, *k, *v, *a, *b; /* (B, T, H, K) q and k, (B, T, HV, V) v, (B, T, HV, gk) a, (B, T, HV) b */
    const double *A_log, *dt_bias;   /* (HV), (HV, gk) */
    const double *S0, *o, *S;        /* (B, HV, V, K) initial state, (B, T, HV, V) outputs, final state */
} vgold;

/* One golden case through one path: rows are the B real rows on slots B..1 (reversed), then
 * one padding row; slots 0 and B+1 stay unused and must not change. */
typedef struct vrun {
    rssm_context *ctx;
    const rv_case *c;
    rssm_layer l;
    int B, T, R, L, pattern;
    int32_t slot[64], real[64];
    rh_inputs full; /* every token of the R rows */
    rh_state s;
    double *o;     /* (B, T, HV, V): each token's outputs at its position */
    double *ostep; /* (R, T, HV, V): one call's outputs */
    double *S;     /* (B, HV, V, K): the final states */
    rh_snap before, after;
    rh_rng rng; /* verify's acceptance draws */
} vrun;

static int vector_gold(const rv_case *c, vgold *g)
{
    const int B = c->B, T = c->T, H = c->H, HV = c->HV, K = c->K, V = c->V;
    const int gk = c->gate == RSSM_GATE_KDA ? K : 1;
    const int64_t nS = (int64_t)HV * V * K, nO = (int64_t)B * T * HV * V;
    g->q = rv_get(c, "q", (int64_t)B * T * H * K), g->k = rv_get(c, "k", (int64_t)B * T * H * K);
    g->v = rv_get(c, "v", nO), g->a = rv_get(c, "a", (int64_t)B * T * HV * gk);
    g->b = rv_get(c, "b", (int64_t)B * T * HV), g->A_log = rv_get(c, "A_log", HV);
    g->dt_bias = rv_get(c, "dt_bias", (int64_t)HV * gk), g->S0 = rv_get(c, "initial_state", B * nS);
    g->o = rv_get(c, "o", nO), g->S = rv_get(c, "final_state", B * nS);
    if (!g->q || !g->k || !g->v || !g->a || !g->b || !g->A_log || !g->dt_bias || !g->S0 || !g->o || !g->S)
        return rh_set(RH_FAIL, "case %s lacks a tensor or has a wrong shape", c->name);
    return RH_OK;
}

/* The inputs (the padding row repeats row 0), the state (random, the real rows' slots set to
 * the initial states) and a snapshot of it; o starts as NaN. */
static int vector_setup(vrun *r, const vgold *g)
{
    const rv_case *c = r->c;
    const int B = r->B, T = r->T, H = c->H, HV = c->HV, K = c->K, V = c->V;
    const int gk = c->gate == RSSM_GATE_KDA ? K : 1;
    const int64_t nS = (int64_t)HV * V * K, nO = (int64_t)B * T * HV * V;
    int rc = rh_inputs_alloc(&r->full, &r->l, r->R, T, 0);
    r->o = malloc(sizeof(double) * (size_t)nO), r->ostep = malloc(sizeof(double) * (size_t)r->R * T * HV * V);
    r->S = malloc(sizeof(double) * (size_t)(B * nS));
    if (!r->o || !r->ostep || !r->S) rc = rh_set(RH_FAIL, "out of host memory");
    if (!rc) {
        const int64_t bq = (int64_t)T * H * K, bv = (int64_t)T * HV * V, ba = (int64_t)T * HV * gk,
                      bb = (int64_t)T * HV;
        rh_inputs *f = &r->full;
        for (int row = 0; row < r->R; row++) {
            const int src = row < B ? row : 0;
            memcpy(f->q + row * bq, g->q + src * bq, sizeof(double) * bq);
            memcpy(f->k + row * bq, g->k + src * bq, sizeof(double) * bq);
            memcpy(f->v + row * bv, g->v + src * bv, sizeof(double) * bv);
            memcpy(f->a + row * ba, g->a + src * ba, sizeof(double) * ba);
            memcpy(f->b + row * bb, g->b + src * bb, sizeof(double) * bb);
        }
        for (int h = 0; h < HV; h++)
            f->A_log[h] = (float)g->A_log[h];
        for (int i = 0; i < HV * gk; i++)
            f->dt_bias[i] = (float)g->dt_bias[i];
        rc = rh_state_create(r->ctx, &r->l, B + 2, &r->s);
    }
    if (!rc) {
        rh_rng rng;
        rh_rng_seed(&rng, 7);
        rc = rh_state_randomize(r->ctx, &r->s, &rng, 0);
        for (int row = 0; row < B && !rc; row++)
            rc = rh_state_set(r->ctx, &r->s, r->slot[row], g->S0 + row * nS);
    }
    if (!rc) rc = rh_snap_take(r->ctx, &r->s, &r->before);
    for (int64_t i = 0; r->o && i < nO; i++)
        r->o[i] = NAN;
    return rc;
}

/* Copies the first n tokens of the real rows' outputs in ostep (a call of `per_row` tokens a
 * row) to o at token t0. */
static void vector_put(vrun *r, int per_row, int t0, int n)
{
    const int64_t hv = (int64_t)r->c->HV * r->c->V;
    for (int row = 0; row < r->B; row++)
        memcpy(r->o + ((int64_t)row * r->T + t0) * hv, r->ostep + (int64_t)row * per_row * hv, sizeof(double) * hv * n);
}

/* One token at a time, packed decode or replay decode + advance (a forced fold every third). */
static int vector_decode(vrun *r, vpath path)
{
    const int64_t hv = (int64_t)r->c->HV * r->c->V;
    int rc = RH_OK;
    for (int t = 0; t < r->T && !rc; t++) {
        rh_inputs one;
        rc = rh_inputs_slice(&r->full, t, 1, &one);
        if (!rc)
            rc = rh_step(r->ctx, &r->s, path == VP_PACKED ? RH_OP_DECODE_PACKED : RH_OP_DECODE_REPLAY, &one, r->slot,
                         NULL, NULL, t % 3 == 1, r->ostep);
        if (!rc && path == VP_REPLAY) rc = rh_advance(r->ctx, &r->s, r->R, r->slot, NULL);
        if (!rc) vector_put(r, 1, t, 1);
        for (int64_t i = 0; i < hv && !rc; i++)
            if (r->ostep[(int64_t)r->B * hv + i] != 0) rc = rh_set(RH_FAIL, "padding row output is not zero");
        rh_inputs_free(&one);
    }
    return rc;
}

/* Prefill of the first P tokens, a reset of the rings, then replay decode of the rest. */
static int vector_prefill(vrun *r)
{
    const int P = r->T / 2 + (r->pattern % 3);
    rh_inputs pre;
    int rc = rh_inputs_slice(&r->full, 0, P, &pre);
    if (!rc) rc = rh_step(r->ctx, &r->s, RH_OP_PREFILL, &pre, r->slot, NULL, NULL, 0, r->ostep);
    if (!rc) vector_put(r, P, 0, P);
    rh_inputs_free(&pre);
    if (!rc) rc = rh_reset(r->ctx, &r->s, r->R, r->slot);
    for (int t = P; t < r->T && !rc; t++) {
        rh_inputs one;
        rc = rh_inputs_slice(&r->full, t, 1, &one);
        if (!rc) rc = rh_step(r->ctx, &r->s, RH_OP_DECODE_REPLAY, &one, r->slot, NULL, NULL, 0, r->ostep);
        if (!rc) rc = rh_advance(r->ctx, &r->s, r->R, r->slot, NULL);
        if (!rc) vector_put(r, 1, t, 1);
        rh_inputs_free(&one);
    }
    return rc;
}

/* Tokens a verify window of Tw accepts for row `row` at iteration `it`, by pattern: 0 all,
 * 1 one (every draft rejected), 2 cycling through 0..Tw, 3 random. */
static int verify_accepts(vrun *r, int row, int it, int Tw)
{
    switch (r->pattern) {
    case 0:
        return Tw;
    case 1:
        return 1;
    case 2:
        return (it + row) % (Tw + 1);
    default:
        return (int)(rh_uniform(&r->rng) * (Tw + 1));
    }
}

/* One verify window from each row's position pos[row]; rows done (and the padding row) pad. */
static int verify_window(vrun *r, int it, int *pos, int *done)
{
    const int B = r->B, T = r->T, L = r->L;
    const int Tw = r->pattern == 0 ? L : 1 + (it * 3 + r->pattern) % L;
    int32_t wslot[64], acc[64];
    uint8_t fold[64];
    rh_inputs win;
    int rc = rh_inputs_alloc(&win, &r->l, r->R, Tw, 0);
    for (int row = 0; row < r->R && !rc; row++) {
        const int p0 = row < B ? pos[row] : 0;
        wslot[row] = row < B && pos[row] < T ? r->slot[row] : -1;
        for (int t = 0; t < Tw; t++)
            rh_inputs_copy_token(&r->full, row, p0 + t < T ? p0 + t : T - 1, &win, row, t);
        const int left = row < B ? T - pos[row] : 0, a = verify_accepts(r, row, it, Tw);
        acc[row] = a < left ? a : left;
        fold[row] = r->pattern == 3 && rh_uniform(&r->rng) < 0.15;
    }
    if (!rc) rc = rh_step(r->ctx, &r->s, RH_OP_VERIFY, &win, wslot, NULL, fold, it % 2, r->ostep);
    if (!rc) rc = rh_commit(r->ctx, &r->s, r->R, Tw, wslot, fold, acc);
    *done = 1;
    for (int row = 0; row < B && !rc; row++) {
        if (wslot[row] >= 0) {
            const int n = pos[row] + Tw <= T ? Tw : T - pos[row];
            const int64_t hv = (int64_t)r->c->HV * r->c->V;
            memcpy(r->o + ((int64_t)row * T + pos[row]) * hv, r->ostep + (int64_t)row * Tw * hv,
                   sizeof(double) * hv * n);
            pos[row] += acc[row];
        }
        if (pos[row] < T) *done = 0;
    }
    rh_inputs_free(&win);
    return rc;
}

/* Verify windows until every row has accepted all T tokens. */
static int vector_verify(vrun *r)
{
    int pos[64] = {0}, done = 0, rc = RH_OK;
    for (int it = 0; !rc && !done && it < 10 * r->T; it++)
        rc = verify_window(r, it, pos, &done);
    if (!rc && !done) rc = rh_set(RH_FAIL, "verify pattern made no progress");
    return rc;
}

/* Runs case c through one path; writes the errors of o and of the final state. */
static int vector_run(rssm_context *ctx, const rv_case *c, rssm_dtype sdt, rssm_dtype rdt, rssm_dtype iodt,
                      rssm_state_layout layout, vpath path, int L, int pattern, double *err_o, double *err_s)
{
    vrun r;
    memset(&r, 0, sizeof r);
    r.ctx = ctx, r.c = c, r.B = c->B, r.T = c->T, r.R = c->B + 1, r.L = L, r.pattern = pattern;
    r.l = rssm_layer_default(c->gate, c->H, c->HV, c->K, c->V, L);
    r.l.state_dtype = sdt, r.l.ring_dtype = rdt, r.l.io_dtype = iodt, r.l.state_layout = layout;
    r.l.scale = (float)c->scale, r.l.qk_l2norm = c->l2norm;
    r.l.has_lower_bound = c->has_lower_bound, r.l.lower_bound = (float)c->lower_bound;
    for (int row = 0; row < r.B; row++)
        r.slot[row] = r.B - row, r.real[row] = r.B - row;
    r.slot[r.B] = -1;
    rh_rng_seed(&r.rng, 1234 + pattern);
    vgold g;
    int rc = vector_gold(c, &g);
    if (rc) return rc;
    rc = vector_setup(&r, &g);
    if (!rc)
        rc = path == VP_VERIFY ? vector_verify(&r) : path == VP_PREFILL ? vector_prefill(&r) : vector_decode(&r, path);
    if (!rc)
        rc = path == VP_PACKED ? rh_checkpoint(ctx, &r.s, r.B, r.real, r.S)
                               : rh_materialized(ctx, &r.s, r.B, r.real, r.S);
    if (!rc) rc = rh_snap_take(ctx, &r.s, &r.after);
    if (!rc &&
        (!rh_snap_slot_equal(&r.s, &r.before, &r.after, 0) || !rh_snap_slot_equal(&r.s, &r.before, &r.after, r.B + 1)))
        rc = rh_set(RH_FAIL, "a slot no row selected was changed");
    if (!rc) {
        const int64_t nS = (int64_t)c->HV * c->V * c->K;
        *err_o = rh_relerr(r.o, g.o, (int64_t)r.B * r.T * c->HV * c->V);
        *err_s = rh_relerr(r.S, g.S, r.B * nS);
    }
    rh_snap_free(&r.before), rh_snap_free(&r.after);
    rh_state_free(ctx, &r.s);
    rh_inputs_free(&r.full);
    free(r.o), free(r.ostep), free(r.S);
    return rc;
}

static void run_vectors(rssm_context *ctx, rssm_device dev, const rv_file *vf, int quick, const char *filter, tally *t)
{
    /* dtypes and state layouts (the K-first layout in f32 and in bf16) */
    struct {
        rssm_dtype s, r, io;
        double tol;
        rssm_state_layout layout;
    } dts[6] = {{RSSM_DTYPE_F64, RSSM_DTYPE_F64, RSSM_DTYPE_F64, 1e-6, RSSM_LAYOUT_VK},
                {RSSM_DTYPE_F32, RSSM_DTYPE_F32, RSSM_DTYPE_F32, 1e-5, RSSM_LAYOUT_VK},
                {RSSM_DTYPE_F32, RSSM_DTYPE_BF16, RSSM_DTYPE_F32, 5e-2, RSSM_LAYOUT_VK},
                {RSSM_DTYPE_BF16, RSSM_DTYPE_BF16, RSSM_DTYPE_BF16, 5e-2, RSSM_LAYOUT_VK},
                {RSSM_DTYPE_F32, RSSM_DTYPE_F32, RSSM_DTYPE_F32, 1e-5, RSSM_LAYOUT_KV},
                {RSSM_DTYPE_BF16, RSSM_DTYPE_BF16, RSSM_DTYPE_BF16, 5e-2, RSSM_LAYOUT_KV}};
    const int d0 = dev == RSSM_DEVICE_REFERENCE ? 0 : 1;
    static const int Ls[] = {1, 2, 4, 8, 16};
    for (int ci = 0; ci < vf->ncases; ci++) {
        const rv_case *c = &vf->cases[ci];
        for (int d = d0; d < 6; d++) {
            if (quick && d > 1 && d != 4) continue;
            struct {
                vpath p;
                int L, pat;
            } runs[32];
            int n = 0;
            runs[n].p = VP_PACKED, runs[n].L = 1, runs[n++].pat = 0;
            for (int i = 0; i < 5; i++)
                runs[n].p = VP_REPLAY, runs[n].L = Ls[i], runs[n++].pat = 0;
            for (int pat = 0; pat < 4; pat++) {
                const int Lv[4] = {4, 8, 16, 3};
                runs[n].p = VP_VERIFY, runs[n].L = Lv[pat], runs[n++].pat = pat;
            }
            runs[n].p = VP_PREFILL, runs[n].L = 8, runs[n++].pat = 0;
            for (int i = 0; i < n; i++) {
                if (d >= 2 && runs[i].p == VP_REPLAY && runs[i].L != 4 && runs[i].L != 16) continue;
                static const char *pn[] = {"packed", "replay", "verify", "prefill"};
                char name[192];
                snprintf(name, sizeof name, "vectors/%s/%s/state=%s%s,ring=%s,io=%s/L=%d%s", c->name, pn[runs[i].p],
                         rh_dtype_name(dts[d].s), dts[d].layout == RSSM_LAYOUT_KV ? "-kv" : "", rh_dtype_name(dts[d].r),
                         rh_dtype_name(dts[d].io), runs[i].L,
                         runs[i].p == VP_VERIFY    ? (const char *[]){"/accept-all", "/accept-1", "/accept-cycle",
                                                                      "/accept-random+fold"}[runs[i].pat]
                         : runs[i].p == VP_PREFILL ? "/prefill-half"
                                                   : "");
                if (filter && !strstr(name, filter)) continue;
                double eo = 0, es = 0;
                int rc = vector_run(ctx, c, dts[d].s, dts[d].r, dts[d].io, dts[d].layout, runs[i].p, runs[i].L,
                                    runs[i].pat, &eo, &es);
                char full[256];
                snprintf(full, sizeof full, "%s (o %.2e, state %.2e)", name, eo, es);
                report(t, rc, full, eo > es ? eo : es, dts[d].tol);
            }
        }
    }
}

/* =========================================================================================
 * Equivalence matrix
 * ========================================================================================= */

typedef struct mcase {
    rssm_gate gate;
    int lb; /* KDA safe gate */
    int L;
    rssm_dtype s, r, io;
    int H, HV, K, V;
    int pre;     /* precomputed g/beta */
    int strided; /* q, k, v and the gates (a, b or g, beta) as strided views */
    int extreme; /* decode steps with extreme gates (-inf, -1e38, -1e4; raw: A_log = 88.5, a = 1e4) */
    int kv;      /* K-first state layout */
} mcase;

#define MATRIX_CASES 128 /* room for every case of build_matrix */

static int build_matrix(int quick, mcase *out)
{
    static const int Ls[6] = {1, 2, 4, 8, 16, 32};
    static const int dims[4][2] = {{64, 64}, {128, 128}, {48, 48}, {64, 100}};
    static const int ratio[3] = {1, 2, 4};
    static const rssm_dtype mix[6][3] = {
        {RSSM_DTYPE_F32, RSSM_DTYPE_F32, RSSM_DTYPE_F32},   {RSSM_DTYPE_BF16, RSSM_DTYPE_BF16, RSSM_DTYPE_BF16},
        {RSSM_DTYPE_F32, RSSM_DTYPE_BF16, RSSM_DTYPE_BF16}, {RSSM_DTYPE_BF16, RSSM_DTYPE_F32, RSSM_DTYPE_F32},
        {RSSM_DTYPE_F32, RSSM_DTYPE_F32, RSSM_DTYPE_BF16},  {RSSM_DTYPE_BF16, RSSM_DTYPE_BF16, RSSM_DTYPE_F32}};
    int n = 0;
    memset(out, 0, sizeof(mcase) * MATRIX_CASES);
    /* gate x L x {all f32, all bf16} (quick: the dtype alternates), then the mixed dtypes */
    for (int g = 0; g < 3; g++)
        for (int li = 0; li < 6; li++)
            for (int d = 0; d < 2; d++) {
                if (quick && d != (g + li) % 2) continue;
                mcase *c = &out[n];
                const int i = n++;
                c->gate = g ? RSSM_GATE_KDA : RSSM_GATE_GDN, c->lb = g == 2, c->L = Ls[li];
                c->s = mix[d][0], c->r = mix[d][1], c->io = mix[d][2];
                c->K = dims[i % 4][0], c->V = dims[i % 4][1];
                const int rt = ratio[(i / 4 + i) % 3];
                c->H = rt == 1 ? 2 : 1, c->HV = c->H * rt;
                c->pre = i % 2, c->strided = (i / 2) % 2, c->kv = (i / 4) % 2;
            }
    for (int g = 0; g < 3; g++)
        for (int m = 2; m < 6; m++) {
            if (quick && (m + g) % 3) continue;
            mcase *c = &out[n];
            const int i = n++;
            c->gate = g ? RSSM_GATE_KDA : RSSM_GATE_GDN, c->lb = g == 2, c->L = (g + m) % 2 ? 16 : 4;
            c->s = mix[m][0], c->r = mix[m][1], c->io = mix[m][2];
            c->K = dims[i % 4][0], c->V = dims[i % 4][1];
            const int rt = ratio[i % 3];
            c->H = rt == 1 ? 2 : 1, c->HV = c->H * rt;
            c->pre = (i + 1) % 2, c->strided = i % 3 == 0, c->kv = (i / 4) % 2;
        }
    /* extreme gates on decode steps (both gates, precomputed and raw): early folds and the gate
     * floor; and on KDA verify windows: their clamp levels. GDN verify windows keep ordinary
     * gates (a window's own decay past -G_MAX keeps large G differences, and the reference's
     * floor is not the device's). K = 64 and 128 (on CUDA the general kernel, and the K = V =
     * 128 kernels and the replay pipeline) */
    for (int g = 0; g < 2; g++)
        for (int pre = 0; pre < 2; pre++)
            for (int k = 64; k <= 128; k += 64) {
                mcase *c = &out[n++];
                memset(c, 0, sizeof *c);
                c->gate = g ? RSSM_GATE_KDA : RSSM_GATE_GDN, c->L = pre ? 8 : 16;
                c->s = RSSM_DTYPE_F32, c->r = pre ? RSSM_DTYPE_F32 : RSSM_DTYPE_BF16, c->io = c->r;
                c->H = 2, c->HV = 4, c->K = c->V = k;
                c->pre = pre, c->extreme = 1, c->kv = (g + pre) % 2;
            }
    /* long rings on the K = V = 128 kernels (f32 state, V-first): the end fold of a full ring of
     * L - 1 entries; GDN's stages its ring in shared memory 16 entries at a time up to L = 32
     * and 8 beyond (k128_common.cuh's fold_ring_rows_staged), so here in 2 and in 8 rounds */
    for (int g = 0; g < 2; g++)
        for (int li = 0; li < 2; li++) {
            mcase *c = &out[n++];
            memset(c, 0, sizeof *c);
            c->gate = g ? RSSM_GATE_KDA : RSSM_GATE_GDN, c->L = li ? 64 : 32;
            c->s = RSSM_DTYPE_F32, c->r = (g + li) % 2 ? RSSM_DTYPE_F32 : RSSM_DTYPE_BF16, c->io = RSSM_DTYPE_BF16;
            c->H = 2, c->HV = 4, c->K = c->V = 128;
            c->pre = li;
        }
    return n;
}

/* Extreme gates of decode step i (mcase.extreme): -inf, -1e38 and -1e4 on some value heads and
 * a log-gate above 0 (+0.2: the state grows by e^0.2, applied as given on every device) on
 * another (precomputed), or A_log = 88.5 (-exp(A_log) softplus(..) is -inf in float32) and
 * a = 1e4. */
static void extreme_gates(rh_inputs *in, int i)
{
    const int HV = in->HV, gk = in->gk;
    for (int r = 0; r < in->B; r++)
        for (int hv = 0; hv < HV; hv++)
            for (int c = 0; c < gk; c++) {
                const int64_t j = ((int64_t)r * HV + hv) * gk + c;
                if (in->g) {
                    if (i % 3 == 1 && hv == 0) in->g[j] = -INFINITY;
                    if (i % 4 == 3 && hv == 1) in->g[j] = -1e38f;
                    if (i % 3 == 2 && hv == HV - 1 && r != 1) in->g[j] = -1e4f;
                    if (i % 5 == 0 && hv == 2 && hv < HV - 1) in->g[j] = 0.2f;
                } else if (i % 3 == 2 && hv == HV - 1) {
                    in->a[j] = 1e4;
                }
            }
    if (!in->g && i % 3 == 1) in->A_log[0] = 88.5f;
}

static void mcase_name(const mcase *c, char *name, size_t n)
{
    snprintf(name, n, "matrix/%s%s/L=%d/state=%s%s,ring=%s,io=%s/H=%d,HV=%d,K=%d,V=%d/%s%s",
             c->gate == RSSM_GATE_GDN ? "gdn" : "kda", c->lb ? "-lb" : "", c->L, rh_dtype_name(c->s),
             c->kv ? "-kv" : "", rh_dtype_name(c->r), rh_dtype_name(c->io), c->H, c->HV, c->K, c->V,
             c->pre ? "g-beta" : "raw-gates",
             c->strided   ? ",strided"
             : c->extreme ? ",extreme-gates"
                          : "");
}

static double mcase_tol(const mcase *c) { return rh_tolerance(c->s, c->r, c->io); }

static int count_matrix(int quick, const char *filter)
{
    mcase cs[MATRIX_CASES];
    int n = build_matrix(quick, cs), k = 0;
    char name[256];
    for (int i = 0; i < n; i++) {
        mcase_name(&cs[i], name, sizeof name);
        if (!filter || strstr(name, filter)) k++;
    }
    return k;
}

/* The same op on the device (0) and the reference (1); err = error of the device's outputs;
 * padding rows must be exactly zero on the device. */
typedef struct pair {
    rssm_context *ctx[2];
    rh_state st[2];
} pair;

static int pair_step(pair *p, rh_op op, const rh_inputs *in, const int32_t *slot, const int32_t *wslot,
                     const uint8_t *fold, int strided, double *o[2], double *err)
{
    for (int d = 0; d < 2; d++) {
        int rc = rh_step(p->ctx[d], &p->st[d], op, in, slot, wslot, fold, d == 0 && strided, o[d]);
        if (rc) {
            if (d == 1 && rc == RH_UNSUPPORTED) rc = RH_FAIL; /* the reference takes everything */
            return rc;
        }
    }
    const int64_t per = (int64_t)in->T * in->HV * in->V;
    for (int b = 0; b < in->B; b++)
        if (slot[b] < 0)
            for (int64_t i = 0; i < per; i++)
                if (o[0][b * per + i] != 0)
                    return rh_set(RH_FAIL, "%s: padding row %d output is not zero",
                                  op == RH_OP_VERIFY ? "verify" : "step", b);
    const double e = rh_relerr(o[0], o[1], in->B * per);
    if (e > *err) *err = e;
    return RH_OK;
}

static int pair_cursors(pair *p, int what)
{
    int32_t c[2][64];
    for (int d = 0; d < 2; d++) {
        int rc = rh_state_cursors(p->ctx[d], &p->st[d], c[d]);
        if (rc) return rc;
    }
    for (int i = 0; i < p->st[0].slots; i++)
        if (c[0][i] != c[1][i])
            return rh_set(RH_FAIL, "after %s: cursor of slot %d is %d on the device, %d on the reference",
                          what ? "commit" : "advance", i, c[0][i], c[1][i]);
    return RH_OK;
}

static int matrix_case(rssm_context *dut, rssm_context *ref, const mcase *c, int quick, uint64_t seed, double *err)
{
    rssm_layer l = rssm_layer_default(c->gate, c->H, c->HV, c->K, c->V, c->L);
    l.state_dtype = c->s, l.ring_dtype = c->r, l.io_dtype = c->io;
    l.state_layout = c->kv ? RSSM_LAYOUT_KV : RSSM_LAYOUT_VK;
    if (c->lb) l.has_lower_bound = 1, l.lower_bound = -5.0f;
    enum { R = 4, SLOTS = 6 };
    const int32_t slot[R] = {4, 1, -1, 3}, unused[3] = {0, 2, 5};
    int32_t pslot[2][R] = {{4, 1, -1, 3}, {0, 2, -1, 5}};
    int cur = 0; /* packed: which set of slots holds the rows' state */
    const int32_t real[3] = {4, 1, 3};
    pair rp, pp;
    memset(&rp, 0, sizeof rp), memset(&pp, 0, sizeof pp);
    rp.ctx[0] = pp.ctx[0] = dut, rp.ctx[1] = pp.ctx[1] = ref;
    rh_rng rng;
    rh_rng_seed(&rng, seed);
    *err = 0;
    const int64_t nS = (int64_t)c->HV * c->V * c->K;
    const int steps = c->L + (quick ? 3 : 7);
    const int64_t omax = (int64_t)R * c->L * c->HV * c->V + R * 3 * c->HV * c->V;
    double *o[2] = {malloc(sizeof(double) * omax), malloc(sizeof(double) * omax)};
    double *S[2] = {malloc(sizeof(double) * 3 * nS), malloc(sizeof(double) * 3 * nS)};
    rh_snap init, fin;
    memset(&init, 0, sizeof init), memset(&fin, 0, sizeof fin);
    int rc = o[0] && o[1] && S[0] && S[1] ? RH_OK : rh_set(RH_FAIL, "out of host memory");
    for (int d = 0; d < 2 && !rc; d++) {
        rc = rh_state_create(rp.ctx[d], &l, SLOTS, &rp.st[d]);
        if (!rc) rc = rh_state_create(pp.ctx[d], &l, SLOTS, &pp.st[d]);
    }
    /* same random start on both: live rings with random cursors */
    if (!rc) rc = rh_state_randomize(ref, &rp.st[1], &rng, 0);
    if (!rc) rc = rh_snap_take(ref, &rp.st[1], &init);
    if (!rc) rc = rh_snap_put(dut, &rp.st[0], &init);
    if (!rc) rc = rh_snap_put(dut, &pp.st[0], &init);
    if (!rc) rc = rh_snap_put(ref, &pp.st[1], &init);
    for (int i = 0; i < steps && !rc; i++) {
        rh_inputs in;
        uint8_t fold[R] = {0};
        const int verify = c->L >= 2 && i % 5 == 4, prefill = i == steps / 2;
        const int T = verify ? 1 + (i * 7) % c->L : prefill ? 3 : 1;
        rc = rh_inputs_alloc(&in, &l, R, T, c->pre);
        if (rc) break;
        rh_inputs_random(&in, &l, &rng);
        /* extreme gates: decode steps, and KDA verify windows (deep windows clamp, params.h) */
        if (c->extreme && !prefill && (!verify || c->gate == RSSM_GATE_KDA)) extreme_gates(&in, i);
        if (verify) {
            int32_t acc[R];
            for (int r = 0; r < R; r++)
                acc[r] = (int)(rh_uniform(&rng) * (T + 1));
            fold[1] = i % 3 == 0;
            rc = pair_step(&rp, RH_OP_VERIFY, &in, slot, NULL, fold, c->strided, o, err);
            for (int d = 0; d < 2 && !rc; d++)
                rc = rh_commit(rp.ctx[d], &rp.st[d], R, T, slot, fold, acc);
            if (!rc) rc = pair_cursors(&rp, 1);
        } else if (prefill) {
            rc = pair_step(&rp, RH_OP_PREFILL, &in, slot, NULL, NULL, c->strided, o, err);
            for (int d = 0; d < 2 && !rc; d++)
                rc = rh_reset(rp.ctx[d], &rp.st[d], R, slot);
        } else {
            fold[0] = i % 7 == 3;
            rc = pair_step(&rp, RH_OP_DECODE_REPLAY, &in, slot, NULL, fold, c->strided, o, err);
            for (int d = 0; d < 2 && !rc; d++)
                rc = rh_advance(rp.ctx[d], &rp.st[d], R, slot, fold);
            if (!rc) rc = pair_cursors(&rp, 0);
        }
        /* packed decode of the same tokens; every third step copy-on-write to the other slots */
        if (!rc) {
            const int cow = i % 3 == 1;
            rc = pair_step(&pp, RH_OP_DECODE_PACKED, &in, pslot[cur], cow ? pslot[!cur] : NULL, NULL, c->strided, o,
                           err);
            if (cow) cur = !cur;
        }
        rh_inputs_free(&in);
    }
    /* final states: materialised replay states and packed checkpoints */
    for (int d = 0; d < 2 && !rc; d++)
        rc = rh_materialized(rp.ctx[d], &rp.st[d], 3, real, S[d]);
    if (!rc) {
        const double e = rh_relerr(S[0], S[1], 3 * nS);
        if (e > *err) *err = e;
    }
    for (int d = 0; d < 2 && !rc; d++) {
        int32_t ps[3] = {pslot[cur][0], pslot[cur][1], pslot[cur][3]};
        rc = rh_checkpoint(pp.ctx[d], &pp.st[d], 3, ps, S[d]);
    }
    if (!rc) {
        const double e = rh_relerr(S[0], S[1], 3 * nS);
        if (e > *err) *err = e;
    }
    if (!rc) rc = rh_snap_take(dut, &rp.st[0], &fin);
    for (int u = 0; u < 3 && !rc; u++)
        if (!rh_snap_slot_equal(&rp.st[0], &init, &fin, unused[u]))
            rc = rh_set(RH_FAIL, "slot %d, selected by no row, changed", unused[u]);
    rh_snap_free(&init), rh_snap_free(&fin);
    for (int d = 0; d < 2; d++) {
        rh_state_free(rp.ctx[d], &rp.st[d]);
        rh_state_free(pp.ctx[d], &pp.st[d]);
        free(o[d]), free(S[d]);
    }
    return rc;
}

static void run_matrix(rssm_context *ctx, rssm_context *ref, int quick, const char *filter, int strict, tally *t)
{
    mcase cs[MATRIX_CASES];
    const int n = build_matrix(quick, cs);
    char name[256];
    for (int i = 0; i < n; i++) {
        mcase_name(&cs[i], name, sizeof name);
        if (filter && !strstr(name, filter)) continue;
        double err = 0;
        int rc = matrix_case(ctx, ref, &cs[i], quick, 1000 + (uint64_t)i, &err);
        if (rc == RH_UNSUPPORTED && strict) rc = RH_FAIL;
        report(t, rc, name, err, mcase_tol(&cs[i]));
    }
}

check_options check_options_default(void)
{
    check_options o;
    memset(&o, 0, sizeof o);
    o.device = RSSM_DEVICE_CPU;
    o.params = rssm_context_params_default();
    return o;
}

/* Nothing to run on an absent device: every case is counted as skipped. */
static int check_skip_all(const check_options *o)
{
    printf("SKIP all: device %s unavailable: %s\n", rh_device_name(o->device), rh_msg());
    printf("0 passed, 0 failed, %d skipped\n", count_matrix(o->quick, o->filter) + (o->vectors ? 1 : 0));
    return RH_EXIT_SKIP;
}

static int check_fail(const char *what, const char *why)
{
    printf("FAIL %s: %s\n", what, why);
    printf("0 passed, 1 failed, 0 skipped\n");
    return 1;
}

int check_run(const check_options *o)
{
    rv_file vf;
    memset(&vf, 0, sizeof vf);
    char err[256];
    if (o->vectors && rv_load(o->vectors, &vf, err, sizeof err)) return check_fail("vectors", err);
    rssm_context *ctx = NULL, *ref = NULL;
    int rc = rh_context_with(o->device, &o->params, &ctx);
    if (rc == RH_UNSUPPORTED && o->device == RSSM_DEVICE_CUDA && !o->strict) {
        rv_free(&vf);
        return check_skip_all(o);
    }
    if (rc == RH_OK) rc = rh_context(RSSM_DEVICE_REFERENCE, &ref);
    if (rc != RH_OK) {
        snprintf(err, sizeof err, "device %s", rh_device_name(o->device));
        rssm_context_free(ctx);
        rv_free(&vf);
        return check_fail(err, rh_msg());
    }
    printf("replayssm check: device %s against the reference%s\n", rh_device_name(o->device),
           o->quick ? " (quick)" : "");
    if (o->vectors)
        printf("golden vectors: %s (%d cases)\n", o->vectors, vf.ncases);
    else
        printf("golden vectors: none%s%s%s\n", o->vectors_note ? " (" : "", o->vectors_note ? o->vectors_note : "",
               o->vectors_note ? ")" : "");
    tally t = {0, 0, 0};
    run_matrix(ctx, ref, o->quick, o->filter, o->strict, &t);
    if (o->vectors) {
        tally vt = {0, 0, 0};
        run_vectors(ctx, o->device, &vf, o->quick, o->filter, &vt);
        if (o->strict) vt.failed += vt.skipped, vt.skipped = 0;
        t.passed += vt.passed, t.failed += vt.failed, t.skipped += vt.skipped;
    }
    printf("%d passed, %d failed, %d skipped\n", t.passed, t.failed, t.skipped);
    rssm_context_free(ctx);
    rssm_context_free(ref);
    rv_free(&vf);
    if (o->filter && t.passed + t.failed + t.skipped == 0)
        return fprintf(stderr, "replayssm check: --filter '%s' matches no case\n", o->filter), 2;
    return t.failed ? 1 : t.passed == 0 && t.skipped > 0 ? RH_EXIT_SKIP : 0;
}
