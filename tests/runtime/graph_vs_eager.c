/*
 * graph_vs_eager.c — a whole decode step over N layers (rssm_plan_begin, rssm_decode_replay
 * per layer, rssm_plan_end) captured once in a CUDA graph and replayed R times must leave the
 * same bits as R eager steps: every slot's checkpoint, ring, ring bases and cursor, the
 * planner's sequence lengths, and the last step's outputs. Forced folds (track interval 5)
 * and ring folds happen during the replays; padding rows (-1) sit between real rows. With
 * small-batch steps on (rssm_plan_set_small_batch) and heads of K = V = 128, the step begins
 * with the planner's drain (CUDA) and the layers run packed decode: the rows hold ring entries
 * from two plain steps before, which the first step folds.
 *
 * A graph captured on a small step (one live row, the drain and packed decode's kernels) and
 * launched after rssm_plan_set gave it three rows, over the small-batch limit, still drains and
 * folds every row: its outputs are replay's (an eager twin's, to float rounding), every cursor 0,
 * no device error, and the next eager step agrees too.
 *
 * The capture uses bench_time(graph = 1) and bench_graph_capture from bench/timing.h: on CUDA
 * the step is captured into a graph and replayed; on host devices (reference) the same function
 * runs directly, which checks the test itself. The number of steps the graph path ran is read
 * back from the planner's device sequence lengths (so the test does not depend on how many
 * warm-up runs bench_time does), and the eager path runs that many.
 * Usage: test_graph_vs_eager [reps]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "replayssm_runtime.h"
#include "timing.h"

#define NLAYERS 4
#define B 4  /* rows of a step */
#define H 2  /* key heads */
#define HV 4 /* value heads */

typedef struct work_arg {
    rssm_context *ctx;
    rssm_pool *pool;
    rssm_plan *plan;
    rssm_layer ly[NLAYERS];
    void *q, *k, *v, *g, *beta, *o;
} work_arg;

/* One decode step of every layer; enqueues only (no allocation, sync or host read on CUDA). */
static int step(void *p, void *stream)
{
    work_arg *a = p;
    if (rssm_plan_begin(a->plan, RSSM_PLAN_DECODE, 1, stream) != RSSM_OK) return 1;
    for (int l = 0; l < NLAYERS; l++) {
        rssm_step_io io;
        memset(&io, 0, sizeof io);
        rssm_plan_io(a->plan, &io);
        io.q = a->q, io.k = a->k, io.v = a->v, io.g = a->g, io.beta = a->beta, io.o = a->o;
        rssm_state s;
        rssm_pool_state(a->pool, l, &s);
        if (rssm_decode_replay(a->ctx, &a->ly[l], &s, &io, stream) != RSSM_OK) return 1;
    }
    return rssm_plan_end(a->plan, stream) != RSSM_OK;
}

static void *upload_random(rssm_context *ctx, size_t n, float lo, float hi, unsigned seed)
{
    float *h = malloc(n * sizeof(float));
    void *d = NULL;
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        h[i] = lo + (hi - lo) * (float)((seed >> 8) * (1.0 / 16777216.0));
    }
    if (rssm_mem_alloc(ctx, n * sizeof(float), &d) == RSSM_OK)
        rssm_mem_copy(ctx, d, h, n * sizeof(float), RSSM_COPY_HOST_TO_DEVICE);
    free(h);
    return d;
}

static int same_slots(rssm_pool *p, const int32_t *a, const int32_t *b, int n)
{
    size_t cap = 0;
    rssm_pool_export_size(p, RSSM_EXPORT_RING, &cap);
    unsigned char *x = malloc(cap), *y = malloc(cap);
    int same = 1;
    for (int i = 0; i < n && same; i++) {
        size_t nx = 0, ny = 0;
        same = rssm_pool_export(p, a[i], RSSM_EXPORT_RING, x, cap, &nx) == RSSM_OK &&
               rssm_pool_export(p, b[i], RSSM_EXPORT_RING, y, cap, &ny) == RSSM_OK && nx == ny && !memcmp(x, y, nx);
    }
    free(x), free(y);
    return same;
}

