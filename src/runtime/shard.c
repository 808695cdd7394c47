/*
 * shard.c — tensor-parallel sharding of a layer's heads (rssm_layer_shard).
 *
 * Rank r of tp holds the contiguous key heads [r*H/tp, (r+1)*H/tp) and value heads
 * [r*HV/tp, (r+1)*HV/tp). With group = HV/H, shard value head j (global hv = r*HV/tp + j) reads
 * global key head hv/group = r*H/tp + j/group (HV/tp = group * H/tp), which is shard key head
 * j/group: the grouping survives exactly when both H and HV divide by tp. Every head's
 * recurrence is independent of the others, so a rank's shard is an ordinary layer with
 * H/tp and HV/tp heads and the same head dims, gate, ring, dtypes, scale and l2norm.
 */
#include "core/backend.h"

rssm_status rssm_layer_shard(const rssm_layer *full, int32_t tp, int32_t rank, rssm_layer *out, int32_t *k_head0,
                             int32_t *v_head0)
{
    const char *fn = "rssm_layer_shard";
    if (!full || !out) return rssm_fail(RSSM_ERROR_NULL_POINTER, "%s: full or out is NULL", fn);
    rssm_status st = rssm_layer_validate(full);
    if (st != RSSM_OK) return st;
    if (tp < 1) return rssm_fail(RSSM_ERROR_BAD_ARGUMENT, "%s: tp %d < 1", fn, tp);
    if (rank < 0 || rank >= tp) return rssm_fail(RSSM_ERROR_BAD_ARGUMENT, "%s: rank %d outside [0, %d)", fn, rank, tp);
    const int32_t H = full->num_k_heads, HV = full->num_v_heads;
    if (H % tp || HV % tp)
        return rssm_fail(RSSM_ERROR_BAD_SHAPE,
                         "%s: tp=%d does not divide the heads (H=%d, HV=%d); every rank needs whole key heads and "
                         "their value-head groups",
                         fn, tp, H, HV);
    /* HV % H == 0 (validated) and tp | H, tp | HV give HVs / Hs = HV / H: the shard's value head
     * j reads shard key head j / group, as globally */
    const int32_t Hs = H / tp, HVs = HV / tp;
    rssm_layer s = *full;
    s.num_k_heads = Hs;
    s.num_v_heads = HVs;
    *out = s;
    if (k_head0) *k_head0 = rank * Hs;
    if (v_head0) *v_head0 = rank * HVs;
    return RSSM_OK;
}
