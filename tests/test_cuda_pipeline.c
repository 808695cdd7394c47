/*
 * test_cuda_pipeline.c — the replay pipeline's deals of work against the per-head kernel, bit for
 * bit, on batches where each CTA of the pipeline takes many heads: replay decode steps with
 * staggered cursors (the rows at L - 1 fold), forced folds, padding rows and, after a verify
 * window's commit, rows that start with a fold (cursor at L) run on the per-head
 * kernel (rssm_context_params.cuda_pipeline = 0) and on the pipeline with its plain round robin
 * (cuda_pipeline_balance = 0) and with the folding rows first (1), each with the rule's producer
 * warps and with fewer (cuda_pipeline_producers 1 or 2); every output and, at the end,
 * every tensor of every slot must be the same bits. The verify window itself (4 tokens, some rows
 * starting with a fold) runs on the verify pipeline (verify_pipeline.cu) wherever the pipeline is
 * forced and the state is V-first, so it is held to the per-head kernel's bits too. An order that skipped or repeated a
 * head would leave NaN outputs or a stale state (tests/test_pipe_order.c holds pipeline_order.h to its contract on the
 * host; this runs it on the device). Packed decode on the pipeline likewise against the per-head kernel: in-place
 * steps, and copy-on-write steps (write_slot) where some rows write spare slots and one row's write slot is -1 (a
 * padding row). GDN (Qwen3-Next heads, a group of 2 value heads per unit) and KDA (Kimi-Linear heads), f32 and bf16
 * state, each state in both layouts (V-first; K-first, which the pipeline stages in tiles, or in padded blocks for
 * packed decode of a bf16 state).
 * With RSSM_TEST_DIGEST set it runs only the per-head kernel and prints a digest of each case's
 * outputs and final tensors, so that two builds of the library can be held to the same bits (run
 * the binary against each).
 * Skips (exit 77, ctest's SKIP_RETURN_CODE) without a CUDA device.
 */
#include <stdlib.h>
#include <string.h>

#include "common.h"

/* batches: BMAX rows, and a batch of one word of the folding-row bitmap (at most 32 rows: the
 * pipeline's one-word start, V-first GDN by a run-time test, K-first GDN and KDA in kernels of
 * their own) */
enum { BMAX = 72, B_WORD = 24, SLOTS = 80, L = 16, STEPS = L + 3, VERIFY_T = 4, RUNS = 5 };

static const char *run_name[RUNS] = {"per-head kernel", "pipeline, plain order", "pipeline, folding rows first",
                                     "pipeline, plain order, 1 producer", "pipeline, folding rows first, 2 producers"};

static int context_for(int run, rssm_context **out)
{
    static const int balance[RUNS] = {-1, 0, 1, 0, 1}, producers[RUNS] = {-1, -1, -1, 1, 2};
    rssm_context_params p = rssm_context_params_default();
    p.cuda_pipeline = run > 0;
    p.cuda_pipeline_balance = balance[run];
    p.cuda_pipeline_producers = producers[run];
    return rh_context_with(RSSM_DEVICE_CUDA, &p, out);
}

/* rows b on distinct random slots (a permutation's first B), every ninth row padding; wslot:
 * the same but for rows 3, 14, 25, .. (every eleventh) on the slots no row reads, and row 5 at -1 */
static void row_slots(rh_rng *rng, int B, int32_t *slot, int32_t *wslot)
{
    int32_t perm[SLOTS];
    rh_permutation(rng, perm, SLOTS);
    for (int b = 0; b < B; b++)
        slot[b] = b % 9 == 4 ? -1 : perm[b];
    int spare = B;
    for (int b = 0; b < B; b++)
        wslot[b] = b == 5 ? -1 : b % 11 == 3 && slot[b] >= 0 ? perm[spare++] : slot[b];
}

/* STEPS steps on ctx from `init`, replay decode but for one verify window of VERIFY_T tokens with
 * its commit, or (wslot) packed decode, copy-on-write every other step: their outputs one after
 * the other into o, the state after */
static int run_steps(rssm_context *ctx, const rssm_layer *l, int B, const rh_snap *init, const int32_t *slot,
                     const int32_t *wslot, uint64_t seed, double *o, rh_snap *after)
{
    rh_state s;
    int rc = rh_state_create(ctx, l, SLOTS, &s);
    if (rc) return rc;
    rc = rh_snap_put(ctx, &s, init);
    rh_rng rng;
    rh_rng_seed(&rng, seed);
    const size_t per_token = (size_t)B * l->num_v_heads * l->head_v_dim;
    for (int i = 0; i < STEPS && !rc; i++) {
        /* one verify window with its commit: rows whose cursor lands on L start the next decode
         * step with a fold (the pipeline then keeps a key head's value heads on one CTA) */
        const int verify = !wslot && i == STEPS / 2, T = verify ? VERIFY_T : 1;
        rh_inputs in;
        rc = rh_inputs_alloc(&in, l, B, T, i % 2);
        if (rc) break;
        rh_inputs_random(&in, l, &rng);
        uint8_t fold[BMAX];
        for (int b = 0; b < B; b++)
            fold[b] = !verify && (b + i) % 23 == 0; /* a forced fold now and then, on rows at any cursor */
        if (wslot) {
            rc = rh_step(ctx, &s, RH_OP_DECODE_PACKED, &in, slot, i % 2 ? wslot : NULL, NULL, 0, o);
        } else if (verify) {
            int32_t acc[BMAX];
            for (int b = 0; b < B; b++)
                acc[b] = (int32_t)(rh_uniform(&rng) * (T + 1));
            rc = rh_step(ctx, &s, RH_OP_VERIFY, &in, slot, NULL, fold, 0, o);
            if (!rc) rc = rh_commit(ctx, &s, B, T, slot, fold, acc);
        } else {
            rc = rh_step(ctx, &s, RH_OP_DECODE_REPLAY, &in, slot, NULL, fold, 0, o);
            if (!rc) rc = rh_advance(ctx, &s, B, slot, fold);
        }
        o += T * per_token;
        rh_inputs_free(&in);
    }
    if (!rc) rc = rh_snap_take(ctx, &s, after);
    rh_state_free(ctx, &s);
    return rc;
}

