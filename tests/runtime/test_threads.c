/*
 * test_threads.c — one context, several host threads: calls take turns, so every thread gets
 * the outputs it gets alone, bit for bit. Each thread decodes its own state (replay decode and
 * the cursor move, two rows of one head) on a context of 1 worker thread (every call inline on
 * the calling thread, with the context's scratch) and of 2 (the context's thread pool).
 * Ends with "N passed, N failed".
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "replayssm_runtime.h"

enum { THREADS = 4, STEPS = 300, ROWS = 2, K = 64, V = 64, L = 8 };

typedef struct worker {
    rssm_context *ctx;
    int seed, ok;
    float out[STEPS][ROWS * V];
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
    rh_state hs;
    w->ok = rh_state_create(w->ctx, &l, ROWS, &hs) == RH_OK;
    if (!w->ok) return NULL;
    _Alignas(16) float q[ROWS * K], k[ROWS * K], v[ROWS * V], o[ROWS * V];
    _Alignas(16) float a[4], b[4], A_log[4] = {0.5f}, dt[4] = {0.1f}; /* 16-byte aligned, as every pointer */
    _Alignas(16) int32_t slot[4] = {0, 1};
    rssm_state st = hs.st;
    rssm_step_io io = {.batch = ROWS,
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
        for (int i = 0; i < ROWS * K; i++)
            q[i] = rnd(&s), k[i] = rnd(&s);
        for (int i = 0; i < ROWS * V; i++)
            v[i] = rnd(&s);
        for (int r = 0; r < ROWS; r++)
            a[r] = rnd(&s), b[r] = rnd(&s);
        w->ok = rssm_decode_replay(w->ctx, &l, &st, &io, NULL) == RSSM_OK &&
                rssm_advance(w->ctx, &l, &st, ROWS, slot, NULL, NULL) == RSSM_OK;
        memcpy(w->out[step], o, sizeof o);
    }
    rh_state_free(w->ctx, &hs);
    return NULL;
}

/* A tool's rssm_parallel_for whose tasks run ops on the same context, while another thread runs
 * ops on it too: the two locks (the pool's job, the context's turn) must not close a cycle. */
static void decode_task(void *arg, int64_t begin, int64_t end, int thread)
{
    (void)thread;
    worker *ws = arg;
    for (int64_t i = begin; i < end; i++)
        decode(&ws[i]);
}

static int nested_parallel_for(rssm_context *ctx, worker *ws)
{
    pthread_t other;
    pthread_create(&other, NULL, decode, &ws[2]);
    rssm_parallel_for(ctx, 2, decode_task, ws);
    pthread_join(other, NULL);
    return ws[0].ok && ws[1].ok && ws[2].ok;
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
        for (int i = 0; i < 3; i++)
            together[i] = (worker){ctx, 100 + i, 0, {{0}}};
        const int nested_ok = nested_parallel_for(ctx, together);
        int nested_same = nested_ok;
        for (int i = 0; i < 3; i++)
            nested_same = nested_same && !memcmp(alone[i].out, together[i].out, sizeof alone[i].out);
        printf("%s ops inside rssm_parallel_for tasks beside another thread's ops (%d worker threads): no "
               "deadlock, the outputs each gets alone\n",
               nested_same ? "ok  " : "FAIL", workers);
        nested_same ? passed++ : failed++;
        rssm_context_free(ctx);
    }
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
