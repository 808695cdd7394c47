/*
 * dmma_rate.cu — the FP64 tensor-core instructions the verify window runs, measured on this GPU:
 * each f64 mma.sync shape's issue rate (every warp of full CTAs running independent chains) and
 * latency (one warp, one dependent chain), and whether the m16n8 shapes give each element the
 * bits of the m8n8k4 chain the K = V = 128 kernels run (decode_k128.cu, window_k128.cuh).
 *
 *   m8n8k4    the shape the kernels use: 256 FMAs per warp instruction, a warp holds 8 rows
 *   m16n8k4   sm_90: 512 FMAs, 16 rows
 *   m16n8k8   sm_90: 1024 FMAs, 16 rows, 8 entries per step
 *   m16n8k16  sm_90: 2048 FMAs
 *
 * Built as build/bench_dmma_rate on CUDA builds; no arguments. Prints one line per shape: warp
 * instructions per SM per cycle, FP64 FMAs per SM per cycle, TFLOP/s at the measured clock, and the
 * dependent chain's cycles per instruction; then the bit comparisons.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_check.h"

enum { S884, S1684, S1688, S16816, NSHAPE };
static const char *shape_name[NSHAPE] = {"m8n8k4", "m16n8k4", "m16n8k8", "m16n8k16"};
static const int shape_fma[NSHAPE] = {8 * 8 * 4, 16 * 8 * 4, 16 * 8 * 8, 16 * 8 * 16};

/* one warp instruction of shape S: d (4 values; m8n8k4 uses 2) += a (8; by shape) x b (4; by shape) */
template <int S> __device__ __forceinline__ void mma(double (&d)[4], const double (&a)[8], const double (&b)[4])
{
    if (S == S884)
        asm volatile("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0,%1}, {%2}, {%3}, {%0,%1};\n"
                     : "+d"(d[0]), "+d"(d[1])
                     : "d"(a[0]), "d"(b[0]));
    else if (S == S1684)
        asm volatile("mma.sync.aligned.m16n8k4.row.col.f64.f64.f64.f64 {%0,%1,%2,%3}, {%4,%5}, {%6}, "
                     "{%0,%1,%2,%3};\n"
                     : "+d"(d[0]), "+d"(d[1]), "+d"(d[2]), "+d"(d[3])
                     : "d"(a[0]), "d"(a[1]), "d"(b[0]));
    else if (S == S1688)
        asm volatile("mma.sync.aligned.m16n8k8.row.col.f64.f64.f64.f64 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                     "{%0,%1,%2,%3};\n"
                     : "+d"(d[0]), "+d"(d[1]), "+d"(d[2]), "+d"(d[3])
                     : "d"(a[0]), "d"(a[1]), "d"(a[2]), "d"(a[3]), "d"(b[0]), "d"(b[1]));
    else
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f64.f64.f64.f64 {%0,%1,%2,%3}, "
                     "{%4,%5,%6,%7,%8,%9,%10,%11}, {%12,%13,%14,%15}, {%0,%1,%2,%3};\n"
                     : "+d"(d[0]), "+d"(d[1]), "+d"(d[2]), "+d"(d[3])
                     : "d"(a[0]), "d"(a[1]), "d"(a[2]), "d"(a[3]), "d"(a[4]), "d"(a[5]), "d"(a[6]), "d"(a[7]),
                       "d"(b[0]), "d"(b[1]), "d"(b[2]), "d"(b[3]));
}

/* CH independent accumulators per warp, ITER rounds of one instruction on each; the sum is stored so
 * that nothing is dropped. cyc[blockIdx.x] (warp 0): the block's cycles. */
template <int S, int CH>
__global__ void __launch_bounds__(512) rate_kernel(int iter, double seed, double *out, long long *cyc)
{
    double a[8], b[4], d[CH][4];
#pragma unroll
    for (int i = 0; i < 8; i++)
        a[i] = seed * (threadIdx.x + i);
#pragma unroll
    for (int i = 0; i < 4; i++)
        b[i] = seed / (threadIdx.x + i + 1);
#pragma unroll
    for (int c = 0; c < CH; c++)
#pragma unroll
        for (int i = 0; i < 4; i++)
            d[c][i] = c + i;
    __syncthreads();
    const long long t0 = clock64();
    for (int it = 0; it < iter; it++)
#pragma unroll
        for (int c = 0; c < CH; c++)
            mma<S>(d[c], a, b);
    __syncthreads();
    const long long t1 = clock64();
    double s = 0.0;
#pragma unroll
    for (int c = 0; c < CH; c++)
        s += d[c][0] + d[c][1] + d[c][2] + d[c][3];
    out[blockIdx.x * blockDim.x + threadIdx.x] = s;
    if (threadIdx.x == 0) cyc[blockIdx.x] = t1 - t0;
}