/* FNV-1a over n bytes, continuing from h */
static uint64_t fnv1a(uint64_t h, const void *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        h = (h ^ ((const uint8_t *)p)[i]) * 0x100000001b3ull;
    return h;
}

static void one_layer(rssm_context *const *ctx, int kda, rssm_dtype sdt, rssm_state_layout lay, int packed, int B,
                      uint64_t seed)
{
    rssm_layer l = rssm_layer_default(kda ? RSSM_GATE_KDA : RSSM_GATE_GDN, kda ? 32 : 16, 32, 128, 128, L);
    l.state_dtype = sdt, l.ring_dtype = RSSM_DTYPE_BF16, l.io_dtype = RSSM_DTYPE_BF16, l.state_layout = lay;
    rh_rng rng;
    rh_rng_seed(&rng, seed);
    int32_t slot[BMAX], wslot[BMAX];
    row_slots(&rng, B, slot, wslot);
    const size_t no = (size_t)(STEPS - 1 + VERIFY_T) * B * l.num_v_heads * l.head_v_dim;
    double *o[RUNS];
    rh_snap init = {0}, after[RUNS];
    memset(after, 0, sizeof after);
    rh_state s0;
    memset(&s0, 0, sizeof s0);
    /* random checkpoints and live rings, cursors anywhere in [0, L - 1]: about one row in L folds per step */
    int rc = rh_state_create(ctx[0], &l, SLOTS, &s0);
    if (!rc) rc = rh_state_randomize(ctx[0], &s0, &rng, 0);
    if (!rc) rc = rh_snap_take(ctx[0], &s0, &init);
    for (int r = 0; r < RUNS; r++) {
        o[r] = calloc(no, sizeof(double)); /* packed fills fewer */
        if (!o[r] && !rc) rc = rh_set(RH_FAIL, "out of host memory");
    }
    const int digest = getenv("RSSM_TEST_DIGEST") != NULL;
    const int runs = digest ? 1 : packed ? 2 : RUNS; /* packed decode has no order to choose */
    for (int r = 0; r < runs && !rc; r++)
        rc = run_steps(ctx[r], &l, B, &init, slot, packed ? wslot : NULL, seed + 1, o[r], &after[r]);
    if (!rc && digest) {
        uint64_t h = fnv1a(0xcbf29ce484222325ull, o[0], sizeof(double) * no);
        for (int i = 0; i < RH_NT; i++)
            h = fnv1a(h, after[0].t[i], after[0].n[i]);
        printf("digest %s %s %d rows, state %s %s: %016llx\n", kda ? "kda" : "gdn", packed ? "packed" : "replay", B,
               rh_dtype_name(sdt), lay == RSSM_LAYOUT_KV ? "K-first" : "V-first", (unsigned long long)h);
    }
    for (int r = 1; r < runs; r++) {
        int same = !rc && !memcmp(o[0], o[r], sizeof(double) * no);
        for (int sl = 0; sl < SLOTS && same; sl++)
            same = rh_snap_slot_equal(&s0, &after[0], &after[r], sl);
        t_case(rc, same, "%s %s %d rows x %d steps, state %s %s: %s == per-head kernel", kda ? "kda" : "gdn",
               packed ? "packed" : "replay", B, STEPS, rh_dtype_name(sdt),
               lay == RSSM_LAYOUT_KV ? "K-first" : "V-first", packed ? "pipeline" : run_name[r]);
    }
    rh_state_free(ctx[0], &s0);
    for (int r = 0; r < RUNS; r++)
        free(o[r]), rh_snap_free(&after[r]);
    rh_snap_free(&init);
}

int main(void)
{
    rssm_context *ctx[RUNS] = {0};
    int rc = context_for(0, &ctx[0]);
    if (rc == RH_UNSUPPORTED) {
        printf("SKIP cuda pipeline deals (%s)\n0 passed, 0 failed, 1 skipped\n", rh_msg());
        return RH_EXIT_SKIP;
    }
    for (int r = 1; r < RUNS && !rc; r++)
        rc = context_for(r, &ctx[r]);
    if (rc) {
        printf("FAIL cuda contexts: %s\n", rh_msg());
        return 1;
    }
    uint64_t seed = 0x5eed;
    for (int packed = 0; packed < 2; packed++)
        for (int kda = 0; kda < 2; kda++)
            for (int d = 0; d < 2; d++)
                for (int kv = 0; kv < 2; kv++, seed += 7)
                    one_layer(ctx, kda, d ? RSSM_DTYPE_BF16 : RSSM_DTYPE_F32, kv ? RSSM_LAYOUT_KV : RSSM_LAYOUT_VK,
                              packed, BMAX, seed);
    for (int kda = 0; kda < 2; kda++) /* replay on one bitmap word (packed decode deals no folding rows) */
        for (int d = 0; d < 2; d++)
            for (int kv = 0; kv < 2; kv++, seed += 7)
                one_layer(ctx, kda, d ? RSSM_DTYPE_BF16 : RSSM_DTYPE_F32, kv ? RSSM_LAYOUT_KV : RSSM_LAYOUT_VK, 0,
                          B_WORD, seed);
    for (int r = 0; r < RUNS; r++)
        rssm_context_free(ctx[r]);
    return t_end();
}
