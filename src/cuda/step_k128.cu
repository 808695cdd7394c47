/*
 * step_k128.cu — instantiations of the step kernel for the k128 configurations
 * (f32 and bf16 state; GDN and KDA; decode and verify chunks). See step_kernel.cuh.
 */
#include "step_kernel.cuh"

void *rssm_cuda_kernel_k128(int bf16, int kda, int tc)
{
    return bf16 ? step_kernel_of<cfg_k128_bf16>(kda, tc) : step_kernel_of<cfg_k128_f32>(kda, tc);
}
