/*
 * test_layout.c — the two state layouts give the same bits. On every device (reference, CPU,
 * CUDA where present), for GDN and KDA, f32 and bf16, the fast head size (K = V = 128) and an
 * uneven one (K = 64, V = 100): one scripted sequence of ops (replay decode with forced folds,
 * verify + commit, prefill + reset, packed decode with copy-on-write, materialise) runs on a
 * V-first state and on a K-first state that holds the same values (inputs packed, every third step
 * at token strides with gaps, alike on both); every output must be the same
 * bits, and at the end every tensor too (the checkpoints compared element by element across the
 * layouts). The check matrix holds the K-first layout against the float64 reference; this test
 * says that no layout changes a result.
 */
#include <stdlib.h>
#include <string.h>

#include "common.h"

enum { R = 4, SLOTS = 6, STEPS = 14 };

/* The checkpoint bytes of `vk` (V-first) rewritten in the K-first order into `kv`. */
static void to_kv(const rssm_layer *l, const rh_snap *vk, rh_snap *kv)
{
    const int V = l->head_v_dim, K = l->head_k_dim;
    const size_t es = rssm_dtype_size(l->state_dtype), heads = vk->n[RH_CKPT] / (es * V * K);
    for (size_t h = 0; h < heads; h++)
        for (int r = 0; r < V; r++)
            for (int c = 0; c < K; c++)
                memcpy(kv->t[RH_CKPT] + (h * V * K + (size_t)c * V + r) * es,
                       vk->t[RH_CKPT] + (h * V * K + (size_t)r * K + c) * es, es);
}

/* Every tensor of a (V-first) and b (K-first) holds the same bits. */
static int same_state(const rssm_layer *l, const rh_snap *a, const rh_snap *b)
{
    rh_snap t;
    memset(&t, 0, sizeof t);
    t.n[RH_CKPT] = a->n[RH_CKPT];
    t.t[RH_CKPT] = malloc(a->n[RH_CKPT]);
    if (!t.t[RH_CKPT]) return 0;
    to_kv(l, a, &t);
    int same = !memcmp(t.t[RH_CKPT], b->t[RH_CKPT], a->n[RH_CKPT]);
    free(t.t[RH_CKPT]);
    for (int i = RH_RING_U; i < RH_NT; i++)
        same = same && a->n[i] == b->n[i] && (!a->n[i] || !memcmp(a->t[i], b->t[i], a->n[i]));
    return same;
}

/* Two states (V-first, K-first) with the same values; for replay and packed decode. */
typedef struct twin {
    rssm_layer l[2];
    rh_state s[2];
} twin;

/* One op on both states, with the inputs packed or (strided) at token strides with gaps: alike
 * on both, since strides may choose another kernel (CUDA: strided gates take the general one). */
static int twin_step(rssm_context *ctx, twin *w, rh_op op, const rh_inputs *in, const int32_t *slot,
                     const int32_t *wslot, const uint8_t *fold, int strided, double *o[2], int *same)
{
    const int64_t n = (int64_t)in->B * in->T * in->HV * in->V;
    for (int d = 0; d < 2; d++) {
        const int rc = rh_step(ctx, &w->s[d], op, in, slot, wslot, fold, strided, o[d]);
        if (rc) return rc;
    }
    *same = *same && !memcmp(o[0], o[1], sizeof(double) * (size_t)n);
    return RH_OK;
}

