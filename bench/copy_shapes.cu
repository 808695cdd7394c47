/*
 * copy_shapes.cu — which launch shape moves a packed decode step's bytes fastest: kernels that
 * read each row's slot, then their part of its 2 MiB state, and write it back (no arithmetic),
 * over the shapes the public decode kernels use, launched as one CUDA graph of many layer calls
 * over states that do not stay in L2, timed per call.
 *
 * Why: FLA's V-first GDN decode (one warp per CTA, 8 rows of 128 channels, 4 KiB; lane l holds
 * channels l, l + 32, l + 64, l + 96 of each row: 32-bit loads, 128 bytes a warp instruction,
 * no cache hints; 64 registers, so 32 warps per SM) takes 512.9 us at GDN B = 512 (4.19 TB/s),
 * while `bench_latency_floor`'s copy in packed decode's shape (256-thread CTAs of 32 KiB, 16-byte
 * loads) takes 531.7 and our packed decode 526.6 with consecutive slots. This sweep separates
 * the shape's parts:
 *   W      warps per CTA (8 rows each): 1 (FLA), 2, 4, 8 (packed decode from B = 3);
 *   vec    4: a lane's 4 consecutive channels of each of its warp's 8 rows, 8 loads of 16 bytes
 *          (our kernels' lanes); 1: channels l + 32 j, 32 loads of 4 bytes (FLA's);
 *   cap    resident warps per SM as the copy's own registers allow (-; with 1 warp the limit of
 *          32 CTAs per SM caps it at 32 already), or capped at 32, the decode kernels' count at 64
 *          registers a thread: by registers held to about 64 (regs), or by dynamic shared memory
 *          (smem), which also shrinks the L1 to what shared memory leaves (about 28 KiB);
 *   hint   cs: loads and stores evict-first (__ldcs / __stcs, as our kernels), or none (FLA);
 *   order  seq: each call's rows in consecutive slots; rnd: B slots of a pool in random order.
 *
 * Built as build/bench_copy_shapes on CUDA builds: bench_copy_shapes [B ...] (default 16 64
 * 512); prints one line per shape and B: µs per layer call, TB/s (read + write), resident warps
 * per SM.
 */
#include <stdio.h>
#include <stdlib.h>

#include "cuda_check.h"

enum { HV = 32, ROW_FLOATS = HV * 128 * 128, ROW_BYTES = ROW_FLOATS * 4, NODES = 128 };
/* pads that bring the copy to about 64 registers a thread (cap "regs", load_pads) */
enum { PAD_REGS = 24 };

struct shape_args {
    float *state;     /* slots x ROW_FLOATS */
    const int *slot;  /* [B] this call's slots */
    const float *pad; /* PAD_REGS zeros (load_pads) */
};

/* Plain or evict-first (.cs) global loads and stores, in asm so that the compiler keeps a store of
 * the value just loaded from the same address */
template <bool CS> __device__ __forceinline__ float4 ld(const float4 *p)
{
    float4 v;
    if (CS)
        asm volatile("ld.global.cs.v4.f32 {%0, %1, %2, %3}, [%4];"
                     : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
                     : "l"(p));
    else
        asm volatile("ld.global.v4.f32 {%0, %1, %2, %3}, [%4];" : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "l"(p));
    return v;
}
template <bool CS> __device__ __forceinline__ float ld(const float *p)
{
    float v;
    if (CS)
        asm volatile("ld.global.cs.f32 %0, [%1];" : "=f"(v) : "l"(p));
    else
        asm volatile("ld.global.f32 %0, [%1];" : "=f"(v) : "l"(p));
    return v;
}
template <bool CS> __device__ __forceinline__ void st(float4 *p, float4 v)
{
    if (CS)
        asm volatile("st.global.cs.v4.f32 [%0], {%1, %2, %3, %4};" ::"l"(p), "f"(v.x), "f"(v.y), "f"(v.z), "f"(v.w)
                     : "memory");
    else
        asm volatile("st.global.v4.f32 [%0], {%1, %2, %3, %4};" ::"l"(p), "f"(v.x), "f"(v.y), "f"(v.z), "f"(v.w)
                     : "memory");
}
template <bool CS> __device__ __forceinline__ void st(float *p, float v)
{
    if (CS)
        asm volatile("st.global.cs.f32 [%0], %1;" ::"l"(p), "f"(v) : "memory");
    else
        asm volatile("st.global.f32 [%0], %1;" ::"l"(p), "f"(v) : "memory");
}

