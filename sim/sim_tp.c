/*
 * sim_tp.c — a rank's shard of the simulate model (sim_tp.h): shard layout, sliced gate
 * parameters, the slice of the fused projection and the gather of the mixer outputs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "replayssm_runtime.h"
#include "sim_tp.h"

static int pad4(int n) { return (n + 3) / 4 * 4; }

int sim_shard_init(sim_shard *s, rssm_context *ctx, const sim_model *m, int tp, int rank, int max_rows,
                   sim_bf16 *full_proj, sim_bf16 *full_mix)
{
    memset(s, 0, sizeof *s);
    const rssm_layer *l = &m->cfg.layer;
    s->tp = tp, s->rank = rank, s->sliced = tp > 0;
    if (!s->sliced) {
        s->layer = *l;
        s->proj = m->proj, s->off_q = m->off_q, s->off_k = m->off_k, s->off_v = m->off_v;
        s->off_a = m->off_a, s->off_b = m->off_b;
        s->d_proj = full_proj, s->d_mix = full_mix;
        return 0;
    }
    int32_t k0, v0;
    const rssm_status st = rssm_layer_shard(l, tp, rank, &s->layer, &k0, &v0);
    if (st != RSSM_OK) return fprintf(stderr, "simulate: --tp %d: %s\n", tp, rssm_last_error()), -1;
    s->k_head0 = k0, s->v_head0 = v0;
    const rssm_layer *h = &s->layer;
    const int gk = h->gate == RSSM_GATE_KDA ? h->head_k_dim : 1, nl = m->cfg.n_layers;
    s->off_q = 0;
    s->off_k = s->off_q + sim_pad(h->num_k_heads * h->head_k_dim);
    s->off_v = s->off_k + sim_pad(h->num_k_heads * h->head_k_dim);
    s->off_a = s->off_v + sim_pad(h->num_v_heads * h->head_v_dim);
    s->off_b = s->off_a + sim_pad(h->num_v_heads * gk);
    s->proj = s->off_b + sim_pad(h->num_v_heads);
    /* gate parameters of the shard's value heads, every layer's row 16-byte aligned */
    s->a_row = pad4(h->num_v_heads), s->d_row = pad4(h->num_v_heads * gk);
    float *ha = calloc((size_t)nl * s->a_row, sizeof(float)), *hd = calloc((size_t)nl * s->d_row, sizeof(float));
    int rc = ha && hd ? 0 : -1;
    for (int i = 0; i < nl && !rc; i++) {
        memcpy(ha + (size_t)i * s->a_row, m->A_log + (size_t)i * l->num_v_heads + v0, sizeof(float) * h->num_v_heads);
        memcpy(hd + (size_t)i * s->d_row, m->dt_bias + ((size_t)i * l->num_v_heads + v0) * gk,
               sizeof(float) * h->num_v_heads * gk);
    }
    if (!rc &&
        (rssm_mem_alloc(ctx, sizeof(float) * nl * s->a_row, (void **)&s->A_log) ||
         rssm_mem_alloc(ctx, sizeof(float) * nl * s->d_row, (void **)&s->dt_bias) ||
         rssm_mem_copy(ctx, s->A_log, ha, sizeof(float) * nl * s->a_row, RSSM_COPY_HOST_TO_DEVICE) ||
         rssm_mem_copy(ctx, s->dt_bias, hd, sizeof(float) * nl * s->d_row, RSSM_COPY_HOST_TO_DEVICE) ||
         rssm_mem_alloc(ctx, sizeof(sim_bf16) * (size_t)max_rows * s->proj, (void **)&s->d_proj) ||
         rssm_mem_alloc(ctx, sizeof(sim_bf16) * (size_t)max_rows * h->num_v_heads * h->head_v_dim, (void **)&s->d_mix)))
        rc = -1;
    free(ha), free(hd);
    if (rc) fprintf(stderr, "simulate: could not allocate rank %d's buffers: %s\n", rank, rssm_last_error());
    return rc;
}

