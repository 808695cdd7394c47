/*
 * sim_model.h — the small hybrid model of `replayssm simulate`: deterministic random
 * weights, token embedding, per layer an RMSNorm, one fused projection to q|k|v|a|b, a
 * linear-attention mixer (run by the caller through the runtime), an output projection
 * and a residual; a final RMSNorm, tied unembedding and a greedy argmax.
 *
 * Numbers as a bf16 model serves them: weights hold bf16 values; the residual stream is f32;
 * the GEMMs take bf16 inputs and accumulate in f32; what the mixers read (the fused projection)
 * and write (their output) is bf16, the layers' io dtype. On a CPU context the dense parts run
 * on the CPU thread pool (weights kept as f32 holding bf16 values); on a CUDA context on the GPU
 * (sim_cuda.cu, cuBLAS on bf16 tensor cores). Buffers live in the context's memory.
 * Fused projection row layout (one row per token), each segment padded to 8 elements so
 * every view is 16-byte aligned and can be passed to the kernels with a token stride:
 *   [ q: H*K | k: H*K | v: HV*V | a: HV*gk | b: HV ]
 */
#ifndef RSSM_SIM_MODEL_H
#define RSSM_SIM_MODEL_H

#include <stdint.h>

#include "replayssm.h"

/* bf16 bits (the activations the mixers read and write; rssm_f32_to_bf16 rounds to them) */
typedef uint16_t sim_bf16;

/* Segments of a projection row are padded to this many elements (16 bytes of bf16). */
#define SIM_PAD 8
static inline int sim_pad(int n) { return (n + SIM_PAD - 1) / SIM_PAD * SIM_PAD; }

typedef struct sim_model_config {
    int vocab;
    int d_model;
    int n_layers;
    rssm_layer layer; /* the mixer's shape (same for every layer) */
    uint64_t seed;
} sim_model_config;

typedef struct sim_model {
    sim_model_config cfg;
    int proj; /* padded width of the fused projection row */
    int off_q, off_k, off_v, off_a, off_b;
    /* host weights (bf16 values in f32); on a CUDA context freed (NULL) once on the device */
    float *embed;   /* [vocab][d_model], tied with the unembedding */
    float **w_in;   /* per layer [d_model][proj] */
    float **w_out;  /* per layer [HV*V][d_model] */
    float *A_log;   /* per layer [HV] */
    float *dt_bias; /* per layer [HV*gk] */
    void *gpu;      /* device copies and cuBLAS (CUDA contexts), else NULL */
    /* CPU contexts: the GEMMs' f32 input, [max_rows][max(d_model, HV*V)] */
    float *scratch;
    int max_rows;
} sim_model;

/* Builds the weights (and their device copies on a CUDA context, with scratch for up to
 * max_rows rows). 0 on success. */
int sim_model_init(sim_model *m, const sim_model_config *cfg, rssm_context *ctx, int max_rows);
void sim_model_free(sim_model *m);
/* A_log [HV] and dt_bias [HV*gk] of a layer, in the context's memory (for the kernels). */
const float *sim_A_log(const sim_model *m, int layer);
const float *sim_dt_bias(const sim_model *m, int layer);

/* All return 0 on success. x (f32), proj and mix (bf16) are device buffers (host memory on CPU);
 * bf16(.) below rounds to bf16, to nearest even. */
/* x[n][d_model] = embed[tokens[i]]  (tokens on the host) */
int sim_embed(rssm_context *ctx, const sim_model *m, const int32_t *tokens, int n, float *x);
/* proj[n][proj] = bf16(bf16(rmsnorm(x)) @ w_in[layer]) */
int sim_project_in(rssm_context *ctx, const sim_model *m, int layer, const float *x, int n, sim_bf16 *proj);
/* x += mix[n][HV*V] @ w_out[layer]  (f32 accumulation) */
int sim_project_out(rssm_context *ctx, const sim_model *m, int layer, const sim_bf16 *mix, int n, float *x);
/* next[i] = argmax(bf16(rmsnorm(x[i])) @ embed^T)  (next on the host) */
int sim_next_tokens(rssm_context *ctx, const sim_model *m, const float *x, int n, int32_t *next);

/* dst[r][0 .. width) = src[r][0 .. width) for r < rows, pitches and width in bytes, in the
 * context's memory (a 2-D copy on the context's stream on CUDA). */
int sim_copy2d(rssm_context *ctx, const sim_model *m, void *dst, size_t dpitch, const void *src, size_t spitch,
               size_t width, size_t rows);

/* Runs every dense part once at each row count 1..max_rows (layer 0, zero inputs), so that on
 * a GPU cuBLAS has chosen (and lazily loaded) its kernel for every shape before a run is timed:
 * otherwise the first run pays it and the second does not (H200, Qwen3-Next shapes: packed, run
 * first, spent 0.78 s in its admissions' dense parts at 4 layers, 0.27-0.33 s after the warm-up).
 * Nothing to do on a CPU context. 0 on success. */
int sim_model_warm(rssm_context *ctx, const sim_model *m);

/* FLOPs of the dense parts per token (for reporting). */
double sim_dense_flops_per_token(const sim_model *m);

#endif /* RSSM_SIM_MODEL_H */
