/*
 * check.c — `replayssm check`: the equivalence matrix of a device against the float64
 * reference, and the golden vectors through every decode path.
 *
 * Matrix: each case runs one scripted sequence of ops (replay decode + advance with forced
 * folds, verify + commit with per-row acceptance, prefill + reset, packed decode with
 * copy-on-write) on the device under test and on the reference with the same dtypes, in lock
 * step, from the same random state; it compares every output (norm-relative), the cursors
 * (exactly), the materialised states, padding rows (zero), untouched slots (bitwise) and the
 * guard bytes around every tensor (inside the harness).
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

#include "cli.h"
#include "runtime_check.h"
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

/* Runs case c through one path; writes the errors of o and of the final state. */
static int vector_run(rssm_context *ctx, const rv_case *c, rssm_dtype sdt, rssm_dtype rdt, rssm_dtype iodt, vpath path,
                      int L, int pattern, double *err_o, double *err_s)
{
    const int B = c->B, T = c->T, H = c->H, HV = c->HV, K = c->K, V = c->V;
    const int gk = c->gate == RSSM_GATE_KDA ? K : 1;
    const int64_t nS = (int64_t)HV * V * K, nO = (int64_t)B * T * HV * V;
    rssm_layer l = rssm_layer_default(c->gate, H, HV, K, V, L);
    l.state_dtype = sdt, l.ring_dtype = rdt, l.io_dtype = iodt;
    l.scale = (float)c->scale, l.qk_l2norm = c->l2norm;
    l.has_lower_bound = c->has_lower_bound, l.lower_bound = (float)c->lower_bound;
    const double *gq = rv_get(c, "q", (int64_t)B * T * H * K), *gkk = rv_get(c, "k", (int64_t)B * T * H * K);
    const double *gv = rv_get(c, "v", nO), *ga = rv_get(c, "a", (int64_t)B * T * HV * gk);
    const double *gb = rv_get(c, "b", (int64_t)B * T * HV), *galog = rv_get(c, "A_log", HV);
    const double *gdt = rv_get(c, "dt_bias", (int64_t)HV * gk), *gS0 = rv_get(c, "initial_state", B * nS);
    const double *go = rv_get(c, "o", nO), *gS = rv_get(c, "final_state", B * nS);
    if (!gq || !gkk || !gv || !ga || !gb || !galog || !gdt || !gS0 || !go || !gS)
        return rh_set(RH_FAIL, "case %s lacks a tensor or has a wrong shape", c->name);

    /* rows: B real rows on slots B..1 (reversed), then one padding row; slots 0 and B+1 unused */
    const int R = B + 1, slots = B + 2;
    int32_t slot[64], real[64];
    for (int r = 0; r < B; r++)
        slot[r] = B - r, real[r] = B - r;
    slot[B] = -1;
    rh_inputs full;
    int rc = rh_inputs_alloc(&full, &l, R, T, 0);
    rh_state s;
    memset(&s, 0, sizeof s);
    double *o = malloc(sizeof(double) * (size_t)nO), *ostep = malloc(sizeof(double) * (size_t)R * T * HV * V);
    double *S = malloc(sizeof(double) * (size_t)(B * nS));
    if (!o || !ostep || !S) rc = rh_set(RH_FAIL, "out of host memory");
    rh_snap before, after;
    memset(&before, 0, sizeof before), memset(&after, 0, sizeof after);
    if (!rc) {
        const int64_t bq = (int64_t)T * H * K, bv = (int64_t)T * HV * V, ba = (int64_t)T * HV * gk,
                      bb = (int64_t)T * HV;
        for (int r = 0; r < R; r++) { /* the padding row repeats row 0 */
            const int src = r < B ? r : 0;
            memcpy(full.q + r * bq, gq + src * bq, sizeof(double) * bq);
            memcpy(full.k + r * bq, gkk + src * bq, sizeof(double) * bq);
            memcpy(full.v + r * bv, gv + src * bv, sizeof(double) * bv);
            memcpy(full.a + r * ba, ga + src * ba, sizeof(double) * ba);
            memcpy(full.b + r * bb, gb + src * bb, sizeof(double) * bb);
        }
        for (int h = 0; h < HV; h++)
            full.A_log[h] = (float)galog[h];
        for (int i = 0; i < HV * gk; i++)
            full.dt_bias[i] = (float)gdt[i];
        rc = rh_state_create(ctx, &l, slots, &s);
    }
    if (!rc) {
        rh_rng rng;
        rh_rng_seed(&rng, 7);
        rc = rh_state_randomize(ctx, &s, &rng, 0);
        for (int r = 0; r < B && !rc; r++)
            rc = rh_state_set(ctx, &s, slot[r], gS0 + r * nS);
    }
    if (!rc) rc = rh_snap_take(ctx, &s, &before);
    for (int64_t i = 0; i < nO; i++)
        o[i] = NAN;

    /* copies the outputs of rows r (token t of the step) to o at token pos[r] + t */
    rh_rng rng;
    rh_rng_seed(&rng, 1234 + pattern);
    if (!rc && (path == VP_PACKED || path == VP_REPLAY)) {
        for (int t = 0; t < T && !rc; t++) {
            rh_inputs one;
            rc = rh_inputs_slice(&full, t, 1, &one);
            if (!rc)
                rc = rh_step(ctx, &s, path == VP_PACKED ? RH_OP_DECODE_PACKED : RH_OP_DECODE_REPLAY, &one, slot, NULL,
                             NULL, t % 3 == 1, ostep);
            if (!rc && path == VP_REPLAY) rc = rh_advance(ctx, &s, R, slot, NULL);
            for (int r = 0; r < B && !rc; r++)
                memcpy(o + ((int64_t)r * T + t) * HV * V, ostep + (int64_t)r * HV * V, sizeof(double) * HV * V);
            for (int64_t i = 0; i < HV * V && !rc; i++)
                if (ostep[(int64_t)B * HV * V + i] != 0) rc = rh_set(RH_FAIL, "padding row output is not zero");
            rh_inputs_free(&one);
        }
    } else if (!rc && path == VP_PREFILL) {
        const int P = T / 2 + (pattern % 3);
        rh_inputs pre;
        rc = rh_inputs_slice(&full, 0, P, &pre);
        if (!rc) rc = rh_step(ctx, &s, RH_OP_PREFILL, &pre, slot, NULL, NULL, 0, ostep);
        for (int r = 0; r < B && !rc; r++)
            memcpy(o + (int64_t)r * T * HV * V, ostep + (int64_t)r * P * HV * V, sizeof(double) * P * HV * V);
        rh_inputs_free(&pre);
        if (!rc) rc = rh_reset(ctx, &s, R, slot);
        for (int t = P; t < T && !rc; t++) {
            rh_inputs one;
            rc = rh_inputs_slice(&full, t, 1, &one);
            if (!rc) rc = rh_step(ctx, &s, RH_OP_DECODE_REPLAY, &one, slot, NULL, NULL, 0, ostep);
            if (!rc) rc = rh_advance(ctx, &s, R, slot, NULL);
            for (int r = 0; r < B && !rc; r++)
                memcpy(o + ((int64_t)r * T + t) * HV * V, ostep + (int64_t)r * HV * V, sizeof(double) * HV * V);
            rh_inputs_free(&one);
        }
    } else if (!rc) { /* verify windows */
        int pos[64] = {0}, done = 0, it = 0;
        while (!rc && !done && it < 10 * T) {
            const int Tw = pattern == 0 ? L : 1 + (it * 3 + pattern) % L;
            int32_t wslot[64], acc[64];
            uint8_t fold[64];
            rh_inputs win;
            rc = rh_inputs_alloc(&win, &l, R, Tw, 0);
            for (int r = 0; r < R && !rc; r++) {
                const int p0 = r < B ? pos[r] : 0;
                wslot[r] = r < B && pos[r] < T ? slot[r] : -1;
                for (int t = 0; t < Tw; t++) {
                    int ti = p0 + t < T ? p0 + t : T - 1;
                    rh_inputs_copy_token(&full, r, ti, &win, r, t);
                }
                const int left = r < B ? T - pos[r] : 0;
                int a;
                switch (pattern) {
                case 0:
                    a = Tw;
                    break; /* accept everything */
                case 1:
                    a = 1;
                    break; /* every draft rejected */
                case 2:
                    a = (it + r) % (Tw + 1);
                    break; /* cycling, zero included */
                default:
                    a = (int)(rh_uniform(&rng) * (Tw + 1));
                    break; /* random */
                }
                acc[r] = a < left ? a : left;
                fold[r] = pattern == 3 && rh_uniform(&rng) < 0.15;
            }
            if (!rc) rc = rh_step(ctx, &s, RH_OP_VERIFY, &win, wslot, NULL, fold, it % 2, ostep);
            if (!rc) rc = rh_commit(ctx, &s, R, Tw, wslot, fold, acc);
            done = 1;
            for (int r = 0; r < B && !rc; r++) {
                for (int t = 0; t < Tw && pos[r] + t < T && wslot[r] >= 0; t++)
                    memcpy(o + ((int64_t)r * T + pos[r] + t) * HV * V, ostep + ((int64_t)r * Tw + t) * HV * V,
                           sizeof(double) * HV * V);
                if (wslot[r] >= 0) pos[r] += acc[r];
                if (pos[r] < T) done = 0;
            }
            rh_inputs_free(&win);
            it++;
        }
        if (!rc && !done) rc = rh_set(RH_FAIL, "verify pattern made no progress");
    }
    if (!rc) {
        if (path == VP_PACKED)
            rc = rh_checkpoint(ctx, &s, B, real, S);
        else
            rc = rh_materialized(ctx, &s, B, real, S);
    }
    if (!rc) rc = rh_snap_take(ctx, &s, &after);
    if (!rc && (!rh_snap_slot_equal(&s, &before, &after, 0) || !rh_snap_slot_equal(&s, &before, &after, B + 1)))
        rc = rh_set(RH_FAIL, "a slot no row selected was changed");
    if (!rc) {
        *err_o = rh_relerr(o, go, nO);
        *err_s = rh_relerr(S, gS, B * nS);
    }
    rh_snap_free(&before), rh_snap_free(&after);
    rh_state_free(ctx, &s);
    rh_inputs_free(&full);
    free(o), free(ostep), free(S);
    return rc;
}

