/*
 * test_cuda_bad_rows.c — a row whose metadata in device memory is out of range, on the CUDA
 * kernels: a cursor past L or negative, a ring base negative, far off, or above the cursor. The
 * host cannot see those values, so the kernels must: the call reports the row
 * (rssm_context_check_device_errors: "out of range"), the row's slot is left as it was, every
 * other row's slot gets the bits a clean step gives it (the same step with the row as padding),
 * and the context stays usable (a shared-memory access out of range leaves a sticky CUDA error,
 * and the clean step after it fails). Replay decode and verify windows of 4 tokens, on the
 * per-head kernel and with the pipelines forced (cuda_pipeline 0 / 1), GDN and KDA, f32 state,
 * V-first (the layout both pipelines take). Skips (exit 77) without a CUDA device.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

enum { B = 40, SLOTS = 48, L = 16, VERIFY_T = 4, BAD_ROW = 7 };
#define KEEP INT_MIN /* the value the clean state has */

static const struct bad_case {
    const char *name;
    int cursor, base;
} bad_cases[] = {
    {"cursor L + 1", L + 1, KEEP},
    {"cursor -1", -1, KEEP},
    {"ring base -1", KEEP, -1},
    {"ring base -100000", KEEP, -100000},
    {"ring base above the cursor", KEEP, L}, /* L > every clean cursor */
};

static int snap_copy(const rh_snap *src, rh_snap *dst)
{
    memset(dst, 0, sizeof *dst);
    for (int i = 0; i < RH_NT; i++) {
        dst->n[i] = src->n[i];
        dst->t[i] = malloc(src->n[i] + 1);
        if (!dst->t[i]) return rh_set(RH_FAIL, "out of host memory");
        memcpy(dst->t[i], src->t[i], src->n[i]);
    }
    return RH_OK;
}

/* One step (replay decode, or a verify window) on a fresh state put from `from`; *after: the
 * state then. Returns the step's code; *snap_rc: the snapshot's. */
static int step(rssm_context *ctx, const rssm_layer *l, const rh_snap *from, const rh_inputs *in, int verify,
                const int32_t *slot, rh_snap *after, int *snap_rc)
{
    rh_state s;
    *snap_rc = rh_state_create(ctx, l, SLOTS, &s);
    if (*snap_rc) return *snap_rc;
    int rc = rh_snap_put(ctx, &s, from);
    if (!rc) rc = rh_step(ctx, &s, verify ? RH_OP_VERIFY : RH_OP_DECODE_REPLAY, in, slot, NULL, NULL, 0, NULL);
    *snap_rc = rh_snap_take(ctx, &s, after);
    rh_state_free(ctx, &s);
    return rc;
}

static void one_layer(rssm_context *ctx, int pipe, int kda, int verify, uint64_t seed)
{
    rssm_layer l = rssm_layer_default(kda ? RSSM_GATE_KDA : RSSM_GATE_GDN, kda ? 32 : 16, 32, 128, 128, L);
    l.state_dtype = RSSM_DTYPE_F32, l.ring_dtype = RSSM_DTYPE_BF16, l.io_dtype = RSSM_DTYPE_BF16;
    const int HV = l.num_v_heads;
    const char *gn = kda ? "kda" : "gdn", *on = verify ? "verify 4" : "replay", *kn = pipe ? "pipelines" : "per-head";
    rh_rng rng;
    rh_rng_seed(&rng, seed);
    int32_t perm[SLOTS], slot[B], clean_slot[B];
    rh_permutation(&rng, perm, SLOTS);
    for (int b = 0; b < B; b++)
        slot[b] = clean_slot[b] = perm[b];
    clean_slot[BAD_ROW] = -1; /* the clean step: the row as padding */
    const int sx = slot[BAD_ROW];
    rh_state s0;
    rh_snap init = {0}, ref = {0};
    rh_inputs in = {0};
    int rc = rh_state_create(ctx, &l, SLOTS, &s0), src = RH_OK;
    if (!rc) rc = rh_state_randomize(ctx, &s0, &rng, 0);
    if (!rc) rc = rh_snap_take(ctx, &s0, &init);
    if (!rc) rc = rh_inputs_alloc(&in, &l, B, verify ? VERIFY_T : 1, 0);
    if (!rc) rh_inputs_random(&in, &l, &rng);
    if (!rc) rc = step(ctx, &l, &init, &in, verify, clean_slot, &ref, &src);
    if (!rc) rc = src;
    for (size_t k = 0; k < sizeof bad_cases / sizeof bad_cases[0]; k++) {
        const struct bad_case *c = &bad_cases[k];
        rh_snap bad = {0}, after = {0}, again = {0};
        int brc = rc ? rc : snap_copy(&init, &bad), reported = 0, same = 0, usable = 0;
        if (!brc) {
            if (c->cursor != KEEP) ((int32_t *)bad.t[RH_CURSOR])[sx] = c->cursor;
            if (c->base != KEEP)
                for (int h = 0; h < HV; h++)
                    ((int32_t *)bad.t[RH_RING_BASE])[(size_t)sx * HV + h] = c->base;
            const int st = step(ctx, &l, &bad, &in, verify, slot, &after, &brc);
            reported = st == RH_FAIL && strstr(rh_msg(), "out of range") != NULL;
            same = !brc && rh_snap_slot_equal(&s0, &bad, &after, sx);
            for (int sl = 0; sl < SLOTS && same; sl++)
                if (sl != sx) same = rh_snap_slot_equal(&s0, &ref, &after, sl);
            /* the context after it: the clean step again, the same bits */
            int arc = RH_OK;
            usable = !brc && step(ctx, &l, &init, &in, verify, clean_slot, &again, &arc) == RH_OK && arc == RH_OK;
            for (int sl = 0; sl < SLOTS && usable; sl++)
                usable = rh_snap_slot_equal(&s0, &ref, &again, sl);
        }
        t_case(brc, reported && same && usable,
               "%s %s on the %s, a row's %s: reported %d, its slot kept and the others clean %d, context usable %d", gn,
               on, kn, c->name, reported, same, usable);
        rh_snap_free(&bad), rh_snap_free(&after), rh_snap_free(&again);
    }
    rh_inputs_free(&in);
    rh_snap_free(&init), rh_snap_free(&ref);
    rh_state_free(ctx, &s0);
}

int main(void)
{
    uint64_t seed = 0xbad5;
    for (int pipe = 0; pipe < 2; pipe++) {
        rssm_context_params p = rssm_context_params_default();
        p.cuda_pipeline = pipe;
        rssm_context *ctx = NULL;
        const int rc = rh_context_with(RSSM_DEVICE_CUDA, &p, &ctx);
        if (rc == RH_UNSUPPORTED) {
            printf("SKIP cuda bad rows (%s)\n0 passed, 0 failed, 1 skipped\n", rh_msg());
            return RH_EXIT_SKIP;
        }
        if (rc) {
            printf("FAIL cuda context: %s\n", rh_msg());
            return 1;
        }
        for (int kda = 0; kda < 2; kda++)
            for (int verify = 0; verify < 2; verify++, seed += 7)
                one_layer(ctx, pipe, kda, verify, seed);
        rssm_context_free(ctx);
    }
    return t_end();
}
