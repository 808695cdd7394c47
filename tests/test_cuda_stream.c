/*
 * test_cuda_stream.c — packed decode streamed by rows (stream_k128.cu) against the per-head
 * kernel, bit for bit: rssm_context_params.cuda_stream = 4, 8, 16 and 32 rows per warp against 0,
 * over several steps from random states, GDN (Qwen3-Next heads, a group of 2 value heads per key
 * head) and KDA (Kimi-Linear heads), f32 and bf16 state, bf16 and f32 io, raw and precomputed
 * gates, with and without the l2 norm of q and k, the safe gate (lower bound), contiguous and
 * strided token inputs; rows on random slots with padding rows, and every other step
 * copy-on-write (write_slot: some rows write spare slots, one row's write slot is -1); at 176 rows
 * the warps issue their first two chunks early on GPUs of up to 234 SMs (launch_rules.h,
 * rssm_stream_early). Every output and, at the end, every slot's state must be the same bits,
 * and the slots no row names untouched. Small-batch replay steps (io.fold_every: every row folds,
 * its ring empty), which run packed decode's code, likewise; a row there that does not fold gets
 * a device error on every kernel and its slot is left as it was. Skips (exit 77) without a CUDA
 * device.
 */
#include <stdlib.h>
#include <string.h>

#include "common.h"

enum { MAX_SLOTS = 200, STEPS = 4, RUNS = 5 };

/* slots of a case's state: 48, or the rows and an eighth more for the spare write slots */
static int slots_for(int B) { return B + B / 8 > 48 ? B + B / 8 : 48; }

static const int rows_per_warp[RUNS] = {0, 4, 8, 16, 32};

/* rows on distinct random slots, every seventh padding (3, 10, 17, ..); wslot: rows 2, 13, 35,
 * .. (every eleventh from 2 that is not padding) on slots no row reads, row 1 at -1 */
static void row_slots(rh_rng *rng, int B, int32_t *slot, int32_t *wslot)
{
    const int slots = slots_for(B);
    int32_t perm[MAX_SLOTS];
    rh_permutation(rng, perm, slots);
    for (int b = 0; b < B; b++)
        slot[b] = b % 7 == 3 ? -1 : perm[b];
    int spare = B;
    for (int b = 0; b < B; b++)
        wslot[b] = b == 1 && B > 2 ? -1 : b % 11 == 2 && slot[b] >= 0 && spare < slots ? perm[spare++] : slot[b];
}

/* fold_every: small-batch replay steps (every row's fold flag set, no write slots) instead of packed
 * decode */
static int run_steps(rssm_context *ctx, const rssm_layer *l, int B, int precomputed, int strided, int fold_every,
                     const rh_snap *init, const int32_t *slot, const int32_t *wslot, uint64_t seed, double *o,
                     rh_snap *after)
{
    uint8_t fold[MAX_SLOTS];
    memset(fold, 1, sizeof fold);
    rh_state s;
    int rc = rh_state_create(ctx, l, slots_for(B), &s);
    if (rc) return rc;
    rc = rh_snap_put(ctx, &s, init);
    rh_rng rng;
    rh_rng_seed(&rng, seed);
    const size_t per_step = (size_t)B * l->num_v_heads * l->head_v_dim;
    for (int i = 0; i < STEPS && !rc; i++, o += per_step) {
        rh_inputs in;
        rc = rh_inputs_alloc(&in, l, B, 1, precomputed);
        if (rc) break;
        rh_inputs_random(&in, l, &rng);
        in.fold_every = fold_every;
        rc = fold_every ? rh_step(ctx, &s, RH_OP_DECODE_REPLAY, &in, slot, NULL, fold, strided, o)
                        : rh_step(ctx, &s, RH_OP_DECODE_PACKED, &in, slot, i % 2 ? wslot : NULL, NULL, strided, o);
        rh_inputs_free(&in);
    }
    if (!rc) rc = rh_snap_take(ctx, &s, after);
    rh_state_free(ctx, &s);
    return rc;
}

typedef struct layer_case {
    int kda, B, precomputed, l2norm, lower_bound;
    rssm_dtype state, io;
    int strided;    /* token inputs as strided views (raw gates only: precomputed gates with strides of their own
                       run on the general kernel) */
    int fold_every; /* small-batch replay steps (io.fold_every) */
} layer_case;

