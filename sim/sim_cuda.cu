/*
 * sim_cuda.cu — the dense parts of the simulate model on the GPU (sim_model.h), so that
 * `replayssm simulate --device cuda` measures the runtime, not host matrix products.
 * Projections and logits are cuBLAS GEMMs on bf16 tensor cores with f32 accumulation (weights
 * and GEMM inputs bf16, as sim_model.h defines the model; cuBLAS's default math mode, so a GEMM
 * with a bf16 output may round split-K partial sums to bf16 before adding them); RMSNorm (f32,
 * rounded to bf16 on the way out), embedding gather and argmax are small kernels. Everything runs
 * on the context's stream. The host's f32 weights are freed once uploaded.
 *
 * Row-major matrices seen by column-major cuBLAS: out[n][P] = in[n][D] @ W[D][P] is
 * out^T (P x n) = W^T (P x D) * in^T (D x n) with leading dimensions P, D, P.
 */
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdlib.h>

#include "replayssm_runtime.h"
#include "sim_model.h"

typedef struct sim_gpu {
    cublasHandle_t blas;
    cudaStream_t stream;
    __nv_bfloat16 *embed;          /* [vocab][D] */
    __nv_bfloat16 **w_in, **w_out; /* per layer, device */
    float *A_log, *dt_bias;
    __nv_bfloat16 *h;       /* scratch [rows][D]: rmsnorm(x) in bf16 */
    float *logits;          /* scratch [rows][vocab] */
    int32_t *tokens, *next; /* [rows] */
    int rows;
} sim_gpu;

static int upload_new(const float *host, size_t n, float **dev)
{
    if (cudaMalloc((void **)dev, n * sizeof(float)) != cudaSuccess) return -1;
    return cudaMemcpy(*dev, host, n * sizeof(float), cudaMemcpyHostToDevice) == cudaSuccess ? 0 : -1;
}

/* host f32 weights (bf16 values) -> a new device bf16 array */
static int upload_bf16(const float *host, size_t n, __nv_bfloat16 **dev)
{
    __nv_bfloat16 *tmp = (__nv_bfloat16 *)malloc(n * sizeof(__nv_bfloat16));
    if (!tmp) return -1;
    for (size_t i = 0; i < n; i++)
        tmp[i] = __float2bfloat16_rn(host[i]);
    int rc = cudaMalloc((void **)dev, n * sizeof(__nv_bfloat16)) != cudaSuccess ||
             cudaMemcpy(*dev, tmp, n * sizeof(__nv_bfloat16), cudaMemcpyHostToDevice) != cudaSuccess;
    free(tmp);
    return rc ? -1 : 0;
}

extern "C" int sim_gpu_init(sim_model *m, rssm_context *ctx, int max_rows)
{
    const rssm_layer *l = &m->cfg.layer;
    const int D = m->cfg.d_model, HV = l->num_v_heads, gk = l->gate == RSSM_GATE_KDA ? l->head_k_dim : 1;
    sim_gpu *g = (sim_gpu *)calloc(1, sizeof *g);
    if (!g) return -1;
    m->gpu = g;
    g->stream = (cudaStream_t)rssm_context_stream(ctx);
    g->rows = max_rows;
    if (cublasCreate(&g->blas) != CUBLAS_STATUS_SUCCESS) return -1;
    cublasSetStream(g->blas, g->stream);
    g->w_in = (__nv_bfloat16 **)calloc(m->cfg.n_layers, sizeof(__nv_bfloat16 *));
    g->w_out = (__nv_bfloat16 **)calloc(m->cfg.n_layers, sizeof(__nv_bfloat16 *));
    if (!g->w_in || !g->w_out) return -1;
    if (upload_bf16(m->embed, (size_t)m->cfg.vocab * D, &g->embed)) return -1;
    for (int i = 0; i < m->cfg.n_layers; i++) {
        if (upload_bf16(m->w_in[i], (size_t)D * m->proj, &g->w_in[i])) return -1;
        if (upload_bf16(m->w_out[i], (size_t)HV * l->head_v_dim * D, &g->w_out[i])) return -1;
    }
    /* the device holds the weights now: the host copies (f32, the larger part of host memory
     * at 36 layers) go; A_log and dt_bias stay (the tensor-parallel shards slice them) */
    for (int i = 0; i < m->cfg.n_layers; i++) {
        free(m->w_in[i]), free(m->w_out[i]);
        m->w_in[i] = m->w_out[i] = NULL;
    }
    free(m->embed);
    m->embed = NULL;
    if (upload_new(m->A_log, (size_t)m->cfg.n_layers * HV, &g->A_log)) return -1;
    if (upload_new(m->dt_bias, (size_t)m->cfg.n_layers * HV * gk, &g->dt_bias)) return -1;
    if (cudaMalloc((void **)&g->h, sizeof(__nv_bfloat16) * (size_t)max_rows * D) != cudaSuccess) return -1;
    if (cudaMalloc((void **)&g->logits, sizeof(float) * (size_t)max_rows * m->cfg.vocab) != cudaSuccess) return -1;
    if (cudaMalloc((void **)&g->tokens, sizeof(int32_t) * max_rows) != cudaSuccess) return -1;
    if (cudaMalloc((void **)&g->next, sizeof(int32_t) * max_rows) != cudaSuccess) return -1;
    return 0;
}

