/* dump_replay.c — one FNV-1a hash per case of the outputs of 20 replay steps (each followed by its
 * cursor move, some rows told to fold) and of every state tensor after them: GDN and KDA, f32 and
 * bf16 state, B = 8 (the per-head kernel) and B = 64 (the replay pipeline), so that two builds of
 * the library can be compared bit for bit. Built against the harness of testing/ and run with
 * LD_LIBRARY_PATH choosing the library. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

enum { SLOTS = 80, L = 16, STEPS = 20 };

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *c = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ c[i]) * 0x100000001b3ull;
    return h;
}

static int one(int kda, rssm_dtype sdt, int B, uint64_t seed)
{
    rssm_context *ctx = NULL;
    int rc = rh_context(RSSM_DEVICE_CUDA, &ctx);
    if (rc) return rc;
    rssm_layer l = rssm_layer_default(kda ? RSSM_GATE_KDA : RSSM_GATE_GDN, kda ? 32 : 16, 32, 128, 128, L);
    l.state_dtype = sdt, l.ring_dtype = RSSM_DTYPE_BF16, l.io_dtype = RSSM_DTYPE_BF16;
    rh_rng rng;
    rh_rng_seed(&rng, seed);
    int32_t perm[SLOTS], slot[64];
    uint8_t fold[64];
    rh_permutation(&rng, perm, SLOTS);
    for (int b = 0; b < B; b++)
        slot[b] = b % 9 == 4 ? -1 : perm[b];
    rh_state s;
    rc = rh_state_create(ctx, &l, SLOTS, &s);
    if (!rc) rc = rh_state_randomize(ctx, &s, &rng, 0);
    rh_inputs in;
    if (!rc) rc = rh_inputs_alloc(&in, &l, B, 1, 0);
    if (rc) return rc;
    const size_t no = (size_t)B * l.num_v_heads * l.head_v_dim;
    double *o = calloc(no, sizeof(double));
    uint64_t hash = 0xcbf29ce484222325ull;
    for (int i = 0; i < STEPS && !rc; i++) {
        rh_inputs_random(&in, &l, &rng);
        for (int b = 0; b < B; b++)
            fold[b] = (b + i) % 13 == 6;
        rc = rh_step(ctx, &s, RH_OP_DECODE_REPLAY, &in, slot, NULL, fold, 0, o);
        if (!rc) rc = rh_advance(ctx, &s, B, slot, fold);
        if (!rc) hash = fnv(hash, o, no * sizeof(double));
    }
    rh_snap snap = {0};
    if (!rc) rc = rh_snap_take(ctx, &s, &snap);
    for (int i = 0; !rc && i < RH_NT; i++)
        if (snap.t[i]) hash = fnv(hash, snap.t[i], snap.n[i]);
    if (rc)
        printf("%s %s B=%d: %s\n", kda ? "kda" : "gdn", rh_dtype_name(sdt), B, rh_msg());
    else
        printf("%s %s B=%d: %016llx\n", kda ? "kda" : "gdn", rh_dtype_name(sdt), B, (unsigned long long)hash);
    rh_snap_free(&snap);
    free(o);
    rh_inputs_free(&in);
    rh_state_free(ctx, &s);
    rssm_context_free(ctx);
    return rc;
}

int main(void)
{
    int bad = 0;
    for (int kda = 0; kda <= 1; kda++)
        for (int sb = 0; sb <= 1; sb++)
            for (int bi = 0; bi < 2; bi++)
                bad |= one(kda, sb ? RSSM_DTYPE_BF16 : RSSM_DTYPE_F32, bi ? 64 : 8, 100 * kda + 10 * sb + bi) != 0;
    return bad;
}
