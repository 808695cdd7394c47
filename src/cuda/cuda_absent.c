/*
 * cuda_absent.c — the CUDA back end's entry points when the library is built without CUDA:
 * every call says so with RSSM_ERROR_UNSUPPORTED.
 */
#include "core/backend.h"

rssm_status rssm_cuda_init(rssm_context *ctx, int device)
{
    (void)ctx, (void)device;
    return rssm_fail(RSSM_ERROR_UNSUPPORTED, "this build of replayssm has no CUDA back end");
}

int rssm_cuda_present(void) { return 0; }

rssm_status rssm_cuda_check_errors(rssm_context *ctx)
{
    (void)ctx;
    return RSSM_OK;
}

const rssm_backend rssm_cuda_backend = {.name = "cuda (absent)"};

#define ABSENT rssm_fail(RSSM_ERROR_UNSUPPORTED, "this build of replayssm has no CUDA back end")
rssm_status rssm_cuda_alloc(rssm_context *ctx, size_t bytes, void **out) { return ABSENT; }
void rssm_cuda_free(rssm_context *ctx, void *ptr) {}
rssm_status rssm_cuda_memset(rssm_context *ctx, void *dst, int byte, size_t bytes, int sync) { return ABSENT; }
rssm_status rssm_cuda_memcpy(rssm_context *ctx, void *dst, const void *src, size_t bytes, int kind, int sync)
{
    return ABSENT;
}
rssm_status rssm_cuda_copy2d(rssm_context *ctx, void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                             size_t rows)
{
    return ABSENT;
}
rssm_status rssm_cuda_sync(rssm_context *ctx) { return ABSENT; }
rssm_status rssm_cuda_stream_order(rssm_context *ctx, void *stream, int ctx_waits) { return ABSENT; }
void *rssm_cuda_stream(rssm_context *ctx) { return NULL; }
rssm_status rssm_cuda_time(rssm_context *ctx, int (*work)(void *, void *), void *arg, int graph, int warmup, int reps,
                           double *us_per_rep)
{
    return ABSENT;
}
rssm_status rssm_cuda_bandwidth(rssm_context *ctx, size_t bytes, double *copy_gbps, double *triad_gbps)
{
    return ABSENT;
}
int rssm_cuda_sm_count(rssm_context *ctx) { return 0; }
