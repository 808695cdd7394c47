/*
 * timing_cuda.cu — timing.h on CUDA contexts: the work captured into a CUDA graph on the
 * context's stream and replayed between CUDA events; copy and triad kernels for the bandwidth.
 */
#include <cstdarg>
#include <cstdio>

#include <cuda_runtime.h>

#include "timing.h"

/* prints what failed (the benchmarks report it) and returns the status */
static rssm_status fail(rssm_status status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return status;
}

static rssm_status cuda_fail(cudaError_t e, const char *what)
{
    return fail(RSSM_ERROR_DEVICE, "%s: %s (%s)", what, cudaGetErrorString(e), cudaGetErrorName(e));
}

#define CU(call, what)                                                                                                 \
    do {                                                                                                               \
        cudaError_t e_ = (call);                                                                                       \
        if (e_ != cudaSuccess) return cuda_fail(e_, what);                                                             \
    } while (0)

/* the context's device made current */
static rssm_status set_device(rssm_context *ctx, const char *who)
{
    rssm_context_info info;
    rssm_context_get_info(ctx, &info);
    CU(cudaSetDevice(info.device_ordinal), who);
    return RSSM_OK;
}

/* captures `work` on the context's stream and instantiates it (messages name `who`) */
static rssm_status capture(rssm_context *ctx, bench_work work, void *arg, cudaGraphExec_t *exec, const char *who)
{
    cudaStream_t st = (cudaStream_t)rssm_context_stream(ctx);
    cudaGraph_t g = NULL;
    rssm_status rs = set_device(ctx, who);
    if (rs != RSSM_OK) return rs;
    CU(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal), who);
    const int bad = work(arg, (void *)st);
    const cudaError_t e = cudaStreamEndCapture(st, &g);
    if (bad) {
        if (g) cudaGraphDestroy(g);
        return fail(RSSM_ERROR_DEVICE, "%s: the captured work failed: %s", who, rssm_last_error());
    }
    if (e != cudaSuccess) return cuda_fail(e, who);
    const cudaError_t ei = cudaGraphInstantiate(exec, g, 0);
    cudaGraphDestroy(g);
    if (ei != cudaSuccess) return cuda_fail(ei, who);
    return RSSM_OK;
}

extern "C" rssm_status bench_graph_capture_cuda(rssm_context *ctx, bench_work work, void *arg, void **exec)
{
    cudaGraphExec_t ge = NULL;
    const rssm_status rs = capture(ctx, work, arg, &ge, "bench_graph_capture");
    *exec = ge;
    return rs;
}

extern "C" rssm_status bench_graph_launch_cuda(rssm_context *ctx, void *exec)
{
    const rssm_status rs = set_device(ctx, "bench_graph_launch");
    if (rs != RSSM_OK) return rs;
    CU(cudaGraphLaunch((cudaGraphExec_t)exec, (cudaStream_t)rssm_context_stream(ctx)), "bench_graph_launch");
    return RSSM_OK;
}

extern "C" void bench_graph_free_cuda(void *exec) { cudaGraphExecDestroy((cudaGraphExec_t)exec); }

extern "C" rssm_status bench_time_cuda(rssm_context *ctx, bench_work work, void *arg, int graph, int warmup, int reps,
                                       double *us_per_rep)
{
    rssm_context_info info;
    rssm_context_get_info(ctx, &info);
    cudaStream_t st = (cudaStream_t)rssm_context_stream(ctx);
    cudaGraphExec_t ge = NULL;
    cudaEvent_t e0 = NULL, e1 = NULL;
    rssm_status rs = RSSM_OK;
    cudaError_t e;
    CU(cudaSetDevice(info.device_ordinal), "bench_time");
    if (graph && (rs = capture(ctx, work, arg, &ge, "bench_time")) != RSSM_OK) return rs;
#define RUN_ONCE() (graph ? (cudaGraphLaunch(ge, st) == cudaSuccess ? 0 : 1) : work(arg, (void *)st))
    if ((e = cudaEventCreate(&e0)) != cudaSuccess || (e = cudaEventCreate(&e1)) != cudaSuccess) {
        rs = cuda_fail(e, "bench_time: events");
        goto done;
    }
    for (int i = 0; i < warmup; i++)
        if (RUN_ONCE()) {
            rs = fail(RSSM_ERROR_DEVICE, "bench_time: the timed work failed");
            goto done;
        }
    cudaEventRecord(e0, st);
    for (int i = 0; i < reps; i++)
        if (RUN_ONCE()) {
            rs = fail(RSSM_ERROR_DEVICE, "bench_time: the timed work failed");
            goto done;
        }
    cudaEventRecord(e1, st);
    if ((e = cudaEventSynchronize(e1)) != cudaSuccess) {
        rs = cuda_fail(e, "bench_time");
        goto done;
    }
    {
        float ms = 0;
        cudaEventElapsedTime(&ms, e0, e1);
        *us_per_rep = ms * 1e3 / reps;
    }
    if ((e = cudaGetLastError()) != cudaSuccess) rs = cuda_fail(e, "bench_time");
done:
#undef RUN_ONCE
    if (e0) cudaEventDestroy(e0);
    if (e1) cudaEventDestroy(e1);
    if (ge) cudaGraphExecDestroy(ge);
    return rs;
}

