/*
 * layout.h — element offsets of every tensor, in one place (C and CUDA).
 *
 * All tensors are row-major with the last dimension contiguous (replayssm.h has the shapes).
 * s = slot, hv = value head, kh = key head, p = ring position, b = row, t = token.
 */
#ifndef RSSM_LAYOUT_H
#define RSSM_LAYOUT_H

#include "core/params.h"

/* checkpoint [slots, HV, V, K] or [slots, HV, K, V]: first element of a head's state */
RSSM_HD int64_t rssm_ckpt_off(const rssm_layer *l, int64_t s, int hv)
{
    return (s * l->num_v_heads + hv) * (int64_t)l->head_v_dim * l->head_k_dim;
}

/* Element (value row r, key channel c) of a head's state, from its first element, in the layer's
 * state layout: r K + c (V-first) or c V + r (K-first). */
RSSM_HD int64_t rssm_ckpt_elem(const rssm_layer *l, int r, int c)
{
    return l->state_layout == RSSM_LAYOUT_KV ? (int64_t)c * l->head_v_dim + r : (int64_t)r * l->head_k_dim + c;
}

/* ring_u [slots, HV, L, V] */
RSSM_HD int64_t rssm_ring_u_off(const rssm_layer *l, int64_t s, int hv, int p)
{
    return ((s * l->num_v_heads + hv) * l->ring_len + p) * (int64_t)l->head_v_dim;
}

/* ring_k GDN [slots, H, L, K] (per key head); KDA [slots, HV, L, K] (per value head) */
RSSM_HD int64_t rssm_ring_k_off(const rssm_layer *l, int64_t s, int hv, int group, int p)
{
    if (l->gate == RSSM_GATE_GDN) return ((s * l->num_k_heads + hv / group) * l->ring_len + p) * (int64_t)l->head_k_dim;
    return ((s * l->num_v_heads + hv) * l->ring_len + p) * (int64_t)l->head_k_dim;
}

/* ring_g GDN [slots, HV, L]; KDA [slots, HV, L, K] (gk = 1 or K) */
RSSM_HD int64_t rssm_ring_g_off(const rssm_layer *l, int64_t s, int hv, int p, int gk)
{
    return ((s * l->num_v_heads + hv) * l->ring_len + p) * (int64_t)gk;
}

/* ring_base [slots, HV] (both gates) */
RSSM_HD int64_t rssm_base_off(const rssm_layer *l, int64_t s, int hv) { return s * l->num_v_heads + hv; }

/* The position rule of the ring, for every tensor of one value head (ring_u, ring_k, ring_g):
 * the entry of the token committed when the shared cursor went from p to p + 1 is at
 *   GDN  position p           (absolute: ring_k is one key head's, shared by the value heads
 *                              of its group, which may have different bases; each position is
 *                              written once, whatever the heads' bases)
 *   KDA  position p - base    (relative: every tensor is the value head's own)
 * where base = ring_base[slot, hv], the entries already folded into the head's checkpoint. A
 * head's live entries are those of cursor values base .. cursor - 1, so positions
 * rssm_ring_pos(l, base, base) .. rssm_ring_pos(l, cursor, base) - 1, in order. */
RSSM_HD int rssm_ring_pos(const rssm_layer *l, int p, int base) { return l->gate == RSSM_GATE_GDN ? p : p - base; }

/* Per-token inputs: the token index bt = b * T + t, or cu_seqlens[b] + t for ragged prefill rows. */
RSSM_HD int64_t rssm_bt(const rssm_step_io *io, int b, int t)
{
    return (io->cu_seqlens ? (int64_t)io->cu_seqlens[b] : (int64_t)b * io->tokens) + t;
}
/* Tokens of row b: T, or cu_seqlens[b + 1] - cu_seqlens[b] (ragged prefill). */
RSSM_HD int rssm_row_tokens(const rssm_step_io *io, int b)
{
    return io->cu_seqlens ? io->cu_seqlens[b + 1] - io->cu_seqlens[b] : io->tokens;
}

/* o [B, T, HV, V] */
RSSM_HD int64_t rssm_o_off(const rssm_layer *l, int64_t bt, int hv)
{
    return (bt * l->num_v_heads + hv) * (int64_t)l->head_v_dim;
}

/* precomputed g: GDN [B, T, HV]; KDA [B, T, HV, K]; beta [B, T, HV] (token strides resolved) */
RSSM_HD int64_t rssm_g_off(const rssm_step_io *io, int64_t bt, int hv, int gk)
{
    return bt * io->g_stride + (int64_t)hv * gk;
}
RSSM_HD int64_t rssm_beta_off(const rssm_step_io *io, int64_t bt, int hv) { return bt * io->beta_stride + hv; }

#endif /* RSSM_LAYOUT_H */
