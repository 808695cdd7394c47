/*
 * cuda_step_k128w.cu — the step kernel's prefill instantiations (TC = RSSM_PF_TC) for K = 128
 * on wide lanes (cfg_k128w_*: 8 lanes of 16 channels per state row, a whole head per CTA) and
 * medium lanes (cfg_k128m_*: 16 lanes of 8 channels, 2 rows per thread). The launcher takes
 * the wide lanes for every K = 128 prefill; the medium ones on request (RSSM_CUDA_PREFILL=3).
 * See cuda_kernels.cuh.
 */
#include "cuda_kernels.cuh"

template <class CF32, class CF16> static void *prefill_kernel(int bf16, int kda)
{
    if (bf16) return kda ? (void *)step_kernel<CF16, true, RSSM_PF_TC> : (void *)step_kernel<CF16, false, RSSM_PF_TC>;
    return kda ? (void *)step_kernel<CF32, true, RSSM_PF_TC> : (void *)step_kernel<CF32, false, RSSM_PF_TC>;
}

void *rssm_cuda_kernel_k128w(int bf16, int kda) { return prefill_kernel<cfg_k128w_f32, cfg_k128w_bf16>(bf16, kda); }
void *rssm_cuda_kernel_k128m(int bf16, int kda) { return prefill_kernel<cfg_k128m_f32, cfg_k128m_bf16>(bf16, kda); }
