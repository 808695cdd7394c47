/*
 * sim_model.c — dense parts of the simulate model (see sim_model.h), on the CPU pool.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "replayssm_runtime.h"
#include "sim_model.h"

#ifdef RSSM_SIM_CUDA /* sim_cuda.cu */
int sim_gpu_init(sim_model *m, rssm_context *ctx, int max_rows);
void sim_gpu_free(sim_model *m);
const float *sim_gpu_A_log(const sim_model *m);
const float *sim_gpu_dt_bias(const sim_model *m);
int sim_gpu_embed(const sim_model *m, const int32_t *tokens, int n, float *x);
int sim_gpu_project_in(const sim_model *m, int layer, const float *x, int n, sim_bf16 *proj);
int sim_gpu_project_out(const sim_model *m, int layer, const sim_bf16 *mix, int n, float *x);
int sim_gpu_next_tokens(const sim_model *m, const float *x, int n, int32_t *next);
int sim_gpu_copy2d(const sim_model *m, void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                   size_t rows);
#define ON_GPU(m, call)                                                                                                \
    do {                                                                                                               \
        if ((m)->gpu) return call;                                                                                     \
    } while (0)
#else
#define ON_GPU(m, call) (void)0
#endif

/* ---- deterministic random numbers: splitmix64 + Box-Muller ---------------------------- */

static uint64_t next_u64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static double uniform01(uint64_t *s) { return ((next_u64(s) >> 11) + 0.5) * (1.0 / 9007199254740992.0); }

static float normal(uint64_t *s)
{
    return (float)(sqrt(-2.0 * log(uniform01(s))) * cos(6.283185307179586 * uniform01(s)));
}

static float round_bf16(float x) { return rssm_bf16_to_f32(rssm_f32_to_bf16(x)); }

/* normal(0, std) weights rounded to bf16 values */
static float *normal_matrix(uint64_t *s, size_t n, float std)
{
    float *w = aligned_alloc(64, (n * sizeof(float) + 63) / 64 * 64);
    if (w)
        for (size_t i = 0; i < n; i++)
            w[i] = round_bf16(normal(s) * std);
    return w;
}

int sim_model_init(sim_model *m, const sim_model_config *cfg, rssm_context *ctx, int max_rows)
{
    memset(m, 0, sizeof *m);
    m->cfg = *cfg;
    const rssm_layer *l = &cfg->layer;
    const int D = cfg->d_model, L = cfg->n_layers, HV = l->num_v_heads;
    const int gk = l->gate == RSSM_GATE_KDA ? l->head_k_dim : 1;
    m->off_q = 0;
    m->off_k = m->off_q + sim_pad(l->num_k_heads * l->head_k_dim);
    m->off_v = m->off_k + sim_pad(l->num_k_heads * l->head_k_dim);
    m->off_a = m->off_v + sim_pad(HV * l->head_v_dim);
    m->off_b = m->off_a + sim_pad(HV * gk);
    m->proj = m->off_b + sim_pad(HV);
    uint64_t s = cfg->seed;
    m->embed = normal_matrix(&s, (size_t)cfg->vocab * D, 1.0f);
    m->w_in = calloc(L, sizeof(float *));
    m->w_out = calloc(L, sizeof(float *));
    m->A_log = malloc(sizeof(float) * L * HV);
    m->dt_bias = malloc(sizeof(float) * L * HV * gk);
    if (!m->embed || !m->w_in || !m->w_out || !m->A_log || !m->dt_bias) return -1;
    for (int i = 0; i < L; i++) {
        m->w_in[i] = normal_matrix(&s, (size_t)D * m->proj, 1.0f / sqrtf((float)D));
        m->w_out[i] = normal_matrix(&s, (size_t)HV * l->head_v_dim * D, 0.5f / sqrtf((float)HV * l->head_v_dim));
        if (!m->w_in[i] || !m->w_out[i]) return -1;
        /* decays between about e^-0.02 and e^-0.5 per token: memory of tens of tokens */
        for (int h = 0; h < HV; h++)
            m->A_log[i * HV + h] = (float)log(1.0 + 15.0 * uniform01(&s));
        for (int j = 0; j < HV * gk; j++)
            m->dt_bias[i * HV * gk + j] = -4.0f + (float)uniform01(&s);
    }
    m->max_rows = max_rows;
    if (rssm_context_device(ctx) == RSSM_DEVICE_CUDA) {
#ifdef RSSM_SIM_CUDA
        return sim_gpu_init(m, ctx, max_rows);
#else
        return -1;
#endif
    }
    const int width = HV * l->head_v_dim > D ? HV * l->head_v_dim : D;
    m->scratch = malloc(sizeof(float) * (size_t)max_rows * width);
    return m->scratch ? 0 : -1;
}