extern "C" void sim_gpu_free(sim_model *m)
{
    sim_gpu *g = (sim_gpu *)m->gpu;
    if (!g) return;
    for (int i = 0; i < m->cfg.n_layers; i++) {
        if (g->w_in) cudaFree(g->w_in[i]);
        if (g->w_out) cudaFree(g->w_out[i]);
    }
    free(g->w_in), free(g->w_out);
    cudaFree(g->embed), cudaFree(g->A_log), cudaFree(g->dt_bias), cudaFree(g->h), cudaFree(g->logits);
    cudaFree(g->tokens), cudaFree(g->next);
    if (g->blas) cublasDestroy(g->blas);
    free(g);
    m->gpu = NULL;
}

extern "C" const float *sim_gpu_A_log(const sim_model *m) { return ((sim_gpu *)m->gpu)->A_log; }
extern "C" const float *sim_gpu_dt_bias(const sim_model *m) { return ((sim_gpu *)m->gpu)->dt_bias; }

/* x[i] = embed[tokens[i]] */
__global__ void gather_kernel(const __nv_bfloat16 *embed, const int32_t *tokens, int D, float *x)
{
    const int i = blockIdx.x;
    for (int d = threadIdx.x; d < D; d += blockDim.x)
        x[(size_t)i * D + d] = __bfloat162float(embed[(size_t)tokens[i] * D + d]);
}

/* y[i] = bf16(x[i] / sqrt(mean(x[i]^2) + 1e-6)), one block per row */
__global__ void rmsnorm_kernel(const float *x, __nv_bfloat16 *y, int D)
{
    __shared__ float part[32];
    const float *xr = x + (size_t)blockIdx.x * D;
    float s = 0;
    for (int d = threadIdx.x; d < D; d += blockDim.x)
        s += xr[d] * xr[d];
    for (int o = 16; o > 0; o >>= 1)
        s += __shfl_xor_sync(0xffffffffu, s, o);
    if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = s;
    __syncthreads();
    if (threadIdx.x < 32) {
        s = threadIdx.x < blockDim.x / 32 ? part[threadIdx.x] : 0.0f;
        for (int o = 16; o > 0; o >>= 1)
            s += __shfl_xor_sync(0xffffffffu, s, o);
        if (threadIdx.x == 0) part[0] = rsqrtf(s / D + 1e-6f);
    }
    __syncthreads();
    for (int d = threadIdx.x; d < D; d += blockDim.x)
        y[(size_t)blockIdx.x * D + d] = __float2bfloat16_rn(xr[d] * part[0]);
}

/* next[i] = argmax_v logits[i][v] (lowest index on ties), one block per row */
__global__ void argmax_kernel(const float *logits, int V, int32_t *next)
{
    __shared__ float bv[32];
    __shared__ int bi[32];
    const float *lr = logits + (size_t)blockIdx.x * V;
    float best = -INFINITY;
    int idx = 0x7fffffff;
    for (int v = threadIdx.x; v < V; v += blockDim.x)
        if (lr[v] > best) best = lr[v], idx = v;
    for (int o = 16; o > 0; o >>= 1) {
        const float ob = __shfl_xor_sync(0xffffffffu, best, o);
        const int oi = __shfl_xor_sync(0xffffffffu, idx, o);
        if (ob > best || (ob == best && oi < idx)) best = ob, idx = oi;
    }
    if ((threadIdx.x & 31) == 0) bv[threadIdx.x >> 5] = best, bi[threadIdx.x >> 5] = idx;
    __syncthreads();
    if (threadIdx.x == 0) {
        for (int w = 1; w < (int)blockDim.x / 32; w++)
            if (bv[w] > best || (bv[w] == best && bi[w] < idx)) best = bv[w], idx = bi[w];
        if (bv[0] > best || (bv[0] == best && bi[0] < idx)) best = bv[0], idx = bi[0];
        next[blockIdx.x] = idx;
    }
}