static void run_vectors(rssm_context *ctx, rssm_device dev, const rv_file *vf, int quick, tally *t)
{
    struct {
        rssm_dtype s, r, io;
        double tol;
    } dts[4] = {{RSSM_DTYPE_F64, RSSM_DTYPE_F64, RSSM_DTYPE_F64, 1e-6},
                {RSSM_DTYPE_F32, RSSM_DTYPE_F32, RSSM_DTYPE_F32, 1e-5},
                {RSSM_DTYPE_F32, RSSM_DTYPE_BF16, RSSM_DTYPE_F32, 5e-2},
                {RSSM_DTYPE_BF16, RSSM_DTYPE_BF16, RSSM_DTYPE_BF16, 5e-2}};
    const int d0 = dev == RSSM_DEVICE_REFERENCE ? 0 : 1;
    static const int Ls[] = {1, 2, 4, 8, 16};
    for (int ci = 0; ci < vf->ncases; ci++) {
        const rv_case *c = &vf->cases[ci];
        for (int d = d0; d < 4; d++) {
            if (quick && d > 1) continue;
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
                snprintf(name, sizeof name, "vectors/%s/%s/state=%s,ring=%s,io=%s/L=%d%s", c->name, pn[runs[i].p],
                         rh_dtype_name(dts[d].s), rh_dtype_name(dts[d].r), rh_dtype_name(dts[d].io), runs[i].L,
                         runs[i].p == VP_VERIFY    ? (const char *[]){"/accept-all", "/accept-1", "/accept-cycle",
                                                                      "/accept-random+fold"}[runs[i].pat]
                         : runs[i].p == VP_PREFILL ? "/prefill-half"
                                                   : "");
                double eo = 0, es = 0;
                int rc = vector_run(ctx, c, dts[d].s, dts[d].r, dts[d].io, runs[i].p, runs[i].L, runs[i].pat, &eo, &es);
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
    int strided; /* q, k, v, a as strided views */
} mcase;

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
                c->pre = i % 2, c->strided = (i / 2) % 2;
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
            c->pre = (i + 1) % 2, c->strided = i % 3 == 0;
        }
    return n;
}

