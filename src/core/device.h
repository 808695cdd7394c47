/*
 * device.h — memory and stream ordering on a context's device, for the library's own host
 * code (the public memory calls, the state pool, the planner, the prefix cache). Each is one
 * call through the context's back-end table: device memory and the context's stream on CUDA,
 * host memory (done on return) on the CPU and reference back ends.
 */
#ifndef RSSM_DEVICE_H
#define RSSM_DEVICE_H

#include "core/backend.h"

static inline rssm_status rssm_dev_alloc(rssm_context *ctx, size_t bytes, void **out)
{
    return ctx->backend->alloc(ctx, bytes, out);
}
/* accepts NULL */
static inline void rssm_dev_free(rssm_context *ctx, void *ptr)
{
    if (ptr) ctx->backend->free(ctx, ptr);
}
static inline rssm_status rssm_dev_memset(rssm_context *ctx, void *dst, int byte, size_t bytes)
{
    return ctx->backend->memset(ctx, dst, byte, bytes, 1);
}
static inline rssm_status rssm_dev_upload(rssm_context *ctx, void *dst, const void *host, size_t bytes)
{
    return ctx->backend->memcpy(ctx, dst, host, bytes, RSSM_COPY_HOST_TO_DEVICE, 1);
}
static inline rssm_status rssm_dev_download(rssm_context *ctx, void *host, const void *src, size_t bytes)
{
    return ctx->backend->memcpy(ctx, host, src, bytes, RSSM_COPY_DEVICE_TO_HOST, 1);
}
static inline rssm_status rssm_dev_copy(rssm_context *ctx, void *dst, const void *src, size_t bytes)
{
    return ctx->backend->memcpy(ctx, dst, src, bytes, RSSM_COPY_DEVICE_TO_DEVICE, 1);
}
/* The same, only enqueued on the context's stream (in order with its kernels): the caller
 * synchronises (rssm_dev_sync) before anything else may rely on the bytes. */
static inline rssm_status rssm_dev_memset_async(rssm_context *ctx, void *dst, int byte, size_t bytes)
{
    return ctx->backend->memset(ctx, dst, byte, bytes, 0);
}
static inline rssm_status rssm_dev_copy_async(rssm_context *ctx, void *dst, const void *src, size_t bytes)
{
    return ctx->backend->memcpy(ctx, dst, src, bytes, RSSM_COPY_DEVICE_TO_DEVICE, 0);
}
static inline rssm_status rssm_dev_copy2d_async(rssm_context *ctx, void *dst, size_t dpitch, const void *src,
                                                size_t spitch, size_t width, size_t rows)
{
    return ctx->backend->copy2d(ctx, dst, dpitch, src, spitch, width, rows);
}
static inline rssm_status rssm_dev_sync(rssm_context *ctx) { return ctx->backend->sync(ctx); }
/* Orders the context's stream after the work enqueued on a caller's `stream` so far
 * (order_after), or that stream after the context's (order_before), with a device-side event
 * wait: the host does not block. */
/* (The back end records one event of the context: the ordering takes the context's turn.) */
static inline rssm_status rssm_dev_order(rssm_context *ctx, void *stream, int ctx_waits)
{
    pthread_mutex_lock(&ctx->lock);
    const rssm_status st = ctx->backend->stream_order(ctx, stream, ctx_waits);
    pthread_mutex_unlock(&ctx->lock);
    return st;
}
static inline rssm_status rssm_dev_order_after(rssm_context *ctx, void *stream)
{
    return rssm_dev_order(ctx, stream, 1);
}
static inline rssm_status rssm_dev_order_before(rssm_context *ctx, void *stream)
{
    return rssm_dev_order(ctx, stream, 0);
}
/* The context's own stream (NULL on host devices). */
static inline void *rssm_dev_stream(rssm_context *ctx) { return ctx->backend->stream(ctx); }

#endif /* RSSM_DEVICE_H */