/* the chain's cycles per instruction: one warp, one accumulator */
template <int S> static double latency(double *out, long long *cyc)
{
    const int iter = 4096;
    rate_kernel<S, 1><<<1, 32>>>(iter, 1e-3, out, cyc);
    CK(cudaDeviceSynchronize());
    long long c;
    CK(cudaMemcpy(&c, cyc, sizeof c, cudaMemcpyDeviceToHost));
    return (double)c / iter;
}

/* warp instructions per SM per cycle with every SM full (WARPS warps per SM, 8 chains each) */
template <int S> static void rate(int sms, double *out, long long *cyc, double *per_cycle, double *tflops)
{
    const int iter = 2048, CH = 8, threads = 512, per_sm = 2;
    rate_kernel<S, CH><<<sms * per_sm, threads>>>(iter, 1e-3, out, cyc); /* warm up */
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    CK(cudaEventRecord(e0));
    rate_kernel<S, CH><<<sms * per_sm, threads>>>(iter, 1e-3, out, cyc);
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    float ms;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    long long *c = (long long *)malloc(sizeof(long long) * sms * per_sm);
    CK(cudaMemcpy(c, cyc, sizeof(long long) * sms * per_sm, cudaMemcpyDeviceToHost));
    long long cmax = 0;
    for (int i = 0; i < sms * per_sm; i++)
        if (c[i] > cmax) cmax = c[i];
    free(c);
    const double instr_per_sm = (double)per_sm * threads / 32 * iter * CH;
    *per_cycle = instr_per_sm / (double)cmax; /* both CTAs of an SM run at once */
    *tflops = 2.0 * shape_fma[S] * instr_per_sm * sms / (ms * 1e-3) / 1e12;
    CK(cudaEventDestroy(e0));
    CK(cudaEventDestroy(e1));
}

/* Bits: random f32 values (as the kernels feed: f32 state and vectors widened to f64), the
 * product of a 16 x K block and a K x 8 block accumulated over K = 16 in steps of each shape, in
 * the same order of entries; out[shape][16][8]. */
__global__ void bits_kernel(const float *A, const float *B, const double *C, double *out)
{
    const int l = threadIdx.x, g = l >> 2, q = l & 3;
    /* m8n8k4 over two row halves, four k-steps */
    for (int half = 0; half < 2; half++) {
        double d[4] = {C[(8 * half + g) * 8 + 2 * q], C[(8 * half + g) * 8 + 2 * q + 1], 0, 0};
        for (int k0 = 0; k0 < 16; k0 += 4) {
            double a[8] = {A[(8 * half + g) * 16 + k0 + q]}, b[4] = {B[(k0 + q) * 8 + g]};
            mma<S884>(d, a, b);
        }
        out[0 * 128 + (8 * half + g) * 8 + 2 * q] = d[0], out[0 * 128 + (8 * half + g) * 8 + 2 * q + 1] = d[1];
    }
    double d[4];
    auto init = [&]() {
        d[0] = C[g * 8 + 2 * q], d[1] = C[g * 8 + 2 * q + 1];
        d[2] = C[(g + 8) * 8 + 2 * q], d[3] = C[(g + 8) * 8 + 2 * q + 1];
    };
    auto store = [&](int s) {
        out[s * 128 + g * 8 + 2 * q] = d[0], out[s * 128 + g * 8 + 2 * q + 1] = d[1];
        out[s * 128 + (g + 8) * 8 + 2 * q] = d[2], out[s * 128 + (g + 8) * 8 + 2 * q + 1] = d[3];
    };
    init();
    for (int k0 = 0; k0 < 16; k0 += 4) {
        double a[8] = {A[g * 16 + k0 + q], A[(g + 8) * 16 + k0 + q]}, b[4] = {B[(k0 + q) * 8 + g]};
        mma<S1684>(d, a, b);
    }
    store(1);
    init();
    for (int k0 = 0; k0 < 16; k0 += 8) {
        double a[8] = {A[g * 16 + k0 + q], A[(g + 8) * 16 + k0 + q], A[g * 16 + k0 + q + 4],
                       A[(g + 8) * 16 + k0 + q + 4]};
        double b[4] = {B[(k0 + q) * 8 + g], B[(k0 + q + 4) * 8 + g]};
        mma<S1688>(d, a, b);
    }
    store(2);
    init();
    {
        double a[8], b[4];
        for (int i = 0; i < 4; i++) {
            a[2 * i] = A[g * 16 + 4 * i + q], a[2 * i + 1] = A[(g + 8) * 16 + 4 * i + q];
            b[i] = B[(4 * i + q) * 8 + g];
        }
        mma<S16816>(d, a, b);
    }
    store(3);
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static float frand(float scale)
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return scale * ((float)(rng >> 40) / (float)(1 << 24) * 2.0f - 1.0f);
}

