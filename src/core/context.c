/*
 * context.c — contexts (a device, its back-end table and the back end's own data), their
 * creation parameters, and the public memory calls, each one call through the table.
 */
#include <stdlib.h>

#include "core/device.h"

rssm_context_params rssm_context_params_default(void)
{
    rssm_context_params p;
    memset(&p, 0, sizeof p);
    p.cpu_simd = 1;
    p.cuda_fast = 1;
    p.cuda_prefetch = -1;
    p.cuda_ring_read = -1;
    p.cuda_pipeline = -1;
    p.cuda_pipeline_balance = -1;
    p.cuda_pipeline_producers = -1;
    p.cuda_prefill = -1;
    p.cuda_pdl = -1;
    p.cuda_stream = -1;
    return p;
}

static rssm_status check_switch(const char *name, int32_t v, int32_t lo, int32_t hi)
{
    if (v < lo || v > hi)
        return rssm_fail(RSSM_ERROR_BAD_ARGUMENT, "rssm_context_create: params.%s = %d is outside [%d, %d]", name, v,
                         lo, hi);
    return RSSM_OK;
}

static rssm_status check_params(const rssm_context_params *p)
{
    rssm_status st;
    if ((st = check_switch("device_ordinal", p->device_ordinal, 0, 1023)) != RSSM_OK) return st;
    if ((st = check_switch("threads", p->threads, 0, 1024)) != RSSM_OK) return st;
    if ((st = check_switch("cpu_simd", p->cpu_simd, 0, 1)) != RSSM_OK) return st;
    if ((st = check_switch("cuda_fast", p->cuda_fast, 0, 1)) != RSSM_OK) return st;
    if (p->cuda_split != 0 && p->cuda_split != 1 && p->cuda_split != 2 && p->cuda_split != 4)
        return rssm_fail(RSSM_ERROR_BAD_ARGUMENT,
                         "rssm_context_create: params.cuda_split = %d (1, 2 or 4 CTAs per head; 0 = by batch size)",
                         p->cuda_split);
    if ((st = check_switch("cuda_prefetch", p->cuda_prefetch, -1, 4)) != RSSM_OK) return st;
    if ((st = check_switch("cuda_ring_read", p->cuda_ring_read, -1, 1)) != RSSM_OK) return st;
    if ((st = check_switch("cuda_pipeline", p->cuda_pipeline, -1, 1)) != RSSM_OK) return st;
    if ((st = check_switch("cuda_pipeline_balance", p->cuda_pipeline_balance, -1, 1)) != RSSM_OK) return st;
    if (p->cuda_pipeline_producers != -1 && (p->cuda_pipeline_producers < 1 || p->cuda_pipeline_producers > 3))
        return rssm_fail(RSSM_ERROR_BAD_ARGUMENT,
                         "rssm_context_create: params.cuda_pipeline_producers = %d (1 to 3 warps; -1 = by rule)",
                         p->cuda_pipeline_producers);
    if ((st = check_switch("cuda_prefill", p->cuda_prefill, -1, 3)) != RSSM_OK) return st;
    if ((st = check_switch("cuda_pdl", p->cuda_pdl, -1, 3)) != RSSM_OK) return st;
    if (p->cuda_stream != -1 && p->cuda_stream != 0 && p->cuda_stream != 4 && p->cuda_stream != 8 &&
        p->cuda_stream != 16 && p->cuda_stream != 32)
        return rssm_fail(
            RSSM_ERROR_BAD_ARGUMENT,
            "rssm_context_create: params.cuda_stream = %d (-1 = by rule, 0 = never, 4, 8, 16 or 32 rows per warp)",
            p->cuda_stream);
    return RSSM_OK;
}

static const rssm_backend *backend_of(rssm_device device)
{
    switch (device) {
    case RSSM_DEVICE_CPU:
        return &rssm_cpu_backend;
    case RSSM_DEVICE_CUDA:
        return &rssm_cuda_backend;
    case RSSM_DEVICE_REFERENCE:
        return &rssm_reference_backend;
    }
    return NULL;
}

rssm_status rssm_context_create(rssm_device device, const rssm_context_params *params, rssm_context **out)
{
    if (!out) return rssm_fail(RSSM_ERROR_NULL_POINTER, "rssm_context_create: out is NULL");
    *out = NULL;
    const rssm_backend *be = backend_of(device);
    if (!be) return rssm_fail(RSSM_ERROR_BAD_ARGUMENT, "rssm_context_create: unknown device %d", (int)device);
    const rssm_context_params p = params ? *params : rssm_context_params_default();
    rssm_status st = check_params(&p);
    if (st != RSSM_OK) return st;
    rssm_context *ctx = calloc(1, sizeof *ctx);
    if (!ctx) return rssm_fail(RSSM_ERROR_OUT_OF_MEMORY, "rssm_context_create: out of host memory");
    ctx->device = device;
    ctx->backend = be;
    ctx->params = p;
    pthread_mutex_init(&ctx->lock, NULL);
    if ((st = be->init(ctx, &p)) != RSSM_OK) {
        pthread_mutex_destroy(&ctx->lock);
        free(ctx);
        return st;
    }
    *out = ctx;
    return RSSM_OK;
}