static int run_case(rssm_context *ctx, const rssm_layer *base, uint64_t seed, int *same)
{
    const int32_t slot[R] = {4, 1, -1, 3}, real[3] = {4, 1, 3};
    int32_t pslot[2][R] = {{4, 1, -1, 3}, {0, 2, -1, 5}};
    int cur = 0;
    twin rp, pp;
    memset(&rp, 0, sizeof rp), memset(&pp, 0, sizeof pp);
    const int L = base->ring_len, HV = base->num_v_heads, V = base->head_v_dim, K = base->head_k_dim;
    const int64_t omax = (int64_t)R * L * HV * V, nS = 3 * (int64_t)HV * V * K;
    double *o[2] = {malloc(sizeof(double) * omax), malloc(sizeof(double) * omax)};
    double *S[2] = {malloc(sizeof(double) * nS), malloc(sizeof(double) * nS)};
    rh_snap init, kv, fin[2];
    memset(&init, 0, sizeof init), memset(&kv, 0, sizeof kv), memset(fin, 0, sizeof fin);
    rh_rng rng;
    rh_rng_seed(&rng, seed);
    int rc = o[0] && o[1] && S[0] && S[1] ? RH_OK : rh_set(RH_FAIL, "out of host memory");
    for (int d = 0; d < 2 && !rc; d++) {
        rp.l[d] = pp.l[d] = *base;
        rp.l[d].state_layout = pp.l[d].state_layout = d ? RSSM_LAYOUT_KV : RSSM_LAYOUT_VK;
        rc = rh_state_create(ctx, &rp.l[d], SLOTS, &rp.s[d]);
        if (!rc) rc = rh_state_create(ctx, &pp.l[d], SLOTS, &pp.s[d]);
    }
    /* live rings with random cursors; the K-first state holds the same values */
    if (!rc) rc = rh_state_randomize(ctx, &rp.s[0], &rng, 0);
    if (!rc) rc = rh_snap_take(ctx, &rp.s[0], &init);
    if (!rc) rc = rh_snap_take(ctx, &rp.s[0], &kv);
    if (!rc) to_kv(base, &init, &kv);
    if (!rc) rc = rh_snap_put(ctx, &rp.s[1], &kv);
    if (!rc) rc = rh_snap_put(ctx, &pp.s[0], &init);
    if (!rc) rc = rh_snap_put(ctx, &pp.s[1], &kv);
    for (int i = 0; i < STEPS && !rc; i++) {
        rh_inputs in;
        uint8_t fold[R] = {0};
        const int verify = i % 4 == 3, prefill = i == STEPS / 2, T = verify ? 1 + i % 4 : prefill ? 3 : 1;
        if ((rc = rh_inputs_alloc(&in, base, R, T, i % 2))) break;
        rh_inputs_random(&in, base, &rng);
        if (verify && base->gate == RSSM_GATE_KDA) rh_inputs_bound_gates(&in, base, -60.0 / T);
        if (verify) {
            const int32_t acc[R] = {T, 1, 0, T - 1};
            fold[1] = i % 3 == 0;
            rc = twin_step(ctx, &rp, RH_OP_VERIFY, &in, slot, NULL, fold, i % 3 == 0, o, same);
            for (int d = 0; d < 2 && !rc; d++)
                rc = rh_commit(ctx, &rp.s[d], R, T, slot, fold, acc);
        } else if (prefill) {
            rc = twin_step(ctx, &rp, RH_OP_PREFILL, &in, slot, NULL, NULL, i % 3 == 0, o, same);
            for (int d = 0; d < 2 && !rc; d++)
                rc = rh_reset(ctx, &rp.s[d], R, slot);
        } else {
            fold[0] = i % 5 == 2;
            rc = twin_step(ctx, &rp, RH_OP_DECODE_REPLAY, &in, slot, NULL, fold, i % 3 == 0, o, same);
            for (int d = 0; d < 2 && !rc; d++)
                rc = rh_advance(ctx, &rp.s[d], R, slot, fold);
        }
        if (!rc) {
            const int cow = i % 3 == 1;
            rc = twin_step(ctx, &pp, RH_OP_DECODE_PACKED, &in, pslot[cur], cow ? pslot[!cur] : NULL, NULL, i % 3 == 0,
                           o, same);
            cur ^= cow;
        }
        rh_inputs_free(&in);
    }
    for (int d = 0; d < 2 && !rc; d++)
        rc = rh_materialized(ctx, &rp.s[d], 3, real, S[d]);
    if (!rc) *same = *same && !memcmp(S[0], S[1], sizeof(double) * (size_t)nS);
    for (int d = 0; d < 2 && !rc; d++)
        rc = rh_snap_take(ctx, &rp.s[d], &fin[d]);
    if (!rc) *same = *same && same_state(base, &fin[0], &fin[1]);
    for (int d = 0; d < 2 && !rc; d++) {
        rh_snap_free(&fin[d]);
        rc = rh_snap_take(ctx, &pp.s[d], &fin[d]);
    }
    if (!rc) *same = *same && same_state(base, &fin[0], &fin[1]);
    rh_snap_free(&init), rh_snap_free(&kv), rh_snap_free(&fin[0]), rh_snap_free(&fin[1]);
    for (int d = 0; d < 2; d++) {
        rh_state_free(ctx, &rp.s[d]), rh_state_free(ctx, &pp.s[d]);
        free(o[d]), free(S[d]);
    }
    return rc;
}

int main(void)
{
    const rssm_device devs[3] = {RSSM_DEVICE_REFERENCE, RSSM_DEVICE_CPU, RSSM_DEVICE_CUDA};
    const int dims[2][4] = {{2, 4, 128, 128}, {1, 2, 64, 100}}; /* H, HV, K, V */
    for (int dv = 0; dv < 3; dv++) {
        rssm_context *ctx = NULL;
        const char *name = rh_device_name(devs[dv]);
        const int crc = rh_context(devs[dv], &ctx);
        if (crc) {
            t_case(crc, 0, "%s: V-first and K-first states", name);
            continue;
        }
        for (int g = 0; g < 2; g++)
            for (int di = 0; di < 2; di++)
                for (int bf = 0; bf < 2; bf++) {
                    const int *dm = dims[di];
                    rssm_layer l = rssm_layer_default(g ? RSSM_GATE_KDA : RSSM_GATE_GDN, dm[0], dm[1], dm[2], dm[3], 8);
                    if (bf) l.state_dtype = l.ring_dtype = l.io_dtype = RSSM_DTYPE_BF16;
                    int same = 1;
                    const int rc = run_case(ctx, &l, 77 + 4 * g + 2 * di + bf, &same);
                    t_case(rc, same, "%s %s K=%d V=%d %s: V-first and K-first states give the same bits", name,
                           g ? "kda" : "gdn", dm[2], dm[3], bf ? "bf16" : "f32");
                }
        rssm_context_free(ctx);
    }
    return t_end();
}