/* Two planners over one pool of NLAYERS layers (heads K x V, ring L): e on slots se, g on sg,
 * the same random inputs, outputs of their own. 0 when a step of the set-up failed. */
static int twins(rssm_context *ctx, rssm_gate gate, int K, int V, int L, int track, work_arg *e, work_arg *g,
                 int32_t *se, int32_t *sg)
{
    memset(e, 0, sizeof *e);
    const int gk = gate == RSSM_GATE_KDA ? K : 1;
    for (int l = 0; l < NLAYERS; l++)
        e->ly[l] = rssm_layer_default(gate, H, HV, K, V, L);
    e->ctx = ctx;
    int ok = rssm_pool_create(ctx, e->ly, NLAYERS, 8, &e->pool) == RSSM_OK;
    for (int i = 0; i < 3 && ok; i++)
        ok = rssm_pool_acquire(e->pool, &se[i]) == RSSM_OK && rssm_pool_acquire(e->pool, &sg[i]) == RSSM_OK;
    *g = *e;
    ok = ok && rssm_plan_create(e->pool, B, track, &e->plan) == RSSM_OK &&
         rssm_plan_create(e->pool, B, track, &g->plan) == RSSM_OK;
    if (!ok) return 0;
    e->q = g->q = upload_random(ctx, B * H * K, -1, 1, 1);
    e->k = g->k = upload_random(ctx, B * H * K, -1, 1, 2);
    e->v = g->v = upload_random(ctx, B * HV * V, -1, 1, 3);
    e->g = g->g = upload_random(ctx, B * HV * gk, gate == RSSM_GATE_KDA ? -8.0f : -1.0f, -0.01f, 4);
    e->beta = g->beta = upload_random(ctx, B * HV, 0.1f, 0.9f, 5);
    e->o = upload_random(ctx, B * HV * V, 0, 0, 6);
    g->o = upload_random(ctx, B * HV * V, 0, 0, 7);
    return e->q && e->k && e->v && e->g && e->beta && e->o && g->o;
}

static void twins_free(work_arg *e, work_arg *g)
{
    rssm_context *ctx = e->ctx;
    rssm_mem_free(ctx, e->q), rssm_mem_free(ctx, e->k), rssm_mem_free(ctx, e->v), rssm_mem_free(ctx, e->g);
    rssm_mem_free(ctx, e->beta), rssm_mem_free(ctx, e->o), rssm_mem_free(ctx, g->o);
    rssm_plan_free(e->plan), rssm_plan_free(g->plan);
    rssm_pool_free(e->pool);
}