/* copy a[i] = b[i] and triad a[i] = b[i] + s c[i], 16-byte accesses, grid-stride */
static __global__ void bw_copy_kernel(uint4 *__restrict__ a, const uint4 *__restrict__ b, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        a[i] = b[i];
}

static __global__ void bw_triad_kernel(float4 *__restrict__ a, const float4 *__restrict__ b,
                                       const float4 *__restrict__ c, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        const float4 x = b[i], y = c[i];
        a[i] = make_float4(x.x + 3.0f * y.x, x.y + 3.0f * y.y, x.z + 3.0f * y.z, x.w + 3.0f * y.w);
    }
}

extern "C" rssm_status bench_bandwidth_cuda(rssm_context *ctx, size_t bytes, double *copy_gbps, double *triad_gbps)
{
    rssm_context_info info;
    rssm_context_get_info(ctx, &info);
    cudaStream_t st = (cudaStream_t)rssm_context_stream(ctx);
    const size_t n = bytes / 16;
    void *a = NULL, *b = NULL, *c = NULL;
    cudaEvent_t e0 = NULL, e1 = NULL;
    rssm_status rs = RSSM_OK;
    CU(cudaSetDevice(info.device_ordinal), "bench_bandwidth");
    if (cudaMalloc(&a, n * 16) != cudaSuccess || cudaMalloc(&b, n * 16) != cudaSuccess ||
        cudaMalloc(&c, n * 16) != cudaSuccess) {
        cudaGetLastError();
        cudaFree(a), cudaFree(b), cudaFree(c);
        return fail(RSSM_ERROR_OUT_OF_MEMORY, "bench_bandwidth: 3 x %zu bytes", bytes);
    }
    cudaMemsetAsync(a, 0, n * 16, st);
    cudaMemsetAsync(b, 0x3f, n * 16, st);
    cudaMemsetAsync(c, 0x40, n * 16, st);
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    const int grid = info.multiprocessors * 8;
    for (int triad = 0; triad <= 1; triad++) {
        float best = 1e30f;
        for (int rep = 0; rep < 8; rep++) {
            cudaEventRecord(e0, st);
            if (triad)
                bw_triad_kernel<<<grid, 256, 0, st>>>((float4 *)a, (const float4 *)b, (const float4 *)c, n);
            else
                bw_copy_kernel<<<grid, 256, 0, st>>>((uint4 *)a, (const uint4 *)b, n);
            cudaEventRecord(e1, st);
            cudaEventSynchronize(e1);
            float ms = 0;
            cudaEventElapsedTime(&ms, e0, e1);
            if (rep > 0 && ms < best) best = ms;
        }
        const double moved = (triad ? 3.0 : 2.0) * (double)n * 16;
        if (triad && triad_gbps) *triad_gbps = moved / (best * 1e6);
        if (!triad && copy_gbps) *copy_gbps = moved / (best * 1e6);
    }
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) rs = cuda_fail(e, "bench_bandwidth");
    cudaEventDestroy(e0), cudaEventDestroy(e1);
    cudaFree(a), cudaFree(b), cudaFree(c);
    return rs;
}