void sim_shard_free(sim_shard *s, rssm_context *ctx)
{
    if (s->sliced) {
        rssm_mem_free(ctx, s->A_log), rssm_mem_free(ctx, s->dt_bias);
        rssm_mem_free(ctx, s->d_proj), rssm_mem_free(ctx, s->d_mix);
    }
    memset(s, 0, sizeof *s);
}

const float *sim_shard_A_log(const sim_shard *s, const sim_model *m, int layer)
{
    return s->sliced ? s->A_log + (size_t)layer * s->a_row : sim_A_log(m, layer);
}

const float *sim_shard_dt_bias(const sim_shard *s, const sim_model *m, int layer)
{
    return s->sliced ? s->dt_bias + (size_t)layer * s->d_row : sim_dt_bias(m, layer);
}

int sim_shard_slice(rssm_context *ctx, const sim_model *m, const sim_shard *s, const sim_bf16 *proj, int n)
{
    if (!s->sliced) return 0;
    const rssm_layer *h = &s->layer;
    const int gk = h->gate == RSSM_GATE_KDA ? h->head_k_dim : 1, K = h->head_k_dim, V = h->head_v_dim;
    /* segment: destination offset, source offset, elements */
    const int seg[5][3] = {
        {s->off_q, m->off_q + s->k_head0 * K, h->num_k_heads * K},
        {s->off_k, m->off_k + s->k_head0 * K, h->num_k_heads * K},
        {s->off_v, m->off_v + s->v_head0 * V, h->num_v_heads * V},
        {s->off_a, m->off_a + s->v_head0 * gk, h->num_v_heads * gk},
        {s->off_b, m->off_b + s->v_head0, h->num_v_heads},
    };
    for (int i = 0; i < 5; i++)
        if (sim_copy2d(ctx, m, s->d_proj + seg[i][0], sizeof(sim_bf16) * s->proj, proj + seg[i][1],
                       sizeof(sim_bf16) * m->proj, sizeof(sim_bf16) * seg[i][2], n))
            return -1;
    return 0;
}

int sim_tp_gather_local(rssm_context *ctx, const sim_model *m, const sim_shard *shards, int n, sim_bf16 *mix)
{
    const rssm_layer *l = &m->cfg.layer;
    const size_t full = (size_t)l->num_v_heads * l->head_v_dim;
    for (int r = 0; r < shards[0].tp; r++) {
        const size_t w = (size_t)shards[r].layer.num_v_heads * l->head_v_dim;
        if (sim_copy2d(ctx, m, mix + (size_t)shards[r].v_head0 * l->head_v_dim, sizeof(sim_bf16) * full,
                       shards[r].d_mix, sizeof(sim_bf16) * w, sizeof(sim_bf16) * w, n))
            return -1;
    }
    return 0;
}

int sim_tp_gather_nccl(rssm_context *ctx, const sim_model *m, const sim_shard *s, sim_nccl *comm, sim_bf16 *staging,
                       int n, sim_bf16 *mix)
{
    const rssm_layer *l = &m->cfg.layer;
    const size_t full = (size_t)l->num_v_heads * l->head_v_dim, w = (size_t)s->layer.num_v_heads * l->head_v_dim;
    /* staging [tp][n][w]: rank r's rows at r * n * w */
    if (sim_nccl_allgather(comm, s->d_mix, staging, sizeof(sim_bf16) * n * w, rssm_context_stream(ctx)))
        return fprintf(stderr, "simulate: rank %d: %s\n", s->rank, sim_nccl_error()), -1;
    for (int r = 0; r < s->tp; r++)
        if (sim_copy2d(ctx, m, mix + (size_t)r * w, sizeof(sim_bf16) * full, staging + (size_t)r * n * w,
                       sizeof(sim_bf16) * w, sizeof(sim_bf16) * w, n))
            return -1;
    return 0;
}
