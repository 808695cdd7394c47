/*
 * sim_tp.h — tensor parallelism in `replayssm simulate --tp N`: one rank's share of the heads.
 *
 * Rank r holds key heads [k_head0, +H/tp) and value heads [v_head0, +HV/tp) of every layer
 * (rssm_layer_shard) with its own pool, planner and prefix cache over that shard. The dense
 * parts stay whole on every rank (replicated):
 *   proj  [n][proj]      = the full fused input projection, computed identically on every rank;
 *                          the rank's heads are then copied out (sim_shard_slice). Slicing the
 *                          output, not the GEMM: a column-sliced cuBLAS GEMM is not guaranteed
 *                          to give bitwise the same columns as the full GEMM (another kernel or
 *                          tiling may be picked for another width), and the token streams must
 *                          equal the single-GPU run's exactly.
 *   s.proj [n][s.proj]   the rank's rows in the model's layout, with H/tp and HV/tp heads:
 *                          [ q: Hs*K | k: Hs*K | v: HVs*V | a: HVs*gk | b: HVs ], each padded to 8
 *   s.mix  [n][HVs*V]    the mixer's output on the shard
 *   mix   [n][HV*V]      all ranks' outputs side by side (rank r at columns r*HVs*V): an
 *                          all-gather ([rank][n][HVs*V] with NCCL, reordered by 2-D copies) or,
 *                          for ranks in one process, 2-D copies from each shard
 * and then the full output projection runs on every rank.
 */
#ifndef RSSM_SIM_TP_H
#define RSSM_SIM_TP_H

#include "sim_model.h"
#include "sim_nccl.h"

typedef struct sim_shard {
    int tp, rank, k_head0, v_head0;
    int sliced;                                  /* 0: the whole layer on the model's own buffers (no --tp) */
    rssm_layer layer;                            /* the model layer's shard */
    int proj, off_q, off_k, off_v, off_a, off_b; /* its projection row layout */
    float *A_log;                                /* [n_layers][a_row] (sliced copy, 16-byte aligned rows) */
    float *dt_bias;                              /* [n_layers][d_row] */
    int a_row, d_row;
    sim_bf16 *d_proj; /* [max_rows][proj] */
    sim_bf16 *d_mix;  /* [max_rows][HVs*V] */
    /* the rank's runtime objects (created by the caller) */
    rssm_layer *layers;
    rssm_pool *pool, *snap_pool;
    rssm_plan *plan;
    rssm_prefix_cache *cache;
} sim_shard;

/* tp == 0: the whole layer on the caller's buffers full_proj / full_mix (no slicing, no
 * gather); tp >= 1: rank `rank`'s shard with its own buffers for max_rows rows. 0 on success;
 * -1 with a message on stderr (e.g. tp does not divide the heads). */
int sim_shard_init(sim_shard *s, rssm_context *ctx, const sim_model *m, int tp, int rank, int max_rows,
                   sim_bf16 *full_proj, sim_bf16 *full_mix);
void sim_shard_free(sim_shard *s, rssm_context *ctx);
const float *sim_shard_A_log(const sim_shard *s, const sim_model *m, int layer);
const float *sim_shard_dt_bias(const sim_shard *s, const sim_model *m, int layer);
/* s->d_proj[n] <- the shard's heads of proj[n][m->proj] (no-op when not sliced). */
int sim_shard_slice(rssm_context *ctx, const sim_model *m, const sim_shard *s, const sim_bf16 *proj, int n);
/* mix[n][HV*V] <- every shard's d_mix[n][HVs*V], shards[0 .. tp) in this process. */
int sim_tp_gather_local(rssm_context *ctx, const sim_model *m, const sim_shard *shards, int n, sim_bf16 *mix);
/* mix[n][HV*V] <- every rank's d_mix over NCCL; staging [tp][max_rows][HVs*V] on the device. */
int sim_tp_gather_nccl(rssm_context *ctx, const sim_model *m, const sim_shard *s, sim_nccl *comm, sim_bf16 *staging,
                       int n, sim_bf16 *mix);

#endif /* RSSM_SIM_TP_H */
