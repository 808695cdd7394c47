/*
 * device.c — device.h for every context: host memory and wall-clock timing on CPU and
 * reference contexts, the CUDA back end's functions on CUDA contexts.
 */
#include <stdlib.h>
#include <time.h>

#include "core/backend.h"
#include "core/device.h"
#include "cpu/cpu.h"

static int on_cuda(const rssm_context *ctx) { return ctx && ctx->device == RSSM_DEVICE_CUDA; }

rssm_status rssm_dev_alloc(rssm_context *ctx, size_t bytes, void **out)
{
    if (!ctx || !out) return rssm_fail(RSSM_ERROR_NULL_POINTER, "rssm_dev_alloc: ctx or out is NULL");
    if (on_cuda(ctx)) return rssm_cuda_alloc(ctx, bytes, out);
    *out = aligned_alloc(64, (bytes + 63) / 64 * 64 + 64);
    if (!*out) return rssm_fail(RSSM_ERROR_OUT_OF_MEMORY, "rssm_dev_alloc: %zu bytes of host memory", bytes);
    return RSSM_OK;
}

void rssm_dev_free(rssm_context *ctx, void *ptr)
{
    if (!ptr) return;
    if (on_cuda(ctx))
        rssm_cuda_free(ctx, ptr);
    else
        free(ptr);
}

rssm_status rssm_dev_memset(rssm_context *ctx, void *dst, int byte, size_t bytes)
{
    if (on_cuda(ctx)) return rssm_cuda_memset(ctx, dst, byte, bytes, 1);
    memset(dst, byte, bytes);
    return RSSM_OK;
}

rssm_status rssm_dev_memset_async(rssm_context *ctx, void *dst, int byte, size_t bytes)
{
    if (on_cuda(ctx)) return rssm_cuda_memset(ctx, dst, byte, bytes, 0);
    memset(dst, byte, bytes);
    return RSSM_OK;
}

rssm_status rssm_dev_upload(rssm_context *ctx, void *dst, const void *host, size_t bytes)
{
    if (on_cuda(ctx)) return rssm_cuda_memcpy(ctx, dst, host, bytes, 0, 1);
    memmove(dst, host, bytes);
    return RSSM_OK;
}

rssm_status rssm_dev_download(rssm_context *ctx, void *host, const void *src, size_t bytes)
{
    if (on_cuda(ctx)) return rssm_cuda_memcpy(ctx, host, src, bytes, 1, 1);
    memmove(host, src, bytes);
    return RSSM_OK;
}

rssm_status rssm_dev_copy(rssm_context *ctx, void *dst, const void *src, size_t bytes)
{
    if (on_cuda(ctx)) return rssm_cuda_memcpy(ctx, dst, src, bytes, 2, 1);
    memmove(dst, src, bytes);
    return RSSM_OK;
}

rssm_status rssm_dev_copy_async(rssm_context *ctx, void *dst, const void *src, size_t bytes)
{
    if (on_cuda(ctx)) return rssm_cuda_memcpy(ctx, dst, src, bytes, 2, 0);
    memmove(dst, src, bytes);
    return RSSM_OK;
}

rssm_status rssm_dev_copy2d_async(rssm_context *ctx, void *dst, size_t dpitch, const void *src, size_t spitch,
                                  size_t width, size_t rows)
{
    if (on_cuda(ctx)) return rssm_cuda_copy2d(ctx, dst, dpitch, src, spitch, width, rows);
    for (size_t r = 0; r < rows; r++)
        memmove((char *)dst + r * dpitch, (const char *)src + r * spitch, width);
    return RSSM_OK;
}

rssm_status rssm_dev_sync(rssm_context *ctx) { return on_cuda(ctx) ? rssm_cuda_sync(ctx) : RSSM_OK; }

void *rssm_dev_stream(rssm_context *ctx) { return on_cuda(ctx) ? rssm_cuda_stream(ctx) : NULL; }

rssm_status rssm_dev_order_after(rssm_context *ctx, void *stream)
{
    return on_cuda(ctx) ? rssm_cuda_stream_order(ctx, stream, 1) : RSSM_OK;
}

rssm_status rssm_dev_order_before(rssm_context *ctx, void *stream)
{
    return on_cuda(ctx) ? rssm_cuda_stream_order(ctx, stream, 0) : RSSM_OK;
}

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec * 1e-3;
}

rssm_status rssm_dev_time(rssm_context *ctx, rssm_dev_work work, void *arg, int graph, int warmup, int reps,
                          double *us_per_rep)
{
    if (!ctx || !work || !us_per_rep || reps < 1)
        return rssm_fail(RSSM_ERROR_BAD_ARGUMENT, "rssm_dev_time: bad arguments");
    if (on_cuda(ctx)) return rssm_cuda_time(ctx, work, arg, graph, warmup, reps, us_per_rep);
    for (int i = 0; i < warmup; i++)
        if (work(arg, NULL)) return rssm_fail(RSSM_ERROR_DEVICE, "rssm_dev_time: the timed work failed");
    const double t0 = now_us();
    for (int i = 0; i < reps; i++)
        if (work(arg, NULL)) return rssm_fail(RSSM_ERROR_DEVICE, "rssm_dev_time: the timed work failed");
    *us_per_rep = (now_us() - t0) / reps;
    return RSSM_OK;
}

/* ---- host bandwidth: copy and STREAM triad over the context's threads ------------------ */

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

int rssm_dev_sm_count(rssm_context *ctx) { return ctx && on_cuda(ctx) ? rssm_cuda_sm_count(ctx) : 0; }

rssm_status rssm_dev_bandwidth(rssm_context *ctx, size_t bytes, double *copy_gbps, double *triad_gbps)
{
    if (!ctx) return rssm_fail(RSSM_ERROR_NULL_POINTER, "rssm_dev_bandwidth: ctx is NULL");
    if (on_cuda(ctx)) return rssm_cuda_bandwidth(ctx, bytes, copy_gbps, triad_gbps);
    const int64_t n = (int64_t)(bytes / sizeof(float));
    bw_job j = {aligned_alloc(64, n * 4 + 64), aligned_alloc(64, n * 4 + 64), aligned_alloc(64, n * 4 + 64), 0};
    if (!j.a || !j.b || !j.c) {
        free(j.a), free(j.b), free(j.c);
        return rssm_fail(RSSM_ERROR_OUT_OF_MEMORY, "rssm_dev_bandwidth: 3 x %zu bytes of host memory", bytes);
    }
    for (int64_t i = 0; i < n; i++)
        j.a[i] = 0.0f, j.b[i] = 1.0f, j.c[i] = 2.0f; /* first touch */
    for (int triad = 0; triad <= 1; triad++) {
        j.triad = triad;
        double best = 1e30;
        for (int rep = 0; rep < 6; rep++) { /* best of 6, as STREAM reports */
            const double t0 = now_us();
            rssm_cpu_parallel_for(ctx, n, bw_task, &j);
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
