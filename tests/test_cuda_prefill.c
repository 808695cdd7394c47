/*
 * test_cuda_prefill.c — CUDA prefill in chunks of tokens (the default) against the one-token
 * loop (RSSM_CUDA_PREFILL=0): outputs and the whole state must be the same bits, for GDN and
 * KDA, every dtype mix, the fast head sizes (K = 128, 64) and a generic one, prompts shorter
 * and longer than a chunk, rows whose slot holds a live ring (folded first) and a padding row;
 * and ragged rows (cu_seqlens) against each row's own call, on both loops. Skips (exit 0)
 * without a CUDA device.
 */
#include <stdlib.h>
#include <string.h>

#include "common.h"

typedef struct shape {
    int H, HV, K, V;
} shape;

/* Runs prefill of T tokens on ctx from the state bytes `init`; o [B, T, HV, V], the state after. */
static int run_prefill(rssm_context *ctx, const rssm_layer *l, const rh_snap *init, const rh_inputs *in,
                       const int32_t *slot, double *o, rh_snap *after)
{
    rh_state s;
    int rc = rh_state_create(ctx, l, 4, &s);
    if (rc) return rc;
    rc = rh_snap_put(ctx, &s, init);
    if (!rc) rc = rh_step(ctx, &s, RSSM_OP_PREFILL, in, slot, NULL, NULL, 0, o);
    if (!rc) rc = rh_snap_take(ctx, &s, after);
    rh_state_free(ctx, &s);
    return rc;
}

