/*
 * decode_step.c — the README's C example: one GDN layer, caller-owned memory, a replay
 * decode step per token with the cursor advanced after the (last) layer.
 * Build: part of the CMake build (./build/example_decode_step).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "replayssm.h"

#define CHECK(call)                                                                                                    \
    do {                                                                                                               \
        rssm_status st_ = (call);                                                                                      \
        if (st_ != RSSM_OK) {                                                                                          \
            fprintf(stderr, "%s: %s: %s\n", #call, rssm_status_name(st_), rssm_last_error());                          \
            return 1;                                                                                                  \
        }                                                                                                              \
    } while (0)

static void *zalloc(size_t bytes) { return calloc(1, (bytes + 63) / 64 * 64); } /* calloc is 16-byte aligned */

int main(void)
{
    /* Qwen3-Next-like head layout at a small scale: H=2 key heads, HV=4 value heads, K=V=64, L=16 */
    rssm_layer layer = rssm_layer_default(RSSM_GATE_GDN, 2, 4, 64, 64, 16);
    layer.ring_dtype = RSSM_DTYPE_BF16;
    const int B = 2, slots = 8, HV = 4, H = 2, K = 64, V = 64;

    rssm_context *ctx;
    CHECK(rssm_context_create(RSSM_DEVICE_CPU, NULL, &ctx));

    /* the engine owns the state memory; rssm_state_size says how much */
    rssm_state_bytes sz;
    CHECK(rssm_state_size(&layer, slots, &sz));
    rssm_state st = {.num_slots = slots,
                     .checkpoint = zalloc(sz.checkpoint),
                     .ring_u = zalloc(sz.ring_u),
                     .ring_k = zalloc(sz.ring_k),
                     .ring_g = zalloc(sz.ring_g),
                     .ring_base = zalloc(sz.ring_base),
                     .cursor = zalloc(sz.cursor),
                     .bytes = sz}; /* checked against the layer by every call */

    /* one token per row: q, k [B, H, K], v [B, HV, V], raw gates a, b [B, HV] */
    float *q = zalloc(sizeof(float) * B * H * K), *k = zalloc(sizeof(float) * B * H * K);
    float *v = zalloc(sizeof(float) * B * HV * V), *o = zalloc(sizeof(float) * B * HV * V);
    float *a = zalloc(sizeof(float) * B * HV), *b = zalloc(sizeof(float) * B * HV);
    float *A_log = zalloc(sizeof(float) * HV), *dt_bias = zalloc(sizeof(float) * HV);
    int32_t *slot = zalloc(sizeof(int32_t) * 4);
    slot[0] = 3, slot[1] = -1; /* row 1 is padding: zero output, nothing touched */

    rssm_step_io io = {.batch = B,
                       .tokens = 1,
                       .q = q,
                       .k = k,
                       .v = v,
                       .a = a,
                       .b = b,
                       .A_log = A_log,
                       .dt_bias = dt_bias,
                       .o = o,
                       .slot = slot};
    for (int step = 0; step < 40; step++) {
        for (int i = 0; i < B * H * K; i++)
            q[i] = sinf(0.1f * i + step), k[i] = cosf(0.07f * i - step);
        for (int i = 0; i < B * HV * V; i++)
            v[i] = sinf(0.03f * i * step);
        CHECK(rssm_decode_replay(ctx, &layer, &st, &io, NULL));     /* per layer */
        CHECK(rssm_advance(ctx, &layer, &st, B, slot, NULL, NULL)); /* once, after the last layer */
    }
    double norm = 0;
    for (int i = 0; i < HV * V; i++)
        norm += (double)o[i] * o[i];
    printf("replay decode: 40 steps, cursor of slot 3 = %d, |o| = %.6f\n", st.cursor[3], sqrt(norm));

    rssm_context_free(ctx);
    free(st.checkpoint), free(st.ring_u), free(st.ring_k), free(st.ring_g), free(st.ring_base), free(st.cursor);
    free(q), free(k), free(v), free(o), free(a), free(b), free(A_log), free(dt_bias), free(slot);
    return 0;
}