/* trials of random blocks; counts elements whose bits differ from m8n8k4's, and the f32 roundings
 * that differ (what the kernels keep) */
static void bits(int trials)
{
    float *A, *B;
    double *C, *out;
    CK(cudaMallocManaged(&A, 16 * 16 * sizeof(float)));
    CK(cudaMallocManaged(&B, 16 * 8 * sizeof(float)));
    CK(cudaMallocManaged(&C, 16 * 8 * sizeof(double)));
    CK(cudaMallocManaged(&out, 4 * 128 * sizeof(double)));
    long long diff[NSHAPE] = {0}, diff32[NSHAPE] = {0}, n = 0;
    for (int t = 0; t < trials; t++) {
        const float sa = t % 3 == 0 ? 1e-3f : t % 3 == 1 ? 1.0f : 300.0f;
        for (int i = 0; i < 256; i++)
            A[i] = frand(sa);
        for (int i = 0; i < 128; i++)
            B[i] = frand(1.0f), C[i] = (double)frand(sa);
        bits_kernel<<<1, 32>>>(A, B, C, out);
        CK(cudaDeviceSynchronize());
        for (int s = 1; s < NSHAPE; s++)
            for (int i = 0; i < 128; i++) {
                diff[s] += memcmp(&out[s * 128 + i], &out[i], sizeof(double)) != 0;
                diff32[s] += (float)out[s * 128 + i] != (float)out[i];
            }
        n += 128;
    }
    for (int s = 1; s < NSHAPE; s++)
        printf("bits %-9s vs m8n8k4 chain: %lld of %lld f64 results differ, %lld after rounding to f32\n",
               shape_name[s], diff[s], n, diff32[s]);
    CK(cudaFree(A));
    CK(cudaFree(B));
    CK(cudaFree(C));
    CK(cudaFree(out));
}

int main(void)
{
    int dev = 0, sms, clk_khz;
    CK(cudaGetDevice(&dev));
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    CK(cudaDeviceGetAttribute(&clk_khz, cudaDevAttrClockRate, dev));
    cudaDeviceProp p;
    CK(cudaGetDeviceProperties(&p, dev));
    printf("%s, %d SMs, max clock %.2f GHz\n", p.name, sms, clk_khz / 1e6);
    double *out;
    long long *cyc;
    CK(cudaMalloc(&out, sizeof(double) * sms * 2 * 512));
    CK(cudaMalloc(&cyc, sizeof(long long) * sms * 2));
    printf("%-9s %14s %16s %9s %16s\n", "shape", "instr/SM/cyc", "FP64 FMA/SM/cyc", "TFLOP/s", "chain cyc/instr");
    double pc[NSHAPE], tf[NSHAPE], lat[NSHAPE];
    rate<S884>(sms, out, cyc, &pc[0], &tf[0]), lat[0] = latency<S884>(out, cyc);
    rate<S1684>(sms, out, cyc, &pc[1], &tf[1]), lat[1] = latency<S1684>(out, cyc);
    rate<S1688>(sms, out, cyc, &pc[2], &tf[2]), lat[2] = latency<S1688>(out, cyc);
    rate<S16816>(sms, out, cyc, &pc[3], &tf[3]), lat[3] = latency<S16816>(out, cyc);
    for (int s = 0; s < NSHAPE; s++)
        printf("%-9s %14.4f %16.1f %9.2f %16.1f\n", shape_name[s], pc[s], pc[s] * shape_fma[s], tf[s], lat[s]);
    bits(3000);
    CK(cudaFree(out));
    CK(cudaFree(cyc));
    return 0;
}