int main(void)
{
    rssm_context *chunked = NULL, *one = NULL;
    int rc = rh_context(RSSM_DEVICE_CUDA, &chunked);
    if (rc == RH_UNSUPPORTED) {
        printf("SKIP cuda prefill chunks (%s)\n0 passed, 0 failed, 1 skipped\n", rh_msg());
        return 0;
    }
    setenv("RSSM_CUDA_PREFILL", "0", 1); /* read when a context is created */
    if (!rc) rc = rh_context(RSSM_DEVICE_CUDA, &one);
    unsetenv("RSSM_CUDA_PREFILL");
    if (rc) {
        printf("FAIL cuda contexts: %s\n", rh_msg());
        return 1;
    }
    static const shape shapes[3] = {{2, 4, 128, 128}, {2, 2, 64, 64}, {1, 2, 96, 80}};
    static const int tokens[5] = {1, 7, 16, 17, 45};
    static const rssm_dtype dts[3][3] = {{RSSM_DTYPE_F32, RSSM_DTYPE_F32, RSSM_DTYPE_F32},
                                         {RSSM_DTYPE_F32, RSSM_DTYPE_BF16, RSSM_DTYPE_BF16},
                                         {RSSM_DTYPE_BF16, RSSM_DTYPE_BF16, RSSM_DTYPE_BF16}};
    const int32_t slot[3] = {2, -1, 0}; /* slot 2 and 0 hold random rings; row 1 is padding */
    const int B = 3;
    int seed = 0;
    for (int gate = 0; gate < 3; gate++)
        for (int sh = 0; sh < 3; sh++)
            for (int d = 0; d < 3; d++)
                for (int ti = 0; ti < 5; ti++) {
                    const shape *p = &shapes[sh];
                    const int T = tokens[ti];
                    rssm_layer l = rssm_layer_default(gate ? RSSM_GATE_KDA : RSSM_GATE_GDN, p->H, p->HV, p->K, p->V, 8);
                    l.state_dtype = dts[d][0], l.ring_dtype = dts[d][1], l.io_dtype = dts[d][2];
                    if (gate == 2) l.has_lower_bound = 1, l.lower_bound = -5.0f;
                    rh_rng rng;
                    rh_rng_seed(&rng, 0xbeef + (uint64_t)seed++);
                    /* the initial state: random checkpoints and live rings, taken from one context */
                    rh_state s0;
                    rh_snap init = {0}, a = {0}, b = {0};
                    int r = rh_state_create(chunked, &l, 4, &s0);
                    if (!r) r = rh_state_randomize(chunked, &s0, &rng, 0);
                    if (!r) r = rh_snap_take(chunked, &s0, &init);
                    if (!r) rh_state_free(chunked, &s0);
                    rh_inputs in;
                    if (!r) r = rh_inputs_alloc(&in, &l, B, T, (seed & 1) == 0);
                    if (!r) rh_inputs_random(&in, &l, &rng);
                    const size_t no = (size_t)B * T * l.num_v_heads * l.head_v_dim;
                    double *oa = malloc(sizeof(double) * no), *ob = malloc(sizeof(double) * no);
                    if (!oa || !ob) r = rh_set(RH_FAIL, "out of memory");
                    if (!r) r = run_prefill(chunked, &l, &init, &in, slot, oa, &a);
                    if (!r) r = run_prefill(one, &l, &init, &in, slot, ob, &b);
                    int ok = !r && !memcmp(oa, ob, sizeof(double) * no);
                    for (int sl = 0; sl < 4 && ok; sl++)
                        ok = rh_snap_slot_equal(&s0, &a, &b, sl);
                    t_case(r, ok, "prefill chunks == one token: %s K=%d V=%d HV=%d state=%s ring=%s io=%s T=%d",
                           gate == 0   ? "gdn"
                           : gate == 1 ? "kda"
                                       : "kda-lb",
                           p->K, p->V, p->HV, rh_dtype_name(l.state_dtype), rh_dtype_name(l.ring_dtype),
                           rh_dtype_name(l.io_dtype), T);
                    free(oa), free(ob);
                    rh_inputs_free(&in);
                    rh_snap_free(&init), rh_snap_free(&a), rh_snap_free(&b);
                }
    /* ragged rows (cu_seqlens) against each row alone, on both loops */
    static const int32_t rslot[5] = {3, -1, 0, 5, 1}, rlen[5] = {7, 3, 1, 40, 16};
    for (int ci = 0; ci < 2; ci++)
        for (int gate = 0; gate < 3; gate++)
            for (int sh = 0; sh < 3; sh++)
                for (int d = 0; d < 3; d += 2) {
                    const shape *p = &shapes[sh];
                    rssm_layer l = rssm_layer_default(gate ? RSSM_GATE_KDA : RSSM_GATE_GDN, p->H, p->HV, p->K, p->V, 8);
                    l.state_dtype = dts[d][0], l.ring_dtype = dts[d][1], l.io_dtype = dts[d][2];
                    if (gate == 2) l.has_lower_bound = 1, l.lower_bound = -5.0f;
                    int same = 0;
                    seed++;
                    const int r = rh_prefill_ragged_check(ci ? one : chunked, &l, 5, rslot, rlen, 8, 0xfeed + seed,
                                                          seed & 1, &same);
                    t_case(r, same, "ragged rows == each row alone (%s): %s K=%d V=%d state=%s io=%s",
                           ci ? "one token" : "chunks",
                           gate == 0   ? "gdn"
                           : gate == 1 ? "kda"
                                       : "kda-lb",
                           p->K, p->V, rh_dtype_name(l.state_dtype), rh_dtype_name(l.io_dtype));
                }
    /* bad ragged rows on the device: counted (reported by the device error check), not run */
    for (int bad = 0; bad < 3; bad++) {
        rssm_layer l = rssm_layer_default(RSSM_GATE_GDN, 2, 4, 128, 128, 8);
        const int32_t bslot[2] = {0, 1}, blen[2] = {3, 4};
        rh_state s;
        rh_inputs full, rg;
        memset(&s, 0, sizeof s), memset(&full, 0, sizeof full), memset(&rg, 0, sizeof rg);
        rh_rng rng;
        rh_rng_seed(&rng, 99 + bad);
        int r = rh_state_create(chunked, &l, 2, &s);
        if (!r) r = rh_inputs_alloc(&full, &l, 2, 4, 0);
        if (!r) rh_inputs_random(&full, &l, &rng);
        if (!r) r = rh_inputs_ragged(&full, blen, &rg);
        if (!r) {
            if (bad == 0) rg.cu_seqlens[0] = 1;  /* does not start at 0 */
            if (bad == 1) rg.cu_seqlens[1] = -2; /* row 1 starts before the tokens */
            if (bad == 2) rg.cu_seqlens[1] = 6;  /* row 0 has 6 > T tokens */
            r = rh_step(chunked, &s, RSSM_OP_PREFILL, &rg, bslot, NULL, NULL, 0, NULL);
        }
        static const char *what[3] = {"cu_seqlens[0] = 1", "a row starting at -2", "a row longer than T"};
        const int reported = r == RH_FAIL && strstr(rh_msg(), "cu_seqlens") != NULL;
        t_case(RH_OK, reported, "ragged rows, %s: %s", what[bad], r == RH_FAIL ? rh_msg() : "no device error reported");
        rh_inputs_free(&full), rh_inputs_free(&rg), rh_state_free(chunked, &s);
    }
    rssm_context_free(chunked);
    rssm_context_free(one);
    return t_end();
}