/* 0 (the states are zeros) once every value of x has arrived: the stores wait for all the loads,
 * as a decode kernel's wait for its rows' sums, and ptxas cannot move a store before a load */
template <int N> __device__ __forceinline__ float zero_after(const float (&x)[N])
{
    float z = 0.0f;
#pragma unroll
    for (int i = 0; i < N; i++)
        z += x[i];
    return z * 0.0f;
}
template <int N> __device__ __forceinline__ float zero_after(const float4 (&x)[N])
{
    float z = 0.0f;
#pragma unroll
    for (int i = 0; i < N; i++)
        z += x[i].x + x[i].y + x[i].z + x[i].w;
    return z * 0.0f;
}

typedef void (*kernel_fn)(struct shape_args);

/* Pads: PAD values loaded from `pad` with the state and multiplied into the zero once it has
 * arrived, so that they stay live in registers while it is in flight (ptxas cannot reload them
 * later: the stores may alias); the kernel then takes the decode kernels' 64 registers a thread
 * (ptxas -v), and the registers, not shared memory, cap the resident warps */
template <int PAD> __device__ __forceinline__ void load_pads(const float *pad, float (&r)[PAD > 0 ? PAD : 1])
{
#pragma unroll
    for (int i = 0; i < PAD; i++)
        r[i] = ld<false>(pad + i);
}

/* grid (4096 / (8 W), B), 32 W threads: warp w of CTA x owns rows (x W + w) 8 .. + 7 of the row's
 * 4096 (32 value heads of 128) */
template <int VEC, bool CS, int PAD> __global__ void __launch_bounds__(512) copy_shape(shape_args a)
{
    const int w = threadIdx.x >> 5, lane = threadIdx.x & 31, W = blockDim.x >> 5;
    float pads[PAD > 0 ? PAD : 1];
    load_pads<PAD>(a.pad, pads);
    const int s = a.slot[blockIdx.y];
    float *p = a.state + (size_t)s * ROW_FLOATS + (size_t)(blockIdx.x * W + w) * 8 * 128;
    if (VEC == 4) {
        float4 *q = (float4 *)p + lane;
        float4 x[8];
#pragma unroll
        for (int r = 0; r < 8; r++)
            x[r] = ld<CS>(q + r * 32);
        float z = zero_after(x);
#pragma unroll
        for (int i = 0; i < PAD; i++)
            z = __fmaf_rn(pads[i] * 0.0f, (&x[i / 4].x)[i % 4], z);
#pragma unroll
        for (int r = 0; r < 8; r++)
            st<CS>(q + r * 32, make_float4(x[r].x + z, x[r].y + z, x[r].z + z, x[r].w + z));
    } else {
        float *q = p + lane;
        float x[32];
#pragma unroll
        for (int i = 0; i < 32; i++) /* row i / 4, channel lane + 32 (i % 4) */
            x[i] = ld<CS>(q + (i >> 2) * 128 + (i & 3) * 32);
        float z = zero_after(x);
#pragma unroll
        for (int i = 0; i < PAD; i++)
            z = __fmaf_rn(pads[i] * 0.0f, x[i], z);
#pragma unroll
        for (int i = 0; i < 32; i++)
            st<CS>(q + (i >> 2) * 128 + (i & 3) * 32, x[i] + z);
    }
}

