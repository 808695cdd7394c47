/*
 * dense_gemm.cu — times the dense GEMMs of `replayssm simulate --model qwen3-next` at decode
 * shapes: cuBLAS SGEMM on TF32 tensor cores (f32 weights, what simulate used before 6e5ac4e)
 * against cublasGemmEx with bf16 weights and inputs and f32 accumulation, output f32 or bf16
 * (what it uses now). Built as build/bench_dense_gemm on CUDA builds; prints one table.
 *
 * Shapes (row-major, out[n][p] = in[n][din] @ W[din][p]): the fused input projection 2048 x 8256,
 * the output projection 4096 x 2048 and the logits 2048 x 2048 (timed like the others, W not
 * transposed; simulate reads its tied embedding transposed). The weights rotate over NCOPY
 * copies (8-32 MiB each in bf16, 64 MiB or more in all against the 50 MB L2) so that they mostly
 * come from DRAM, as in a many-layer step. Inputs and weights are zeros: where a shape is bound
 * by arithmetic rather than by the weights' bytes, the times may be optimistic.
 */
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <stdio.h>

enum { NCOPY = 8, REPS = 20 };

typedef struct gemm_case {
    cublasHandle_t blas;
    int n, din, p, mode; /* mode 0: SGEMM TF32; 1: bf16 -> f32; 2: bf16 -> bf16 */
    void *w[NCOPY], *x, *y;
} gemm_case;

static int run(const gemm_case *g, int copy)
{
    const float one = 1.0f, zero = 0.0f;
    cublasStatus_t st;
    if (g->mode == 0)
        st = cublasSgemm(g->blas, CUBLAS_OP_N, CUBLAS_OP_N, g->p, g->n, g->din, &one, (const float *)g->w[copy], g->p,
                         (const float *)g->x, g->din, &zero, (float *)g->y, g->p);
    else
        st = cublasGemmEx(g->blas, CUBLAS_OP_N, CUBLAS_OP_N, g->p, g->n, g->din, &one, g->w[copy], CUDA_R_16BF, g->p,
                          g->x, CUDA_R_16BF, g->din, &zero, g->y, g->mode == 1 ? CUDA_R_32F : CUDA_R_16BF, g->p,
                          CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    return st == CUBLAS_STATUS_SUCCESS;
}

/* µs per GEMM, averaged over REPS rounds of NCOPY GEMMs after one warm-up round; -1 on error */
static float time_case(gemm_case *g, cudaStream_t s)
{
    const size_t es = g->mode == 0 ? 4 : 2;
    int ok = 1;
    for (int i = 0; i < NCOPY; i++)
        ok &= cudaMalloc(&g->w[i], (size_t)g->din * g->p * es) == cudaSuccess &&
              cudaMemset(g->w[i], 0, (size_t)g->din * g->p * es) == cudaSuccess;
    ok &= cudaMalloc(&g->x, (size_t)g->din * g->n * es) == cudaSuccess &&
          cudaMemset(g->x, 0, (size_t)g->din * g->n * es) == cudaSuccess &&
          cudaMalloc(&g->y, (size_t)g->p * g->n * 4) == cudaSuccess;
    float ms = -1;
    cudaEvent_t e0, e1;
    if (ok && cudaEventCreate(&e0) == cudaSuccess && cudaEventCreate(&e1) == cudaSuccess) {
        for (int i = 0; i < NCOPY; i++)
            ok &= run(g, i);
        cudaEventRecord(e0, s);
        for (int r = 0; r < REPS; r++)
            for (int i = 0; i < NCOPY; i++)
                ok &= run(g, i);
        cudaEventRecord(e1, s);
        if (cudaEventSynchronize(e1) == cudaSuccess && cudaGetLastError() == cudaSuccess && ok)
            cudaEventElapsedTime(&ms, e0, e1); /* a refused GEMM leaves -1, printed as such */
        cudaEventDestroy(e0), cudaEventDestroy(e1);
    }
    for (int i = 0; i < NCOPY; i++)
        cudaFree(g->w[i]);
    cudaFree(g->x), cudaFree(g->y);
    return ms < 0 ? -1 : ms * 1000.0f / (REPS * NCOPY);
}

int main(void)
{
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) return printf("no CUDA device\n"), 0;
    cublasHandle_t blas;
    cudaStream_t s;
    if (cublasCreate(&blas) != CUBLAS_STATUS_SUCCESS || cudaStreamCreate(&s) != cudaSuccess) return 1;
    cublasSetStream(blas, s);
    cublasSetMathMode(blas, CUBLAS_TF32_TENSOR_OP_MATH);
    const int shapes[3][2] = {{2048, 8256}, {4096, 2048}, {2048, 2048}};
    const int rows[] = {1, 8, 64, 211, 256, 512};
    printf("# µs per GEMM (weights rotating over %d copies)\n", NCOPY);
    printf("%-5s %-5s %-6s %14s %13s %14s\n", "n", "din", "p", "sgemm-tf32 us", "bf16->f32 us", "bf16->bf16 us");
    for (int r = 0; r < (int)(sizeof rows / sizeof rows[0]); r++)
        for (int k = 0; k < 3; k++) {
            float t[3];
            for (int mode = 0; mode < 3; mode++) {
                gemm_case g = {blas, rows[r], shapes[k][0], shapes[k][1], mode, {0}, 0, 0};
                t[mode] = time_case(&g, s);
            }
            printf("%-5d %-5d %-6d %14.1f %13.1f %14.1f\n", rows[r], shapes[k][0], shapes[k][1], t[0], t[1], t[2]);
        }
    cublasDestroy(blas);
    return 0;
}
