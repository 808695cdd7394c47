/*
 * test_threads.c — one context, several host threads: calls take turns, so every thread gets
 * the outputs it gets alone, bit for bit. Each thread decodes its own state (replay decode and
 * the cursor move, one row of one head: the CPU back end then runs each call inline on the
 * calling thread with the context's scratch) on a context of 1 and of 2 worker threads.
 * Ends with "N passed, N failed".
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "replayssm_runtime.h"

enum { THREADS = 4, STEPS = 300, K = 64, V = 64, L = 8 };

typedef struct worker {
    rssm_context *ctx;
    int seed, ok;
    float out[STEPS][V];
} worker;

static float rnd(unsigned *s)
{
    *s = *s * 1664525u + 1013904223u;
    return (float)((*s >> 8) & 0xffff) / 32768.0f - 1.0f;
}

static void *decode(void *arg)
{
    worker *w = arg;
    rssm_layer l = rssm_layer_default(RSSM_GATE_GDN, 1, 1, K, V, L);
    rssm_state_bytes sz;
    rssm_state_size(&l, 1, &sz);
    void *t[6] = {NULL};
    const size_t n[6] = {sz.checkpoint, sz.ring_u, sz.ring_k, sz.ring_g, sz.ring_base, sz.cursor};
    w->ok = 1;
    for (int i = 0; i < 6; i++)
        w->ok =
            w->ok && rssm_mem_alloc(w->ctx, n[i], &t[i]) == RSSM_OK && rssm_mem_set(w->ctx, t[i], 0, n[i]) == RSSM_OK;
    float q[K], k[K], v[V], a[4], b[4], A_log[4] = {0.5f}, dt[4] = {0.1f}, o[V];
    int32_t slot[4] = {0};
    rssm_state st = {1, t[0], t[1], t[2], t[3], t[4], t[5]};
    rssm_step_io io = {.batch = 1,
                       .tokens = 1,
                       .q = q,
                       .k = k,
                       .v = v,
                       .a = a,
                       .b = b,
                       .A_log = A_log,
                       .dt_bias = dt,
                       .o = o,
                       .slot = slot};
    unsigned s = (unsigned)w->seed;
    for (int step = 0; step < STEPS && w->ok; step++) {
        for (int i = 0; i < K; i++)
            q[i] = rnd(&s), k[i] = rnd(&s);
        for (int i = 0; i < V; i++)
            v[i] = rnd(&s);
        a[0] = rnd(&s), b[0] = rnd(&s);
        w->ok = rssm_decode_replay(w->ctx, &l, &st, &io, NULL) == RSSM_OK &&
                rssm_advance(w->ctx, &l, &st, 1, slot, NULL, NULL) == RSSM_OK;
        memcpy(w->out[step], o, sizeof o);
    }
    for (int i = 0; i < 6; i++)
        rssm_mem_free(w->ctx, t[i]);
    return NULL;
}

int main(void)
{
    int passed = 0, failed = 0;
    static worker alone[THREADS], together[THREADS];
    for (int workers = 1; workers <= 2; workers++) {
        rssm_context_params p = rssm_context_params_default();
        p.threads = workers;
        rssm_context *ctx = NULL;
        if (rssm_context_create(RSSM_DEVICE_CPU, &p, &ctx) != RSSM_OK) {
            printf("FAIL cpu context: %s\n", rssm_last_error());
            failed++;
            continue;
        }
        for (int i = 0; i < THREADS; i++) {
            alone[i] = (worker){ctx, 100 + i, 0, {{0}}};
            decode(&alone[i]);
            together[i] = (worker){ctx, 100 + i, 0, {{0}}};
        }
        int same = 1;
        for (int round = 0; round < 4; round++) {
            pthread_t th[THREADS];
            for (int i = 0; i < THREADS; i++)
                pthread_create(&th[i], NULL, decode, &together[i]);
            for (int i = 0; i < THREADS; i++)
                pthread_join(th[i], NULL);
            for (int i = 0; i < THREADS; i++)
                same = same && alone[i].ok && together[i].ok &&
                       !memcmp(alone[i].out, together[i].out, sizeof alone[i].out);
        }
        printf("%s %d host threads on one context of %d worker thread(s), 4 rounds of %d steps: the outputs "
               "each gets alone\n",
               same ? "ok  " : "FAIL", THREADS, workers, STEPS);
        same ? passed++ : failed++;
        rssm_context_free(ctx);
    }
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
