/*
 * prefill_k128_wide.cu — the step kernel's prefill instantiations (TC = RSSM_PF_TC) for K = 128
 * on wide lanes (cfg_k128w_*: 8 lanes of 16 channels per state row, a whole head per CTA) and
 * the same lanes on 32-row slices (cfg_k128s_*: 1 row per thread, 4 CTAs per head). The launcher
 * takes the sliced ones while their grid has at most one CTA per SM (prefill_config); the
 * same bits either way. See step_kernel.cuh.
 */
#include "step_kernel.cuh"

template <class CF32, class CF16> static void *prefill_kernel(int bf16, int kda)
{
    if (bf16) return kda ? (void *)step_kernel<CF16, true, RSSM_PF_TC> : (void *)step_kernel<CF16, false, RSSM_PF_TC>;
    return kda ? (void *)step_kernel<CF32, true, RSSM_PF_TC> : (void *)step_kernel<CF32, false, RSSM_PF_TC>;
}

void *rssm_cuda_kernel_k128w(int bf16, int kda) { return prefill_kernel<cfg_k128w_f32, cfg_k128w_bf16>(bf16, kda); }
void *rssm_cuda_kernel_k128s(int bf16, int kda) { return prefill_kernel<cfg_k128s_f32, cfg_k128s_bf16>(bf16, kda); }
