/*
 * backend.h — what a back end provides (a small table of functions) and the context.
 *
 * The public calls in api.c validate, fill a params struct and call the context's table.
 * A back end may leave an entry NULL: the call then fails with RSSM_ERROR_UNSUPPORTED.
 */
#ifndef RSSM_BACKEND_H
#define RSSM_BACKEND_H

#include "core/params.h"

typedef struct rssm_backend {
    const char *name;
    /* decode_packed, decode_replay, verify and prefill: p->op says which */
    rssm_status (*step)(rssm_context *ctx, const rssm_params *p, void *stream);
    rssm_status (*materialize)(rssm_context *ctx, const rssm_materialize_params *p, void *stream);
    rssm_status (*cursor)(rssm_context *ctx, const rssm_cursor_params *p, void *stream);
    /* 1 if this back end takes these dtypes for this op (f64 is reference-only, say) */
    int (*supports)(const rssm_layer *layer);
    void (*destroy)(rssm_context *ctx);
} rssm_backend;

struct rssm_context {
    rssm_device device;
    const rssm_backend *backend;
    int index;  /* CPU threads or CUDA ordinal */
    void *impl; /* back end's own data (thread pool, device error counter) */
};

/* Records the message for rssm_last_error() on this thread and returns `status`. */
rssm_status rssm_fail(rssm_status status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Back ends (each file defines its own). */
extern const rssm_backend rssm_reference_backend;
extern const rssm_backend rssm_cpu_backend;
/* Creates the CPU back end's data (thread pool) for ctx; NULL impl is fine for 1 thread. */
rssm_status rssm_cpu_init(rssm_context *ctx, int threads);
/* CUDA back end; when compiled without CUDA, rssm_cuda_init returns RSSM_ERROR_UNSUPPORTED. */
extern const rssm_backend rssm_cuda_backend;
rssm_status rssm_cuda_init(rssm_context *ctx, int device);
int rssm_cuda_present(void);
rssm_status rssm_cuda_check_errors(rssm_context *ctx);

/* CUDA halves of device.h (cuda_absent.c answers RSSM_ERROR_UNSUPPORTED). */
rssm_status rssm_cuda_alloc(rssm_context *ctx, size_t bytes, void **out);
void rssm_cuda_free(rssm_context *ctx, void *ptr);
/* sync = 0: only enqueued on the context's stream (the caller synchronises later) */
rssm_status rssm_cuda_memset(rssm_context *ctx, void *dst, int byte, size_t bytes, int sync);
/* kind: 0 host->device, 1 device->host, 2 device->device */
rssm_status rssm_cuda_memcpy(rssm_context *ctx, void *dst, const void *src, size_t bytes, int kind, int sync);
rssm_status rssm_cuda_copy2d(rssm_context *ctx, void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                             size_t rows);
rssm_status rssm_cuda_sync(rssm_context *ctx);
/* ctx_waits = 1: the context's stream waits for the work enqueued on `stream` so far; 0: `stream`
 * waits for the context's stream. An event wait on the device; the host does not block. */
rssm_status rssm_cuda_stream_order(rssm_context *ctx, void *stream, int ctx_waits);
void *rssm_cuda_stream(rssm_context *ctx);
rssm_status rssm_cuda_time(rssm_context *ctx, int (*work)(void *, void *), void *arg, int graph, int warmup, int reps,
                           double *us_per_rep);
rssm_status rssm_cuda_bandwidth(rssm_context *ctx, size_t bytes, double *copy_gbps, double *triad_gbps);
int rssm_cuda_sm_count(rssm_context *ctx);

#endif /* RSSM_BACKEND_H */
