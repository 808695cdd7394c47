/*
 * timing.c — timing.h on host contexts (wall clock; the bandwidth probe runs on the context's
 * threads through rssm_parallel_for), and the dispatch to timing_cuda.cu on CUDA contexts.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "replayssm_runtime.h"
#include "timing.h"

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec * 1e-3;
}

static int on_cuda(rssm_context *ctx) { return rssm_context_device(ctx) == RSSM_DEVICE_CUDA; }

rssm_status bench_time(rssm_context *ctx, bench_work work, void *arg, int graph, int warmup, int reps,
                       double *us_per_rep)
{
    if (!ctx || !work || !us_per_rep || reps < 1) {
        fprintf(stderr, "bench_time: bad arguments\n");
        return RSSM_ERROR_BAD_ARGUMENT;
    }
    if (on_cuda(ctx)) return bench_time_cuda(ctx, work, arg, graph, warmup, reps, us_per_rep);
    for (int i = 0; i < warmup; i++)
        if (work(arg, NULL)) return RSSM_ERROR_DEVICE;
    const double t0 = now_us();
    for (int i = 0; i < reps; i++)
        if (work(arg, NULL)) return RSSM_ERROR_DEVICE;
    *us_per_rep = (now_us() - t0) / reps;
    return RSSM_OK;
}

struct bench_graph {
    rssm_context *ctx;
    bench_work work;
    void *arg;
    void *exec; /* CUDA: the instantiated graph */
};

rssm_status bench_graph_capture(rssm_context *ctx, bench_work work, void *arg, bench_graph **out)
{
    if (!ctx || !work || !out) {
        fprintf(stderr, "bench_graph_capture: bad arguments\n");
        return RSSM_ERROR_BAD_ARGUMENT;
    }
    bench_graph *g = calloc(1, sizeof *g);
    if (!g) return RSSM_ERROR_OUT_OF_MEMORY;
    g->ctx = ctx, g->work = work, g->arg = arg;
    rssm_status st = on_cuda(ctx) ? bench_graph_capture_cuda(ctx, work, arg, &g->exec) : RSSM_OK;
    if (st != RSSM_OK) {
        free(g);
        return st;
    }
    *out = g;
    return RSSM_OK;
}

rssm_status bench_graph_launch(bench_graph *g)
{
    if (on_cuda(g->ctx)) return bench_graph_launch_cuda(g->ctx, g->exec);
    return g->work(g->arg, NULL) ? RSSM_ERROR_DEVICE : RSSM_OK;
}

void bench_graph_free(bench_graph *g)
{
    if (!g) return;
    if (g->exec) bench_graph_free_cuda(g->exec);
    free(g);
}

typedef struct bw_job {
    float *a, *b, *c;
    int triad;
} bw_job;

static void bw_task(void *arg, int64_t begin, int64_t end, int thread)
{
    (void)thread;
    bw_job *j = arg;
    float *restrict a = j->a;
    const float *restrict b = j->b, *restrict c = j->c;
    if (j->triad)
        for (int64_t i = begin; i < end; i++)
            a[i] = b[i] + 3.0f * c[i];
    else
        for (int64_t i = begin; i < end; i++)
            a[i] = b[i];
}

rssm_status bench_bandwidth(rssm_context *ctx, size_t bytes, double *copy_gbps, double *triad_gbps)
{
    if (on_cuda(ctx)) return bench_bandwidth_cuda(ctx, bytes, copy_gbps, triad_gbps);
    const int64_t n = (int64_t)(bytes / sizeof(float));
    bw_job j = {aligned_alloc(64, n * 4 + 64), aligned_alloc(64, n * 4 + 64), aligned_alloc(64, n * 4 + 64), 0};
    if (!j.a || !j.b || !j.c) {
        free(j.a), free(j.b), free(j.c);
        fprintf(stderr, "bench_bandwidth: 3 x %zu bytes of host memory\n", bytes);
        return RSSM_ERROR_OUT_OF_MEMORY;
    }
    for (int64_t i = 0; i < n; i++)
        j.a[i] = 0.0f, j.b[i] = 1.0f, j.c[i] = 2.0f; /* first touch */
    for (int triad = 0; triad <= 1; triad++) {
        j.triad = triad;
        double best = 1e30;
        for (int rep = 0; rep < 6; rep++) { /* best of 6, as STREAM reports */
            const double t0 = now_us();
            rssm_parallel_for(ctx, n, bw_task, &j);
            const double dt = now_us() - t0;
            if (rep > 0 && dt < best) best = dt;
        }
        const double moved = (triad ? 3.0 : 2.0) * (double)n * 4;
        if (triad && triad_gbps) *triad_gbps = moved / (best * 1e3);
        if (!triad && copy_gbps) *copy_gbps = moved / (best * 1e3);
    }
    free(j.a), free(j.b), free(j.c);
    return RSSM_OK;
}

#ifndef RSSM_BENCH_CUDA
rssm_status bench_time_cuda(rssm_context *ctx, bench_work work, void *arg, int graph, int warmup, int reps,
                            double *us_per_rep)
{
    return RSSM_ERROR_UNSUPPORTED;
}

rssm_status bench_bandwidth_cuda(rssm_context *ctx, size_t bytes, double *copy_gbps, double *triad_gbps)
{
    return RSSM_ERROR_UNSUPPORTED;
}

rssm_status bench_graph_capture_cuda(rssm_context *ctx, bench_work work, void *arg, void **exec)
{
    return RSSM_ERROR_UNSUPPORTED;
}

rssm_status bench_graph_launch_cuda(rssm_context *ctx, void *exec) { return RSSM_ERROR_UNSUPPORTED; }

void bench_graph_free_cuda(void *exec) {}
#endif
