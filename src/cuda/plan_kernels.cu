/*
 * plan_kernels.cu — the step planner's per-row kernels on CUDA (src/runtime/plan.c calls them
 * through the back-end table; host back ends run the same rules as loops, src/core/host.c):
 *   plan_fold: fold[b] = rssm_rt_fold_rule(slot[b], seq_len[b], *every)   (forced folds: prefix
 *              snapshots, and every live row of a small-batch decode step)
 *   plan_seq:  seq_len[b] += 1 (decode) or accepted[b] (verify), padding rows unchanged
 * One thread per row; enqueued on the caller's stream, no allocation or synchronisation, so
 * both can be captured in a CUDA graph with the rest of the step.
 */
#include <cuda_runtime.h>

extern "C" {
#include "core/backend.h"
}
#include "runtime/plan_rules.h"

static __global__ void plan_fold_kernel(rssm_plan_params p)
{
    const int32_t b = blockIdx.x * blockDim.x + threadIdx.x;
    if (b < p.batch) p.fold[b] = rssm_rt_fold_rule(p.slot[b], p.n_slots, p.seq_len[b], p.mode, p.track, *p.every);
}

static __global__ void plan_seq_kernel(rssm_plan_params p)
{
    const int32_t b = blockIdx.x * blockDim.x + threadIdx.x;
    if (b < p.batch)
        p.seq_len[b] = rssm_rt_seq_rule(p.slot[b], p.n_slots, p.seq_len[b], p.accepted ? p.accepted[b] : 1);
}

static rssm_status launched(const char *what)
{
    const cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) return rssm_fail(RSSM_ERROR_DEVICE, "%s: %s", what, cudaGetErrorString(e));
    return RSSM_OK;
}

static const int threads = 128;

rssm_status rssm_cuda_plan_fold(rssm_context *ctx, const rssm_plan_params *p, void *stream)
{
    (void)ctx;
    plan_fold_kernel<<<(p->batch + threads - 1) / threads, threads, 0, (cudaStream_t)stream>>>(*p);
    return launched("rssm_plan_begin (fold kernel)");
}

rssm_status rssm_cuda_plan_seq(rssm_context *ctx, const rssm_plan_params *p, void *stream)
{
    (void)ctx;
    plan_seq_kernel<<<(p->batch + threads - 1) / threads, threads, 0, (cudaStream_t)stream>>>(*p);
    return launched("rssm_plan_end (sequence length kernel)");
}