static void mcase_name(const mcase *c, char *name, size_t n)
{
    snprintf(name, n, "matrix/%s%s/L=%d/state=%s,ring=%s,io=%s/H=%d,HV=%d,K=%d,V=%d/%s%s",
             c->gate == RSSM_GATE_GDN ? "gdn" : "kda", c->lb ? "-lb" : "", c->L, rh_dtype_name(c->s),
             rh_dtype_name(c->r), rh_dtype_name(c->io), c->H, c->HV, c->K, c->V, c->pre ? "g-beta" : "raw-gates",
             c->strided ? ",strided" : "");
}

static double mcase_tol(const mcase *c) { return rh_tolerance(c->s, c->r, c->io); }

static int count_matrix(int quick, const char *filter)
{
    mcase cs[128];
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
        /* rssm_verify's precondition: a KDA window's own decay stays above -80 per channel */
        if (verify && c->gate == RSSM_GATE_KDA) rh_inputs_bound_gates(&in, &l, -60.0 / T);
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
    mcase cs[128];
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

static void usage(FILE *f)
{
    fprintf(f, "usage: replayssm check [--suite ops|runtime] [--device cpu|cuda|reference] [--vectors FILE] [--quick] "
               "[--strict]\n"
               "  Runs the equivalence matrix on the device against the float64 reference (one line per\n"
               "  case: PASS/FAIL, max norm-relative error), and with --vectors every golden case through\n"
               "  every decode path (packed, replay at L=1..16, verify windows, prefill then decode).\n"
               "  --device     device under test (default cpu)\n"
               "  --suite S    ops (default: the kernels against the reference) or runtime (pool,\n"
               "               planner, prefix cache, export/import)\n"
               "  --vectors    golden vector file (../shared/vectors/fla-reference.txt)\n"
               "  --quick      a smaller matrix (every axis value still appears)\n"
               "  --strict     count cases the device does not support as failures, not skips\n"
               "  --filter S   run only cases whose name contains S\n"
               "Ends with 'N passed, N failed, N skipped'; exit 1 on any failure, else 0.\n");
}

int rssm_cli_check(int argc, char **argv, const rssm_context_params *params)
{
    /* --suite ops: this file (--suite runtime: runtime_check.c, chosen by tools/main.c) */
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], "--suite")) {
            if (strcmp(argv[i + 1], "ops")) {
                fprintf(stderr, "replayssm check: unknown suite '%s' (ops, runtime)\n", argv[i + 1]);
                return 2;
            }
            for (int j = i; j + 2 <= argc; j++)
                argv[j] = j + 2 < argc ? argv[j + 2] : NULL;
            argc -= 2;
            break;
        }
    rssm_device dev = RSSM_DEVICE_CPU;
    const char *vectors = NULL, *filter = NULL;
    int quick = 0, strict = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--device") && i + 1 < argc) {
            const char *d = argv[++i];
            if (!strcmp(d, "cpu"))
                dev = RSSM_DEVICE_CPU;
            else if (!strcmp(d, "cuda"))
                dev = RSSM_DEVICE_CUDA;
            else if (!strcmp(d, "reference") || !strcmp(d, "ref"))
                dev = RSSM_DEVICE_REFERENCE;
            else {
                fprintf(stderr, "replayssm check: unknown device '%s'\n", d);
                usage(stderr);
                return 2;
            }
        } else if (!strcmp(argv[i], "--vectors") && i + 1 < argc) {
            vectors = argv[++i];
        } else if (!strcmp(argv[i], "--filter") && i + 1 < argc) {
            filter = argv[++i];
        } else if (!strcmp(argv[i], "--quick")) {
            quick = 1;
        } else if (!strcmp(argv[i], "--strict")) {
            strict = 1;
        } else {
            fprintf(stderr, "replayssm check: unknown option '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    tally t = {0, 0, 0};
    rv_file vf;
    memset(&vf, 0, sizeof vf);
    if (vectors) {
        char err[256];
        if (rv_load(vectors, &vf, err, sizeof err)) {
            printf("FAIL vectors: %s\n", err);
            printf("0 passed, 1 failed, 0 skipped\n");
            return 1;
        }
    }
    rssm_context *ctx = NULL, *ref = NULL;
    int rc = rh_context_with(dev, params, &ctx);
    if (rc == RH_UNSUPPORTED && dev == RSSM_DEVICE_CUDA && !strict) {
        printf("SKIP all: device %s unavailable: %s\n", rh_device_name(dev), rh_msg());
        t.skipped = count_matrix(quick, filter) + (vectors ? 1 : 0);
        printf("%d passed, %d failed, %d skipped\n", t.passed, t.failed, t.skipped);
        rv_free(&vf);
        return 0;
    }
    if (rc == RH_OK) rc = rh_context(RSSM_DEVICE_REFERENCE, &ref);
    if (rc != RH_OK) {
        printf("FAIL device %s: %s\n", rh_device_name(dev), rh_msg());
        printf("0 passed, 1 failed, 0 skipped\n");
        rssm_context_free(ctx);
        rv_free(&vf);
        return 1;
    }
    printf("replayssm check: device %s against the reference%s\n", rh_device_name(dev), quick ? " (quick)" : "");
    run_matrix(ctx, ref, quick, filter, strict, &t);
    if (vectors) {
        tally vt = {0, 0, 0};
        run_vectors(ctx, dev, &vf, quick, &vt);
        if (strict) vt.failed += vt.skipped, vt.skipped = 0;
        t.passed += vt.passed, t.failed += vt.failed, t.skipped += vt.skipped;
    }
    printf("%d passed, %d failed, %d skipped\n", t.passed, t.failed, t.skipped);
    rssm_context_free(ctx);
    rssm_context_free(ref);
    rv_free(&vf);
    return t.failed ? 1 : 0;
}
