/* dump_window.c — the outputs and every state tensor after verify windows and their commits
 * (GDN and KDA, f32 and bf16 state, V-first and K-first layouts, T = 1..8, mild and raw gates): one FNV-1a hash of their 8-byte words
 * per case on stdout and, given a path other than "-", the bytes themselves in that file, so that
 * two builds of the library can be compared bit for bit. Built against the harness of testing/
 * and run with LD_LIBRARY_PATH choosing the library. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

/* -DDW_B=.. -DDW_SLOTS=..: a smaller pool for a quicker check (the host's random states dominate) */
#ifndef DW_B
#define DW_B 72
#endif
#ifndef DW_SLOTS
#define DW_SLOTS 80
#endif
enum { B = DW_B, SLOTS = DW_SLOTS, L = 16 };

/* FNV-1a over 8-byte words (the tensors' sizes are multiples of 8), then the tail bytes */
static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *c = p;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, c + i, 8);
        h = (h ^ w) * 0x100000001b3ull;
    }
    for (; i < n; i++)
        h = (h ^ c[i]) * 0x100000001b3ull;
    return h;
}

static int one(FILE *f, int kda, rssm_dtype sdt, int kf, int T, int mild, uint64_t seed)
{
    rssm_context *ctx = NULL;
    int rc = rh_context(RSSM_DEVICE_CUDA, &ctx);
    if (rc) return rc;
    rssm_layer l = rssm_layer_default(kda ? RSSM_GATE_KDA : RSSM_GATE_GDN, kda ? 32 : 16, 32, 128, 128, L);
    l.state_dtype = sdt, l.ring_dtype = RSSM_DTYPE_BF16, l.io_dtype = RSSM_DTYPE_BF16;
    l.state_layout = kf ? RSSM_LAYOUT_KV : RSSM_LAYOUT_VK;
    rh_rng rng;
    rh_rng_seed(&rng, seed);
    int32_t perm[SLOTS], slot[B], acc[B];
    uint8_t fold[B];
    rh_permutation(&rng, perm, SLOTS);
    for (int b = 0; b < B; b++) {
        slot[b] = b % 9 == 4 ? -1 : perm[b];
        fold[b] = b % 13 == 6;
    }
    rh_state s;
    rc = rh_state_create(ctx, &l, SLOTS, &s);
    if (!rc) rc = rh_state_randomize(ctx, &s, &rng, 0);
    rh_inputs in;
    if (!rc) rc = rh_inputs_alloc(&in, &l, B, T, 0);
    if (rc) return rc;
    rh_inputs_random(&in, &l, &rng);
    if (mild) rh_inputs_bound_gates(&in, &l, -0.3);
    for (int b = 0; b < B; b++)
        acc[b] = (int32_t)(rh_uniform(&rng) * (T + 1));
    const size_t no = (size_t)T * B * l.num_v_heads * l.head_v_dim;
    double *o = calloc(no, sizeof(double));
    rc = rh_step(ctx, &s, RH_OP_VERIFY, &in, slot, NULL, fold, 0, o);
    if (!rc) rc = rh_commit(ctx, &s, B, T, slot, fold, acc);
    rh_snap snap = {0};
    if (!rc) rc = rh_snap_take(ctx, &s, &snap);
    uint64_t hash = fnv(0xcbf29ce484222325ull, o, no * sizeof(double));
    if (!rc) {
        if (f) fwrite(o, sizeof(double), no, f);
        for (int i = 0; i < RH_NT; i++)
            if (snap.t[i]) {
                if (f) fwrite(snap.t[i], 1, snap.n[i], f);
                hash = fnv(hash, snap.t[i], snap.n[i]);
            }
    }
    if (rc)
        printf("%s %s %s T=%d %s: %s\n", kda ? "kda" : "gdn", rh_dtype_name(sdt), kf ? "kv" : "vk", T,
               mild ? "mild" : "raw", rh_msg());
    else
        printf("%s %s %s T=%d %s: %016llx\n", kda ? "kda" : "gdn", rh_dtype_name(sdt), kf ? "kv" : "vk", T,
               mild ? "mild" : "raw", (unsigned long long)hash);
    rh_snap_free(&snap);
    free(o);
    rh_inputs_free(&in);
    rh_state_free(ctx, &s);
    rssm_context_free(ctx);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc != 2) return 2;
    FILE *f = strcmp(argv[1], "-") ? fopen(argv[1], "wb") : NULL;
    if (strcmp(argv[1], "-") && !f) return 2;
    int bad = 0;
    for (int kda = 0; kda <= 1; kda++)
        for (int sb = 0; sb <= 1; sb++)
            for (int kf = 0; kf <= 1; kf++)
                for (int T = 1; T <= 8; T++)
                    for (int mild = 0; mild <= 1; mild++)
                        bad |= one(f, kda, sb ? RSSM_DTYPE_BF16 : RSSM_DTYPE_F32, kf, T, mild,
                                   1000 * T + 10 * kda + 2 * sb + mild) != 0;
    if (f) fclose(f);
    return bad;
}