static void run(rssm_device dev, const char *dn, rssm_gate gate, int small, int reps, int *passed, int *failed)
{
    const char *gn =
        gate == RSSM_GATE_KDA ? (small ? "kda, small batch" : "kda") : (small ? "gdn, small batch" : "gdn");
    rssm_context *ctx = NULL;
    if (rssm_context_create(dev, NULL, &ctx) != RSSM_OK) {
        printf("skip %s/%s: %s\n", dn, gn, rssm_last_error());
        return;
    }
    work_arg e, g;
    int32_t se[3], sg[3];
    const int K = small ? 128 : 32, V = small ? 128 : 16;
    if (!twins(ctx, gate, K, V, 4, 5, &e, &g, se, sg)) {
        printf("FAIL %s/%s setup: %s\n", dn, gn, rssm_last_error());
        (*failed)++;
        twins_free(&e, &g), rssm_context_free(ctx);
        return;
    }
    int ok = 1;
    const int32_t re[B] = {se[0], -1, se[1], se[2]}, rg[B] = {sg[0], -1, sg[1], sg[2]}, seq[B] = {0, 0, 3, 9};
    if (small) { /* two plain steps on both sets of rows, then small steps */
        for (int i = 0; i < 2; i++) {
            rssm_plan_set(e.plan, B, re, seq), rssm_plan_set(g.plan, B, rg, seq);
            if (step(&e, rssm_context_stream(ctx)) || step(&g, rssm_context_stream(ctx))) ok = 0;
        }
        ok = ok && rssm_plan_set_small_batch(e.plan, B) == RSSM_OK && rssm_plan_set_small_batch(g.plan, B) == RSSM_OK;
    }
    rssm_plan_set(e.plan, B, re, seq);
    rssm_plan_set(g.plan, B, rg, seq);
    double us = 0;
    rssm_status st = bench_time(ctx, step, &g, 1, 0, reps, &us);
    int32_t gseq[B] = {0}, eseq[B] = {0};
    rssm_context_synchronize(ctx);
    rssm_mem_copy(ctx, gseq, rssm_plan_seq_len_buffer(g.plan), sizeof gseq, RSSM_COPY_DEVICE_TO_HOST);
    const int steps = gseq[0];
    for (int i = 0; i < steps && st == RSSM_OK; i++)
        if (step(&e, rssm_context_stream(ctx))) st = RSSM_ERROR_DEVICE;
    rssm_context_synchronize(ctx);
    rssm_mem_copy(ctx, eseq, rssm_plan_seq_len_buffer(e.plan), sizeof eseq, RSSM_COPY_DEVICE_TO_HOST);
    float *oe = malloc(sizeof(float) * B * HV * V), *og = malloc(sizeof(float) * B * HV * V);
    rssm_mem_copy(ctx, oe, e.o, sizeof(float) * B * HV * V, RSSM_COPY_DEVICE_TO_HOST);
    rssm_mem_copy(ctx, og, g.o, sizeof(float) * B * HV * V, RSSM_COPY_DEVICE_TO_HOST);
    ok = ok && st == RSSM_OK && steps >= reps && !memcmp(gseq, eseq, sizeof gseq) && eseq[1] == 0 &&
         !memcmp(oe, og, sizeof(float) * B * HV * V) && same_slots(e.pool, se, sg, 3) &&
         rssm_context_check_device_errors(ctx) == RSSM_OK && rssm_pool_validate(e.pool) == RSSM_OK;
    printf("%s %s/%s: %d graph replays of a %d-layer decode step == %d eager steps bit for bit (%.1f us/step)%s%s\n",
           ok ? "ok  " : "FAIL", dn, gn, steps, NLAYERS, steps, us, st ? " — " : "", st ? rssm_last_error() : "");
    ok ? (*passed)++ : (*failed)++;
    free(oe), free(og);
    twins_free(&e, &g);
    rssm_context_free(ctx);
}

static float max_rel_diff(const float *a, const float *b, int n)
{
    float scale = 1e-30f, d = 0;
    for (int i = 0; i < n; i++) {
        scale = fmaxf(scale, fabsf(b[i]));
        d = fmaxf(d, fabsf(a[i] - b[i]));
    }
    return d / scale;
}

/* the decode step on rows `rows`, eager (graph NULL) or by launching `graph`; o to host */
static int step_rows(work_arg *a, const int32_t *rows, const int32_t *seq, bench_graph *graph, float *o, int n)
{
    if (rssm_plan_set(a->plan, B, rows, seq) != RSSM_OK) return 1;
    if (graph ? bench_graph_launch(graph) != RSSM_OK : step(a, rssm_context_stream(a->ctx))) return 1;
    return rssm_context_synchronize(a->ctx) != RSSM_OK ||
           rssm_mem_copy(a->ctx, o, a->o, sizeof(float) * n, RSSM_COPY_DEVICE_TO_HOST) != RSSM_OK;
}

