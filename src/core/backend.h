/*
 * backend.h — what a back end provides (one table of functions) and the context.
 *
 * The public calls validate, fill a params struct and call the context's table; memory,
 * stream ordering and the planner's kernels go through the same table, so src/core and
 * src/runtime never ask which device they are on. Every entry is required, except where its
 * comment says NULL is allowed (an op a back end lacks fails with RSSM_ERROR_UNSUPPORTED). The
 * reference and the CPU back ends share the host entries of host.h.
 */
#ifndef RSSM_BACKEND_H
#define RSSM_BACKEND_H

#include <pthread.h>

#include "core/errors.h"
#include "core/params.h"

typedef struct rssm_backend {
    const char *name;
    /* 1: slots, cursors and accepted counts are host memory, checked on the host before any
     * work; 0: they are device memory and the kernels bound-check them (check_errors) */
    int host_memory;
    /* 1 when the device can be used at all (CUDA: built and a GPU present) */
    int (*available)(void);
    rssm_status (*init)(rssm_context *ctx, const rssm_context_params *params);
    void (*destroy)(rssm_context *ctx);
    void (*info)(const rssm_context *ctx, rssm_context_info *out);
    /* RSSM_OK when this back end takes the layer (dtypes, head dims), else the status and message */
    rssm_status (*check_layer)(const rssm_layer *layer);

    /* ops: decode_packed, decode_replay, verify and prefill (p->op says which); materialise;
     * cursor moves */
    rssm_status (*step)(rssm_context *ctx, const rssm_params *p, void *stream);
    rssm_status (*materialize)(rssm_context *ctx, const rssm_materialize_params *p, void *stream);
    rssm_status (*cursor)(rssm_context *ctx, const rssm_cursor_params *p, void *stream);
    /* the step planner's per-row kernels, enqueued on `stream` (never synchronising) */
    rssm_status (*plan_fold)(rssm_context *ctx, const rssm_plan_params *p, void *stream);
    rssm_status (*plan_seq)(rssm_context *ctx, const rssm_plan_params *p, void *stream);
    /* the drain of a small-batch step (NULL where none): drain_ok says whether it takes a layer
     * (whose steps then run packed decode's kernels under io.fold_every) */
    int (*drain_ok)(rssm_context *ctx, const rssm_layer *layer);
    rssm_status (*plan_drain)(rssm_context *ctx, const rssm_plan_params *p, void *stream);
    /* device errors counted by the kernels since the last call (NULL: none can happen) */
    rssm_status (*check_errors)(rssm_context *ctx);

    /* memory: sync = 0 only enqueues on the context's stream, in order with its kernels */
    rssm_status (*alloc)(rssm_context *ctx, size_t bytes, void **out);
    void (*free)(rssm_context *ctx, void *ptr);
    rssm_status (*memset)(rssm_context *ctx, void *dst, int byte, size_t bytes, int sync);
    rssm_status (*memcpy)(rssm_context *ctx, void *dst, const void *src, size_t bytes, rssm_copy_kind kind, int sync);
    /* `rows` device-to-device copies of `width` bytes (src + r * spitch -> dst + r * dpitch), enqueued */
    rssm_status (*copy2d)(rssm_context *ctx, void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                          size_t rows);
    rssm_status (*sync)(rssm_context *ctx);
    /* ctx_waits = 1: the context's stream waits for the work enqueued on `stream` so far; 0:
     * `stream` waits for the context's stream. An event wait on the device; the host does not block. */
    rssm_status (*stream_order)(rssm_context *ctx, void *stream, int ctx_waits);
    void *(*stream)(rssm_context *ctx);
    /* host work over the context's threads (NULL: inline on the caller) */
    void (*parallel_for)(rssm_context *ctx, int64_t n, rssm_task_fn fn, void *arg);
} rssm_backend;

struct rssm_context {
    rssm_device device;
    const rssm_backend *backend;
    rssm_context_params params;
    void *impl; /* the back end's own data (thread pool, stream, device error counter) */
    /* held by every op on the context: calls from several threads take turns */
    pthread_mutex_t lock;
    /* host scratch of the argument checks: a bitmap of slots, all clear between calls */
    uint64_t *slot_bits;
    size_t slot_bits_words;
};

/* The back ends (each in its own folder). */
extern const rssm_backend rssm_reference_backend;
extern const rssm_backend rssm_cpu_backend;
extern const rssm_backend rssm_cuda_backend; /* without CUDA: one that says so (src/cuda/absent.c) */

#endif /* RSSM_BACKEND_H */