void rssm_context_free(rssm_context *ctx)
{
    if (!ctx) return;
    if (ctx->backend->destroy) ctx->backend->destroy(ctx);
    pthread_mutex_destroy(&ctx->lock);
    free(ctx->slot_bits);
    free(ctx);
}

rssm_device rssm_context_device(const rssm_context *ctx) { return ctx ? ctx->device : RSSM_DEVICE_CPU; }

rssm_status rssm_context_get_info(const rssm_context *ctx, rssm_context_info *out)
{
    if (!ctx || !out) return rssm_fail(RSSM_ERROR_NULL_POINTER, "rssm_context_get_info: ctx or out is NULL");
    memset(out, 0, sizeof *out);
    out->device = ctx->device;
    ctx->backend->info(ctx, out);
    return RSSM_OK;
}

int rssm_cuda_available(void) { return rssm_cuda_backend.available ? rssm_cuda_backend.available() : 0; }

rssm_status rssm_context_check_device_errors(rssm_context *ctx)
{
    if (!ctx) return rssm_fail(RSSM_ERROR_NULL_POINTER, "rssm_context_check_device_errors: ctx is NULL");
    if (!ctx->backend->check_errors) return RSSM_OK;
    pthread_mutex_lock(&ctx->lock); /* read and clear the count as one */
    const rssm_status st = ctx->backend->check_errors(ctx);
    pthread_mutex_unlock(&ctx->lock);
    return st;
}

/* ---- memory ------------------------------------------------------------------------------- */

rssm_status rssm_mem_alloc(rssm_context *ctx, size_t bytes, void **out)
{
    if (!ctx || !out) return rssm_fail(RSSM_ERROR_NULL_POINTER, "rssm_mem_alloc: ctx or out is NULL");
    *out = NULL;
    return rssm_dev_alloc(ctx, bytes, out);
}

void rssm_mem_free(rssm_context *ctx, void *ptr)
{
    if (ctx) rssm_dev_free(ctx, ptr);
}

rssm_status rssm_mem_copy(rssm_context *ctx, void *dst, const void *src, size_t bytes, rssm_copy_kind kind)
{
    if (!ctx) return rssm_fail(RSSM_ERROR_NULL_POINTER, "rssm_mem_copy: ctx is NULL");
    if (kind != RSSM_COPY_HOST_TO_DEVICE && kind != RSSM_COPY_DEVICE_TO_HOST && kind != RSSM_COPY_DEVICE_TO_DEVICE)
        return rssm_fail(RSSM_ERROR_BAD_ARGUMENT, "rssm_mem_copy: unknown copy kind %d", (int)kind);
    if (bytes == 0) return RSSM_OK;
    if (!dst || !src) return rssm_fail(RSSM_ERROR_NULL_POINTER, "rssm_mem_copy: dst or src is NULL");
    return ctx->backend->memcpy(ctx, dst, src, bytes, kind, 1);
}

rssm_status rssm_mem_set(rssm_context *ctx, void *dst, int byte, size_t bytes)
{
    if (!ctx) return rssm_fail(RSSM_ERROR_NULL_POINTER, "rssm_mem_set: ctx is NULL");
    if (bytes == 0) return RSSM_OK;
    if (!dst) return rssm_fail(RSSM_ERROR_NULL_POINTER, "rssm_mem_set: dst is NULL");
    return rssm_dev_memset(ctx, dst, byte, bytes);
}

rssm_status rssm_context_synchronize(rssm_context *ctx)
{
    if (!ctx) return rssm_fail(RSSM_ERROR_NULL_POINTER, "rssm_context_synchronize: ctx is NULL");
    return rssm_dev_sync(ctx);
}

void *rssm_context_stream(rssm_context *ctx) { return ctx ? rssm_dev_stream(ctx) : NULL; }

void rssm_parallel_for(rssm_context *ctx, int64_t n, rssm_task_fn fn, void *arg)
{
    if (n <= 0 || !fn) return;
    if (ctx && ctx->backend->parallel_for)
        ctx->backend->parallel_for(ctx, n, fn, arg);
    else
        fn(arg, 0, n, 0);
}
