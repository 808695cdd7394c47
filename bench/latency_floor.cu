/*
 * latency_floor.cu — what one decode layer call cannot go below at small batches on this GPU:
 * kernels that do no arithmetic, launched the way the decode kernels are (one CUDA graph of many
 * layer calls, each its own kernel node over states that do not stay in L2), timed per node.
 *
 *   empty     the launch of packed decode's grid and nothing else
 *   copy      each CTA reads its rows' slot index, then its part of the row's state (a dependent
 *             load, as the kernels' slot -> state chain), and writes it back: packed decode's
 *             memory traffic without its arithmetic
 *   copy-idx0 the same with the state's address known at launch (no slot index to wait for, as
 *             FLA's decode of contiguous states)
 *   copy-pdl  `copy` as a programmatic dependent launch, as the decode kernels with cuda_pdl: a node
 *             may start while the one before it finishes; meanwhile it reads its slot through L2
 *             and prefetches its state into L2, then waits for the node before (griddepcontrol)
 *             and lets the next one launch, and loads and stores as `copy`
 *   pdl-early the same but loading the state itself before the wait (not safe where the kernel
 *             before may write it; the bound of overlapping the state's DRAM latency whole)
 *   read      `copy` without the write back: replay decode's memory chain (slot -> state, the
 *             state only read on steps without a fold)
 *   read-pdl  `read` launched as `copy-pdl`
 *
 * Shape: Qwen3-Next's linear-attention state, 32 value heads of 128 x 128 f32 (2 MiB per row);
 * launch shape as the K = V = 128 packed kernel's (32 x split CTAs per row of 512 / split threads,
 * split 4 while the grid fits one CTA per SM, else 2). Working set 1 GiB of states or more.
 * Built as build/bench_latency_floor on CUDA builds: bench_latency_floor [B ...] (default 1 2 4 8
 * 16 32 64); prints µs per layer call for each kernel and B.
 */
#include <stdio.h>
#include <stdlib.h>

#include "cuda_check.h"

enum { HV = 32, ROW_BYTES = HV * 128 * 128 * 4, NODES = 128, REPS = 20 };

struct node_args {
    float4 *state;   /* slots x ROW_BYTES */
    const int *slot; /* [B] this node's slots */
    int first;       /* copy-idx0: this node's first slot (rows first .. first + B - 1) */
    int split;       /* CTAs per value head */
};

__global__ void empty_kernel(node_args) {}

/* MODE 0: slot from memory; 1: slot = first + row; 2: PDL, L2 prefetch before the wait;
 * 3: PDL, loads before the wait; 4: as 0, 5: as 2, reading only */
template <int MODE> __global__ void copy_kernel(node_args a)
{
    const int b = blockIdx.y, part = blockIdx.x;         /* part: head * split + p */
    const int per_cta = ROW_BYTES / 16 / (HV * a.split); /* float4 per CTA */
    if (MODE == 2 || MODE == 5) {
        if (threadIdx.x == 0) {
            const int s0 = __ldcg(a.slot + b);
            const float4 *p0 = a.state + (size_t)s0 * (ROW_BYTES / 16) + (size_t)part * per_cta;
            asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(p0), "r"(per_cta * 16) : "memory");
        }
        asm volatile("griddepcontrol.wait;" ::: "memory");
        asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    }
    if (MODE == 3) asm volatile("griddepcontrol.launch_dependents;");
    const int s = MODE == 1 ? a.first + b : a.slot[b];
    float4 *p = a.state + (size_t)s * (ROW_BYTES / 16) + (size_t)part * per_cta;
    float4 x[8];
    const int n = per_cta / blockDim.x; /* 8 at every split: 64 KiB / split over 512 / split threads */
#pragma unroll
    for (int i = 0; i < 8; i++)
        if (i < n) x[i] = p[threadIdx.x + i * blockDim.x];
    if (MODE == 3) asm volatile("griddepcontrol.wait;" ::: "memory");
    if (MODE >= 4) { /* the loads must complete: a store the zeroed state never takes */
        float sum = 0.0f;
#pragma unroll
        for (int i = 0; i < 8; i++)
            if (i < n) sum += x[i].x + x[i].y + x[i].z + x[i].w;
        if (sum == 12345.0f) p[threadIdx.x] = x[0];
    } else {
#pragma unroll
        for (int i = 0; i < 8; i++)
            if (i < n) p[threadIdx.x + i * blockDim.x] = x[i];
    }
}

