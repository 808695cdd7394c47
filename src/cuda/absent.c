/*
 * absent.c — the CUDA back end of a build without CUDA: it is never available, and creating a
 * context on it says so with RSSM_ERROR_UNSUPPORTED.
 */
#include "core/backend.h"

static rssm_status absent_init(rssm_context *ctx, const rssm_context_params *params)
{
    (void)ctx, (void)params;
    return rssm_fail(RSSM_ERROR_UNSUPPORTED, "this build of replayssm has no CUDA back end");
}

const rssm_backend rssm_cuda_backend = {.name = "cuda", .init = absent_init};