static void one_case(rssm_context *const *ctx, layer_case c, uint64_t seed)
{
    rssm_layer l = rssm_layer_default(c.kda ? RSSM_GATE_KDA : RSSM_GATE_GDN, c.kda ? 32 : 16, 32, 128, 128, 8);
    l.state_dtype = c.state, l.ring_dtype = RSSM_DTYPE_BF16, l.io_dtype = c.io;
    l.qk_l2norm = c.l2norm;
    if (c.lower_bound) l.has_lower_bound = 1, l.lower_bound = -5.0f;
    rh_rng rng;
    rh_rng_seed(&rng, seed);
    const int slots = slots_for(c.B);
    int32_t slot[MAX_SLOTS], wslot[MAX_SLOTS];
    row_slots(&rng, c.B, slot, wslot);
    const size_t no = (size_t)STEPS * c.B * l.num_v_heads * l.head_v_dim;
    double *o[RUNS] = {0};
    rh_snap init = {0}, after[RUNS];
    memset(after, 0, sizeof after);
    rh_state s0;
    memset(&s0, 0, sizeof s0);
    int rc = rh_state_create(ctx[0], &l, slots, &s0);
    if (!rc) rc = rh_state_randomize(ctx[0], &s0, &rng, 1);
    if (!rc) rc = rh_snap_take(ctx[0], &s0, &init);
    for (int r = 0; r < RUNS; r++) {
        o[r] = calloc(no, sizeof(double));
        if (!o[r] && !rc) rc = rh_set(RH_FAIL, "out of host memory");
    }
    for (int r = 0; r < RUNS && !rc; r++)
        rc = run_steps(ctx[r], &l, c.B, c.precomputed, c.strided, c.fold_every, &init, slot, wslot, seed + 1, o[r],
                       &after[r]);
    uint8_t named[MAX_SLOTS] = {0};
    for (int b = 0; b < c.B; b++)
        if (slot[b] >= 0) named[slot[b]] = 1, named[c.fold_every || wslot[b] < 0 ? slot[b] : wslot[b]] = 1;
    for (int r = 1; r < RUNS; r++) {
        int same = !rc && !memcmp(o[0], o[r], sizeof(double) * no);
        for (int sl = 0; sl < slots && same; sl++)
            same = rh_snap_slot_equal(&s0, &after[0], &after[r], sl) &&
                   (named[sl] || rh_snap_slot_equal(&s0, &init, &after[r], sl));
        t_case(rc, same, "%s B=%d state %s io %s %s gates%s%s%s, %d %s: %d rows per warp == per-head kernel",
               c.kda ? "kda" : "gdn", c.B, rh_dtype_name(c.state), rh_dtype_name(c.io),
               c.precomputed ? "precomputed" : "raw", c.l2norm ? "" : ", no l2 norm",
               c.lower_bound ? ", safe gate" : "", c.strided ? ", strided inputs" : "", STEPS,
               c.fold_every ? "small-batch replay steps" : "steps", rows_per_warp[r]);
    }
    rh_state_free(ctx[0], &s0);
    for (int r = 0; r < RUNS; r++)
        free(o[r]), rh_snap_free(&after[r]);
    rh_snap_free(&init);
}

/* A small-batch step with a live row (2) whose fold flag is off: every kernel reports a device
 * error, leaves that row's slot as it was, and gives the other rows the same bits. */
