/*
 * plan_rules.h — the planner's per-row rules, shared by the CUDA kernels and the host loops
 * (and the host mirror rssm_plan_fold_rows), so that all three agree exactly.
 * Self-contained (stdint only) so that a .cu file can include it.
 */
#ifndef RSSM_PLAN_RULES_H
#define RSSM_PLAN_RULES_H

#include <stdint.h>

#ifdef __CUDACC__
#define RSSM_RT_HD __host__ __device__ __forceinline__
#else
#define RSSM_RT_HD static inline
#endif

/* Forced fold of one row (mode 0 decode, 1 verify), for a prefix snapshot:
 *   decode: the post-increment length seq_len + 1 is a multiple of the track interval;
 *   verify: the committed length seq_len (> 0) is a multiple of it (the start fold then
 *           leaves the checkpoint at exactly that length);
 * or, in decode, because the step is a small batch that folds every row (`every` != 0,
 * rssm_plan_set_small_batch). Padding rows (slot outside [0, n_slots)) never fold; track <= 0
 * gives no snapshot folds. */
RSSM_RT_HD uint8_t rssm_rt_fold_rule(int32_t slot, int32_t n_slots, int32_t seq_len, int32_t mode, int32_t track,
                                     int32_t every)
{
    if (slot < 0 || slot >= n_slots || seq_len < 0) return 0;
    if (mode == 0 && every) return 1;
    if (track <= 0) return 0;
    if (mode == 0) return (uint8_t)((seq_len + 1) % track == 0);
    return (uint8_t)(seq_len > 0 && seq_len % track == 0);
}

/* Sequence length after the step: + 1 (decode) or + accepted (verify); padding unchanged. */
RSSM_RT_HD int32_t rssm_rt_seq_rule(int32_t slot, int32_t n_slots, int32_t seq_len, int32_t add)
{
    return (slot < 0 || slot >= n_slots) ? seq_len : seq_len + add;
}

#endif /* RSSM_PLAN_RULES_H */