static kernel_fn kernel_of(int vec, int cs, int pad)
{
    if (pad)
        return vec == 4 ? (cs ? copy_shape<4, true, PAD_REGS> : copy_shape<4, false, PAD_REGS>)
                        : (cs ? copy_shape<1, true, PAD_REGS> : copy_shape<1, false, PAD_REGS>);
    return vec == 4 ? (cs ? copy_shape<4, true, 0> : copy_shape<4, false, 0>)
                    : (cs ? copy_shape<1, true, 0> : copy_shape<1, false, 0>);
}

/* dynamic shared memory that leaves at most `ctas` CTAs per SM (0: no cap) */
static size_t smem_for(int ctas, int smem_per_sm, int reserved)
{
    return ctas > 0 ? (size_t)(smem_per_sm / ctas - reserved) : 0;
}

/* how the resident warps per SM are capped at 32, as the decode kernels' 64 registers cap theirs */
enum cap_mode { CAP_NONE, CAP_REGS, CAP_SMEM, CAP_MODES };
static const char *const cap_names[CAP_MODES] = {"-", "regs", "smem"};

struct shape {
    int rnd, cs, vec, W, cap; /* cap: a cap_mode */
};

struct device_info {
    int sms, smem_per_sm, reserved;
    cudaStream_t stream;
    float *pad; /* PAD_REGS zeros */
};

/* µs per call of `sh` at B rows: a graph of NODES calls, call j on the slots at idx + j B;
 * *warps: resident warps per SM */
static double time_shape(const shape &sh, int B, float *state, const int *idx, const device_info &d, int *warps)
{
    const kernel_fn k = kernel_of(sh.vec, sh.cs, sh.cap == CAP_REGS);
    const size_t smem = sh.cap == CAP_SMEM ? smem_for(32 / sh.W, d.smem_per_sm, d.reserved) : 0;
    int per_sm = 0;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, k, 32 * sh.W, smem));
    *warps = per_sm * sh.W;
    const dim3 grid(4096 / (8 * sh.W), B);
    cudaGraph_t g;
    cudaGraphExec_t ge;
    CK(cudaStreamBeginCapture(d.stream, cudaStreamCaptureModeGlobal));
    for (int j = 0; j < NODES; j++)
        k<<<grid, 32 * sh.W, smem, d.stream>>>(shape_args{state, idx + j * B, d.pad});
    CK(cudaStreamEndCapture(d.stream, &g));
    CK(cudaGraphInstantiate(&ge, g, 0));
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    /* one warm-up graph, one timed to size the repeats (about 0.1 s a measurement), best of 3 */
    CK(cudaGraphLaunch(ge, d.stream));
    float best = 1e30f;
    int reps = 1;
    for (int r = 0; r < 4; r++) {
        CK(cudaEventRecord(e0, d.stream));
        for (int i = 0; i < reps; i++)
            CK(cudaGraphLaunch(ge, d.stream));
        CK(cudaEventRecord(e1, d.stream));
        CK(cudaEventSynchronize(e1));
        float ms;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        if (r == 0) {
            reps = (int)(100.0f / (ms > 0.01f ? ms : 0.01f));
            reps = reps < 2 ? 2 : reps > 50 ? 50 : reps;
        } else if (ms / reps < best) {
            best = ms / reps;
        }
    }
    CK(cudaGraphExecDestroy(ge));
    CK(cudaGraphDestroy(g));
    CK(cudaEventDestroy(e0));
    CK(cudaEventDestroy(e1));
    return best * 1000.0 / NODES;
}

static unsigned long long rng = 0x9E3779B97F4A7C15ull;
static unsigned next_rand(void)
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (unsigned)(rng >> 11);
}

/* [2][NODES][B] slots: seq, call j's rows at slots j B .. j B + B - 1 (mod the pool); rnd, B
 * distinct slots of the pool in random order per call */