static void unfolded_row(rssm_context *const *ctx, uint64_t seed)
{
    rssm_layer l = rssm_layer_default(RSSM_GATE_GDN, 16, 32, 128, 128, 8);
    l.state_dtype = RSSM_DTYPE_BF16, l.ring_dtype = RSSM_DTYPE_BF16, l.io_dtype = RSSM_DTYPE_BF16;
    enum { B = 8, BAD = 2 };
    rh_rng rng;
    rh_rng_seed(&rng, seed);
    int32_t slot[MAX_SLOTS], wslot[MAX_SLOTS];
    row_slots(&rng, B, slot, wslot);
    uint8_t fold[B];
    for (int b = 0; b < B; b++)
        fold[b] = b != BAD;
    rh_snap init = {0}, after[RUNS];
    memset(after, 0, sizeof after);
    rh_state s0; /* the initial state, kept for its shape */
    memset(&s0, 0, sizeof s0);
    int rc = rh_state_create(ctx[0], &l, slots_for(B), &s0);
    if (!rc) rc = rh_state_randomize(ctx[0], &s0, &rng, 1);
    if (!rc) rc = rh_snap_take(ctx[0], &s0, &init);
    int reported = 1;
    for (int r = 0; r < RUNS && !rc; r++) {
        rh_state s;
        rh_inputs in;
        rc = rh_state_create(ctx[r], &l, slots_for(B), &s);
        if (rc) break;
        rc = rh_snap_put(ctx[r], &s, &init);
        if (!rc) rc = rh_inputs_alloc(&in, &l, B, 1, 0);
        if (!rc) {
            rh_rng in_rng;
            rh_rng_seed(&in_rng, seed + 1);
            rh_inputs_random(&in, &l, &in_rng);
            in.fold_every = 1;
            reported &= rh_step(ctx[r], &s, RH_OP_DECODE_REPLAY, &in, slot, NULL, fold, 0, NULL) == RH_FAIL;
            rh_inputs_free(&in);
            rc = rh_snap_take(ctx[r], &s, &after[r]);
        }
        rh_state_free(ctx[r], &s);
    }
    for (int r = 0; r < RUNS; r++) {
        int same = !rc && reported && rh_snap_slot_equal(&s0, &init, &after[r], slot[BAD]);
        for (int sl = 0; sl < slots_for(B) && same; sl++)
            same = rh_snap_slot_equal(&s0, &after[0], &after[r], sl);
        t_case(rc, same,
               "gdn B=8 state bf16, a small-batch step with row %d not folding: %d rows per warp report it, leave its "
               "slot, and give the per-head kernel's bits elsewhere",
               BAD, rows_per_warp[r]);
    }
    rh_state_free(ctx[0], &s0);
    for (int r = 0; r < RUNS; r++)
        rh_snap_free(&after[r]);
    rh_snap_free(&init);
}

int main(void)
{
    rssm_context *ctx[RUNS] = {0};
    int rc = 0;
    for (int r = 0; r < RUNS && !rc; r++) {
        rssm_context_params p = rssm_context_params_default();
        p.cuda_pipeline = 0, p.cuda_stream = rows_per_warp[r];
        rc = rh_context_with(RSSM_DEVICE_CUDA, &p, &ctx[r]);
    }
    if (rc == RH_UNSUPPORTED) {
        printf("SKIP cuda packed decode by rows (%s)\n0 passed, 0 failed, 1 skipped\n", rh_msg());
        return RH_EXIT_SKIP;
    }
    if (rc) {
        printf("FAIL cuda contexts: %s\n", rh_msg());
        return 1;
    }
    const rssm_dtype F32 = RSSM_DTYPE_F32, BF16 = RSSM_DTYPE_BF16;
    const layer_case cases[] = {
        /* kda  B  pre l2 lb  state io  strided fold_every */
        {0, 40, 0, 1, 0, F32, BF16, 0, 0},
        {0, 40, 0, 1, 0, BF16, BF16, 0, 0},
        {1, 40, 0, 1, 0, F32, BF16, 0, 0},
        {1, 40, 0, 1, 0, BF16, BF16, 1, 0},
        {0, 3, 0, 1, 0, F32, F32, 1, 0},
        {1, 5, 0, 1, 0, BF16, F32, 0, 0},
        {0, 24, 1, 1, 0, F32, BF16, 0, 0},
        {1, 24, 1, 0, 0, F32, BF16, 0, 0},
        {1, 9, 0, 0, 1, BF16, BF16, 0, 0},
        {1, 9, 0, 1, 1, F32, F32, 0, 0},
        {0, 9, 0, 0, 0, BF16, F32, 0, 0},
        /* from 24 value heads per SM (B = 99 on 132 SMs) the first two chunks load early */
        {0, 176, 0, 1, 0, BF16, BF16, 0, 0},
        {1, 176, 0, 1, 0, BF16, BF16, 1, 0},
        {0, 176, 0, 1, 0, F32, BF16, 0, 0},
        /* small-batch replay steps: B = 8 streams 8 rows per warp by rule, B = 16 16 rows */
        {0, 8, 0, 1, 0, BF16, BF16, 0, 1},
        {1, 16, 0, 1, 0, BF16, BF16, 0, 1},
        {0, 16, 1, 1, 0, BF16, F32, 0, 1},
        {1, 5, 0, 0, 1, F32, BF16, 1, 1},
    };
    uint64_t seed = 0x57ea;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++, seed += 11)
        one_case(ctx, cases[i], seed);
    unfolded_row(ctx, seed);
    for (int r = 0; r < RUNS; r++)
        rssm_context_free(ctx[r]);
    return t_end();
}