const float *sim_A_log(const sim_model *m, int layer)
{
    const int HV = m->cfg.layer.num_v_heads;
#ifdef RSSM_SIM_CUDA
    if (m->gpu) return sim_gpu_A_log(m) + layer * HV;
#endif
    return m->A_log + layer * HV;
}

const float *sim_dt_bias(const sim_model *m, int layer)
{
    const rssm_layer *l = &m->cfg.layer;
    const int n = l->num_v_heads * (l->gate == RSSM_GATE_KDA ? l->head_k_dim : 1);
#ifdef RSSM_SIM_CUDA
    if (m->gpu) return sim_gpu_dt_bias(m) + layer * n;
#endif
    return m->dt_bias + layer * n;
}

void sim_model_free(sim_model *m)
{
#ifdef RSSM_SIM_CUDA
    sim_gpu_free(m);
#endif
    for (int i = 0; m->w_in && i < m->cfg.n_layers; i++)
        free(m->w_in[i]);
    for (int i = 0; m->w_out && i < m->cfg.n_layers; i++)
        free(m->w_out[i]);
    free(m->w_in), free(m->w_out), free(m->embed), free(m->A_log), free(m->dt_bias), free(m->scratch);
    memset(m, 0, sizeof *m);
}

int sim_embed(rssm_context *ctx, const sim_model *m, const int32_t *tokens, int n, float *x)
{
    (void)ctx;
    ON_GPU(m, sim_gpu_embed(m, tokens, n, x));
    const int D = m->cfg.d_model;
    for (int i = 0; i < n; i++)
        memcpy(x + (size_t)i * D, m->embed + (size_t)tokens[i] * D, sizeof(float) * D);
    return 0;
}

/* ---- out[n][P] = in[n][Din] @ W[Din][P], parallel over column blocks ---------------------
 * in f32 (holding bf16 values); out either f32, added to (out_f32), or rounded to bf16 (out_bf16) */

typedef struct matmul_job {
    const float *in, *w;
    float *out_f32;
    sim_bf16 *out_bf16;
    int n, din, p;
} matmul_job;

#define COLS 64

static void matmul_task(void *arg, int64_t begin, int64_t end, int thread)
{
    (void)thread;
    const matmul_job *j = arg;
    for (int64_t blk = begin; blk < end; blk++) {
        const int c0 = (int)blk * COLS, c1 = c0 + COLS < j->p ? c0 + COLS : j->p;
        for (int i = 0; i < j->n; i++) {
            float acc[COLS];
            for (int c = c0; c < c1; c++)
                acc[c - c0] = j->out_f32 ? j->out_f32[(size_t)i * j->p + c] : 0.0f;
            const float *x = j->in + (size_t)i * j->din;
            for (int d = 0; d < j->din; d++) {
                const float xd = x[d];
                const float *wr = j->w + (size_t)d * j->p;
                for (int c = c0; c < c1; c++)
                    acc[c - c0] += xd * wr[c];
            }
            for (int c = c0; c < c1; c++) {
                if (j->out_f32)
                    j->out_f32[(size_t)i * j->p + c] = acc[c - c0];
                else
                    j->out_bf16[(size_t)i * j->p + c] = rssm_f32_to_bf16(acc[c - c0]);
            }
        }
    }
}

static void matmul(rssm_context *ctx, const float *in, const float *w, float *out_f32, sim_bf16 *out_bf16, int n,
                   int din, int p)
{
    matmul_job j = {in, w, out_f32, out_bf16, n, din, p};
    rssm_parallel_for(ctx, (p + COLS - 1) / COLS, matmul_task, &j);
}

/* y = bf16(x / sqrt(mean(x^2) + 1e-6)): the GEMMs' bf16 input */
static void rmsnorm(const float *x, float *y, int d)
{
    double ss = 0;
    for (int i = 0; i < d; i++)
        ss += (double)x[i] * x[i];
    const float r = (float)(1.0 / sqrt(ss / d + 1e-6));
    for (int i = 0; i < d; i++)
        y[i] = round_bf16(x[i] * r);
}