static int *slot_tables(int B, int slots)
{
    int *h = (int *)malloc(sizeof(int) * 2 * NODES * B), *perm = (int *)malloc(sizeof(int) * slots), *idx;
    for (int j = 0; j < NODES; j++) {
        for (int i = 0; i < B; i++)
            h[j * B + i] = (j * B + i) % slots;
        for (int i = 0; i < slots; i++)
            perm[i] = i;
        for (int i = 0; i < B; i++) {
            const int k = i + (int)(next_rand() % (unsigned)(slots - i)), t = perm[i];
            perm[i] = perm[k], perm[k] = t;
            h[(NODES + j) * B + i] = perm[i];
        }
    }
    CK(cudaMalloc(&idx, sizeof(int) * 2 * NODES * B));
    CK(cudaMemcpy(idx, h, sizeof(int) * 2 * NODES * B, cudaMemcpyHostToDevice));
    free(h), free(perm);
    return idx;
}

int main(int argc, char **argv)
{
    int Bs[16] = {16, 64, 512}, nb = 3;
    if (argc > 1) {
        nb = 0;
        for (int i = 1; i < argc && nb < 16; i++)
            Bs[nb++] = atoi(argv[i]);
    }
    device_info d;
    CK(cudaDeviceGetAttribute(&d.sms, cudaDevAttrMultiProcessorCount, 0));
    CK(cudaDeviceGetAttribute(&d.smem_per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, 0));
    CK(cudaDeviceGetAttribute(&d.reserved, cudaDevAttrReservedSharedMemoryPerBlock, 0));
    CK(cudaStreamCreateWithFlags(&d.stream, cudaStreamNonBlocking));
    CK(cudaMalloc(&d.pad, sizeof(float) * PAD_REGS));
    CK(cudaMemset(d.pad, 0, sizeof(float) * PAD_REGS));
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    for (int vec = 1; vec <= 4; vec += 3)
        for (int cs = 0; cs < 2; cs++) {
            const kernel_fn k = kernel_of(vec, cs, 0);
            CK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, d.smem_per_sm / 2));
        }
    printf("# %s, %d SMs; µs per layer call (%d kernel nodes per graph over >= 1 GiB of states, 2 MiB per row), "
           "TB/s read + write, resident warps per SM\n",
           prop.name, d.sms, NODES);
    printf("%5s %5s %4s %3s %2s %4s %10s %8s %6s\n", "B", "order", "hint", "vec", "W", "cap", "us", "TB/s", "warps");
    for (int bi = 0; bi < nb; bi++) {
        const int B = Bs[bi];
        int slots = (1 << 30) / ROW_BYTES;
        if (slots < 2 * B) slots = 2 * B;
        slots = (slots + B - 1) / B * B;
        float *state;
        CK(cudaMalloc(&state, (size_t)slots * ROW_BYTES));
        CK(cudaMemset(state, 0, (size_t)slots * ROW_BYTES));
        int *idx = slot_tables(B, slots);
        shape sh;
        for (sh.rnd = 0; sh.rnd < 2; sh.rnd++)
            for (sh.cs = 0; sh.cs < 2; sh.cs++)
                for (sh.vec = 1; sh.vec <= 4; sh.vec += 3)
                    for (sh.W = 1; sh.W <= 8; sh.W *= 2)
                        for (sh.cap = 0; sh.cap < (sh.W > 1 ? CAP_MODES : CAP_SMEM); sh.cap++) {
                            int warps;
                            const double us = time_shape(sh, B, state, idx + sh.rnd * NODES * B, d, &warps);
                            printf("%5d %5s %4s %3d %2d %4s %10.2f %8.3f %6d\n", B, sh.rnd ? "rnd" : "seq",
                                   sh.cs ? "cs" : "none", sh.vec, sh.W, cap_names[sh.cap], us,
                                   2.0 * B * ROW_BYTES / (us * 1e6), warps);
                            fflush(stdout);
                        }
        CK(cudaFree(state));
        CK(cudaFree(idx));
    }
    return 0;
}
