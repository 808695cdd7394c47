/* Placeholder until the optimised CPU back end lands: delegates to nothing. */
#include "core/backend.h"
#include "ref/ref.h"
#include "cpu/cpu.h"

rssm_status rssm_cpu_init(rssm_context *ctx, int threads)
{
    (void)ctx, (void)threads;
    return RSSM_OK;
}

static rssm_status cpu_step(rssm_context *ctx, const rssm_params *p, void *stream)
{
    return rssm_fail(RSSM_ERROR_UNSUPPORTED, "cpu back end not written yet");
}

const rssm_backend rssm_cpu_backend = {.name = "cpu", .step = cpu_step, .cursor = rssm_host_cursor};

void rssm_cpu_parallel_for(rssm_context *ctx, int64_t n, rssm_task_fn fn, void *arg) { fn(arg, 0, n, 0); }
int rssm_cpu_threads(const rssm_context *ctx) { return 1; }