int sim_project_in(rssm_context *ctx, const sim_model *m, int layer, const float *x, int n, sim_bf16 *proj)
{
    ON_GPU(m, sim_gpu_project_in(m, layer, x, n, proj));
    const int D = m->cfg.d_model;
    if (n > m->max_rows) return -1;
    float *h = m->scratch;
    for (int i = 0; i < n; i++)
        rmsnorm(x + (size_t)i * D, h + (size_t)i * D, D);
    matmul(ctx, h, m->w_in[layer], NULL, proj, n, D, m->proj);
    return 0;
}

int sim_project_out(rssm_context *ctx, const sim_model *m, int layer, const sim_bf16 *mix, int n, float *x)
{
    ON_GPU(m, sim_gpu_project_out(m, layer, mix, n, x));
    const rssm_layer *l = &m->cfg.layer;
    const size_t width = (size_t)l->num_v_heads * l->head_v_dim;
    if (n > m->max_rows) return -1;
    float *in = m->scratch;
    for (size_t i = 0; i < (size_t)n * width; i++)
        in[i] = rssm_bf16_to_f32(mix[i]);
    matmul(ctx, in, m->w_out[layer], x, NULL, n, (int)width, m->cfg.d_model);
    return 0;
}

typedef struct argmax_job {
    const sim_model *m;
    const float *x;
    int32_t *next;
} argmax_job;

static void argmax_task(void *arg, int64_t begin, int64_t end, int thread)
{
    (void)thread;
    const argmax_job *j = arg;
    const int D = j->m->cfg.d_model, V = j->m->cfg.vocab;
    float h[4096];
    for (int64_t i = begin; i < end; i++) {
        rmsnorm(j->x + i * D, h, D);
        int best = 0;
        float best_logit = -INFINITY;
        for (int v = 0; v < V; v++) {
            const float *e = j->m->embed + (size_t)v * D;
            float s = 0;
            for (int d = 0; d < D; d++)
                s += h[d] * e[d];
            if (s > best_logit) best_logit = s, best = v;
        }
        j->next[i] = best;
    }
}

int sim_next_tokens(rssm_context *ctx, const sim_model *m, const float *x, int n, int32_t *next)
{
    ON_GPU(m, sim_gpu_next_tokens(m, x, n, next));
    argmax_job j = {m, x, next};
    rssm_parallel_for(ctx, n, argmax_task, &j);
    return 0;
}

int sim_copy2d(rssm_context *ctx, const sim_model *m, void *dst, size_t dpitch, const void *src, size_t spitch,
               size_t width, size_t rows)
{
    (void)ctx;
    ON_GPU(m, sim_gpu_copy2d(m, dst, dpitch, src, spitch, width, rows));
    for (size_t r = 0; r < rows; r++)
        memcpy((char *)dst + r * dpitch, (const char *)src + r * spitch, width);
    return 0;
}

int sim_model_warm(rssm_context *ctx, const sim_model *m)
{
    if (!m->gpu) return 0; /* the host's matrix products have no per-shape set-up */
    const rssm_layer *l = &m->cfg.layer;
    const int n = m->max_rows;
    const size_t mix_row = (size_t)l->num_v_heads * l->head_v_dim;
    float *x = NULL;
    sim_bf16 *proj = NULL, *mix = NULL;
    int32_t *tokens = calloc((size_t)n, sizeof *tokens), *next = calloc((size_t)n, sizeof *next);
    int rc = !tokens || !next || rssm_mem_alloc(ctx, sizeof(float) * n * (size_t)m->cfg.d_model, (void **)&x) ||
             rssm_mem_alloc(ctx, sizeof(sim_bf16) * n * (size_t)m->proj, (void **)&proj) ||
             rssm_mem_alloc(ctx, sizeof(sim_bf16) * n * mix_row, (void **)&mix) ||
             rssm_mem_set(ctx, mix, 0, sizeof(sim_bf16) * n * mix_row);
    for (int rows = 1; rows <= n && !rc; rows++)
        rc = sim_embed(ctx, m, tokens, rows, x) || sim_project_in(ctx, m, 0, x, rows, proj) ||
             sim_project_out(ctx, m, 0, mix, rows, x) || sim_next_tokens(ctx, m, x, rows, next);
    rssm_mem_free(ctx, x), rssm_mem_free(ctx, proj), rssm_mem_free(ctx, mix);
    free(tokens), free(next);
    return rc ? -1 : 0;
}

double sim_dense_flops_per_token(const sim_model *m)
{
    const rssm_layer *l = &m->cfg.layer;
    const double D = m->cfg.d_model;
    return 2.0 * (m->cfg.n_layers * (D * m->proj + (double)l->num_v_heads * l->head_v_dim * D) + D * m->cfg.vocab);
}