/* out[n][p] (= or +=, beta 0 or 1) in[n][din] @ w[din][p]: bf16 inputs, f32 accumulation, out of
 * type out_type (CUDA_R_16BF or CUDA_R_32F); op_w CUBLAS_OP_T reads w as [p][din] (the logits) */
static int gemm(sim_gpu *g, cublasOperation_t op_w, const void *in, const void *w, void *out, cudaDataType out_type,
                int n, int din, int p, float beta)
{
    const float alpha = 1.0f;
    const int ldw = op_w == CUBLAS_OP_N ? p : din;
    return cublasGemmEx(g->blas, op_w, CUBLAS_OP_N, p, n, din, &alpha, w, CUDA_R_16BF, ldw, in, CUDA_R_16BF, din, &beta,
                        out, out_type, p, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_SUCCESS
               ? 0
               : -1;
}

extern "C" int sim_gpu_embed(const sim_model *m, const int32_t *tokens, int n, float *x)
{
    sim_gpu *g = (sim_gpu *)m->gpu;
    if (cudaMemcpyAsync(g->tokens, tokens, sizeof(int32_t) * n, cudaMemcpyHostToDevice, g->stream) != cudaSuccess)
        return -1;
    gather_kernel<<<n, 256, 0, g->stream>>>(g->embed, g->tokens, m->cfg.d_model, x);
    return cudaGetLastError() == cudaSuccess ? 0 : -1;
}

extern "C" int sim_gpu_project_in(const sim_model *m, int layer, const float *x, int n, sim_bf16 *proj)
{
    sim_gpu *g = (sim_gpu *)m->gpu;
    rmsnorm_kernel<<<n, 256, 0, g->stream>>>(x, g->h, m->cfg.d_model);
    return gemm(g, CUBLAS_OP_N, g->h, g->w_in[layer], proj, CUDA_R_16BF, n, m->cfg.d_model, m->proj, 0.0f);
}

extern "C" int sim_gpu_project_out(const sim_model *m, int layer, const sim_bf16 *mix, int n, float *x)
{
    sim_gpu *g = (sim_gpu *)m->gpu;
    const rssm_layer *l = &m->cfg.layer;
    return gemm(g, CUBLAS_OP_N, mix, g->w_out[layer], x, CUDA_R_32F, n, l->num_v_heads * l->head_v_dim, m->cfg.d_model,
                1.0f);
}

extern "C" int sim_gpu_next_tokens(const sim_model *m, const float *x, int n, int32_t *next)
{
    sim_gpu *g = (sim_gpu *)m->gpu;
    const int D = m->cfg.d_model, V = m->cfg.vocab;
    rmsnorm_kernel<<<n, 256, 0, g->stream>>>(x, g->h, D);
    if (gemm(g, CUBLAS_OP_T, g->h, g->embed, g->logits, CUDA_R_32F, n, D, V, 0.0f)) return -1;
    argmax_kernel<<<n, 256, 0, g->stream>>>(g->logits, V, g->next);
    if (cudaMemcpyAsync(next, g->next, sizeof(int32_t) * n, cudaMemcpyDeviceToHost, g->stream) != cudaSuccess)
        return -1;
    return cudaStreamSynchronize(g->stream) == cudaSuccess ? 0 : -1;
}

/* dst[r][0 .. width) = src[r][0 .. width), device to device on the model's stream (the slice of
 * the fused projection and the reorder of gathered mixer outputs in `simulate --tp`) */
extern "C" int sim_gpu_copy2d(const sim_model *m, void *dst, size_t dpitch, const void *src, size_t spitch,
                              size_t width, size_t rows)
{
    sim_gpu *g = (sim_gpu *)m->gpu;
    if (rows == 0 || width == 0) return 0;
    return cudaMemcpy2DAsync(dst, dpitch, src, spitch, width, rows, cudaMemcpyDeviceToDevice, g->stream) == cudaSuccess
               ? 0
               : -1;
}