/* A graph captured on a small step, launched on a step of more rows than the limit. */
static void run_grown(rssm_device dev, const char *dn, rssm_gate gate, int *passed, int *failed)
{
    const char *gn = gate == RSSM_GATE_KDA ? "kda" : "gdn";
    rssm_context *ctx = NULL;
    if (rssm_context_create(dev, NULL, &ctx) != RSSM_OK) {
        printf("FAIL %s/%s: context: %s\n", dn, gn, rssm_last_error());
        (*failed)++;
        return;
    }
    work_arg e, g;
    int32_t se[3] = {-1, -1, -1}, sg[3] = {-1, -1, -1};
    const int n = B * HV * 128; /* outputs */
    float *oe = malloc(sizeof(float) * n), *og = malloc(sizeof(float) * n);
    int calls = twins(ctx, gate, 128, 128, 8, 0, &e, &g, se, sg) && oe && og; /* every call succeeded */
    const int32_t re[B] = {se[0], -1, se[1], se[2]}, rg[B] = {sg[0], -1, sg[1], sg[2]}, one[B] = {sg[0], -1, -1, -1};
    const int32_t seq[B] = {0};
    bench_graph *graph = NULL;
    /* three plain steps: every row holds 3 ring entries (L = 8) */
    for (int i = 0; i < 3 && calls; i++)
        calls = !step_rows(&e, re, seq, NULL, oe, n) && !step_rows(&g, rg, seq, NULL, og, n);
    calls = calls && rssm_plan_set_small_batch(e.plan, 1) == RSSM_OK && rssm_plan_set_small_batch(g.plan, 1) == RSSM_OK;
    calls = calls && rssm_plan_set(g.plan, B, one, seq) == RSSM_OK &&
            bench_graph_capture(ctx, step, &g, &graph) == RSSM_OK; /* captured, not run */
    /* 3 live rows over the limit of 1: the twin replays them, the graph drains and folds them */
    calls = calls && !step_rows(&e, re, seq, NULL, oe, n) && !step_rows(&g, rg, seq, graph, og, n);
    const float d1 = calls ? max_rel_diff(og, oe, n) : 1;
    int32_t cursors[3] = {-1, -1, -1};
    for (int i = 0; i < 3 && calls; i++)
        calls = rssm_pool_cursor(g.pool, sg[i], &cursors[i]) == RSSM_OK;
    const int clean = calls && rssm_context_check_device_errors(ctx) == RSSM_OK;
    /* then one eager step each: the folded checkpoints hold the replayed states */
    calls = calls && !step_rows(&e, re, seq, NULL, oe, n) && !step_rows(&g, rg, seq, NULL, og, n);
    const float d2 = calls ? max_rel_diff(og, oe, n) : 1;
    const int ok = calls && clean && d1 < 1e-5f && d2 < 1e-5f && !cursors[0] && !cursors[1] && !cursors[2] &&
                   rssm_context_check_device_errors(ctx) == RSSM_OK && rssm_pool_validate(e.pool) == RSSM_OK;
    printf("%s %s/%s, small-batch graph on 3 rows over the limit of 1: cursors %d %d %d (all 0: drained), outputs "
           "of that step and the next against replay's: max rel diff %.2e, %.2e (< 1e-5)%s%s%s\n",
           ok ? "ok  " : "FAIL", dn, gn, cursors[0], cursors[1], cursors[2], d1, d2, clean ? "" : ", device errors",
           calls ? "" : " — a call failed: ", calls ? "" : rssm_last_error());
    ok ? (*passed)++ : (*failed)++;
    bench_graph_free(graph);
    free(oe), free(og);
    twins_free(&e, &g);
    rssm_context_free(ctx);
}

int main(int argc, char **argv)
{
    const int reps = argc > 1 ? atoi(argv[1]) : 23;
    int passed = 0, failed = 0;
    for (int i = 0; i < 4; i++)
        run(RSSM_DEVICE_REFERENCE, "reference (host path)", i & 1 ? RSSM_GATE_KDA : RSSM_GATE_GDN, i >> 1, reps,
            &passed, &failed);
    if (rssm_cuda_available()) {
        for (int i = 0; i < 4; i++)
            run(RSSM_DEVICE_CUDA, "cuda graph", i & 1 ? RSSM_GATE_KDA : RSSM_GATE_GDN, i >> 1, reps, &passed, &failed);
        for (int i = 0; i < 2; i++)
            run_grown(RSSM_DEVICE_CUDA, "cuda graph", i ? RSSM_GATE_KDA : RSSM_GATE_GDN, &passed, &failed);
    } else
        printf("skip cuda: no CUDA device or back end in this build\n");
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