static void launch(int kind, const node_args &a, int B, cudaStream_t st)
{
    const dim3 grid(HV * a.split, B), block(512 / a.split);
    if (kind == 0) empty_kernel<<<grid, block, 0, st>>>(a);
    if (kind == 1) copy_kernel<0><<<grid, block, 0, st>>>(a);
    if (kind == 2) copy_kernel<1><<<grid, block, 0, st>>>(a);
    if (kind == 5) copy_kernel<4><<<grid, block, 0, st>>>(a);
    if (kind == 3 || kind == 4 || kind == 6) {
        cudaLaunchConfig_t c = {};
        cudaLaunchAttribute at[1];
        at[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
        at[0].val.programmaticStreamSerializationAllowed = 1;
        c.gridDim = grid, c.blockDim = block, c.stream = st, c.attrs = at, c.numAttrs = 1;
        CK(cudaLaunchKernelEx(&c, kind == 3 ? copy_kernel<2> : kind == 4 ? copy_kernel<3> : copy_kernel<5>, a));
    }
    CK(cudaGetLastError());
}

int main(int argc, char **argv)
{
    int Bs[16] = {1, 2, 4, 8, 16, 32, 64}, nb = 7;
    if (argc > 1) {
        nb = 0;
        for (int i = 1; i < argc && nb < 16; i++)
            Bs[nb++] = atoi(argv[i]);
    }
    int sms = 0;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    const char *names[7] = {"empty", "copy", "copy-idx0", "copy-pdl", "pdl-early", "read", "read-pdl"};
    printf("# %s, %d SMs; µs per layer call, %d kernel nodes per graph, states of 2 MiB per row\n", prop.name, sms,
           NODES);
    printf("%6s", "B");
    for (int kind = 0; kind < 7; kind++)
        printf(" %10s", names[kind]);
    printf("\n");
    cudaStream_t st;
    CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    for (int bi = 0; bi < nb; bi++) {
        const int B = Bs[bi];
        /* slots: at least 1 GiB, a node's B rows after the previous node's */
        int slots = (1 << 30) / ROW_BYTES;
        if (slots < 2 * B) slots = 2 * B;
        slots = (slots + B - 1) / B * B;
        float4 *state;
        int *idx;
        CK(cudaMalloc(&state, (size_t)slots * ROW_BYTES));
        CK(cudaMemset(state, 0, (size_t)slots * ROW_BYTES));
        int *h = (int *)malloc(sizeof(int) * NODES * B);
        for (int j = 0; j < NODES; j++)
            for (int i = 0; i < B; i++)
                h[j * B + i] = (j * B + i) % slots;
        CK(cudaMalloc(&idx, sizeof(int) * NODES * B));
        CK(cudaMemcpy(idx, h, sizeof(int) * NODES * B, cudaMemcpyHostToDevice));
        free(h);
        const int split = B * HV <= sms ? 4 : 2;
        printf("%6d", B);
        for (int kind = 0; kind < 7; kind++) {
            cudaGraph_t g;
            cudaGraphExec_t ge;
            CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
            for (int j = 0; j < NODES; j++) {
                node_args a = {state, idx + j * B, (j * B) % slots, split};
                launch(kind, a, B, st);
            }
            CK(cudaStreamEndCapture(st, &g));
            CK(cudaGraphInstantiate(&ge, g, 0));
            cudaEvent_t e0, e1;
            CK(cudaEventCreate(&e0));
            CK(cudaEventCreate(&e1));
            float best = 1e30f;
            for (int r = 0; r < 5; r++) {
                CK(cudaGraphLaunch(ge, st));
                CK(cudaEventRecord(e0, st));
                for (int k = 0; k < REPS; k++)
                    CK(cudaGraphLaunch(ge, st));
                CK(cudaEventRecord(e1, st));
                CK(cudaEventSynchronize(e1));
                float ms;
                CK(cudaEventElapsedTime(&ms, e0, e1));
                if (ms < best) best = ms;
            }
            printf(" %10.2f", best * 1000.0f / (REPS * NODES));
            CK(cudaGraphExecDestroy(ge));
            CK(cudaGraphDestroy(g));
            CK(cudaEventDestroy(e0));
            CK(cudaEventDestroy(e1));
        }
        printf("\n");
        CK(cudaFree(state));
        CK(cudaFree(idx));
    }
    return 0;
}
