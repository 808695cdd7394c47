/*
 * runtime_kernels.cu — the step planner's device kernels (src/runtime/plan.c calls them on
 * CUDA contexts; the same rules run as host loops there otherwise):
 *   plan_fold: fold[b] = rssm_rt_fold_rule(slot[b], seq_len[b], *every)   (forced folds: prefix
 *              snapshots, and every live row of a small-batch decode step)
 *   plan_seq:  seq_len[b] += 1 (decode) or accepted[b] (verify), padding rows unchanged
 * One thread per row; enqueued on the caller's stream, no allocation or synchronisation, so
 * both can be captured in a CUDA graph with the rest of the step.
 */
#include <cuda_runtime.h>

#include "replayssm.h"
#include "runtime/plan_rules.h"

extern "C" rssm_status rssm_fail(rssm_status status, const char *fmt, ...);

static __global__ void plan_fold_kernel(const int32_t *slot, const int32_t *seq_len, const int32_t *every,
                                        uint8_t *fold, int32_t batch, int32_t n_slots, int32_t mode, int32_t track)
{
    const int32_t b = blockIdx.x * blockDim.x + threadIdx.x;
    if (b < batch) fold[b] = rssm_rt_fold_rule(slot[b], n_slots, seq_len[b], mode, track, *every);
}

static __global__ void plan_seq_kernel(const int32_t *slot, int32_t *seq_len, const int32_t *accepted, int32_t batch,
                                       int32_t n_slots)
{
    const int32_t b = blockIdx.x * blockDim.x + threadIdx.x;
    if (b < batch) seq_len[b] = rssm_rt_seq_rule(slot[b], n_slots, seq_len[b], accepted ? accepted[b] : 1);
}

static rssm_status launched(const char *what)
{
    const cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) return rssm_fail(RSSM_ERROR_DEVICE, "%s: %s", what, cudaGetErrorString(e));
    return RSSM_OK;
}

extern "C" rssm_status rssm_rt_cuda_plan_fold(const int32_t *slot, const int32_t *seq_len, const int32_t *every,
                                              uint8_t *fold, int32_t batch, int32_t n_slots, int32_t mode,
                                              int32_t tokens, int32_t track, void *stream)
{
    (void)tokens;
    const int threads = 128, blocks = (batch + threads - 1) / threads;
    plan_fold_kernel<<<blocks, threads, 0, (cudaStream_t)stream>>>(slot, seq_len, every, fold, batch, n_slots, mode,
                                                                   track);
    return launched("rssm_plan_begin (fold kernel)");
}

extern "C" rssm_status rssm_rt_cuda_plan_seq(const int32_t *slot, int32_t *seq_len, const int32_t *accepted,
                                             int32_t batch, int32_t n_slots, void *stream)
{
    const int threads = 128, blocks = (batch + threads - 1) / threads;
    plan_seq_kernel<<<blocks, threads, 0, (cudaStream_t)stream>>>(slot, seq_len, accepted, batch, n_slots);
    return launched("rssm_plan_end (sequence length kernel)");
}
