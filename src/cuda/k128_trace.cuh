/*
 * k128_trace.cuh — optional per-CTA timeline of the per-head replay kernel (decode_k128.cu,
 * replay decode and verify), for finding where a small batch's step goes between the loads and
 * the last store.
 *
 * Off by default, as pipeline_trace.cuh: the K128_TRACE_* macros compile to nothing. A build
 * with `cmake -DRSSM_PIPE_TRACE=ON` records, from %globaltimer (ns), for the first K128_TR_CTAS
 * CTAs of the last K128_TR_LAUNCHES launches:
 *   entry, slot known, ring landed (the first barrier), rows start (after the ring weights'
 *   barrier), and per warp when its rows of S0 were usable (at its rows' start, the timer read
 *   waiting for its last row) and when it issued its last store, the CTA's multiprocessor and
 *   its folds (end fold 0 none, 1 shared, 2 early; plus 4 after a start fold), and in a verify
 *   window when a start fold's arithmetic ended, when its stores were issued and when the
 *   window's gates were done. Under a CUDA graph a node keeps the launch number it was captured
 *   with, so the records are those of 16 of the graph's nodes, each its last run.
 * params.pipeline_trace_file's path with ".k128.csv" appended receives them when the context is
 * freed (bench/k128_trace.py summarises them).
 */
#ifndef RSSM_K128_TRACE_CUH
#define RSSM_K128_TRACE_CUH

#ifdef RSSM_PIPE_TRACE
#include <stdio.h>

#include "k128_common.cuh" /* trace_now, kargs */

#define K128_TR_CTAS 1024
#define K128_TR_LAUNCHES 16
#define K128_TR_WARPS 16
enum {
    K128_TR_ENTRY,
    K128_TR_SLOT,
    K128_TR_RING,
    K128_TR_ROWS,
    K128_TR_SMID,
    K128_TR_END,
    K128_TR_FOLD,   /* a start fold's arithmetic done (warp 0) */
    K128_TR_FOLDST, /* ... and its checkpoint stores issued */
    K128_TR_GATES,  /* the window's gates done (the barrier before the ring weights) */
    K128_TR_W0
};
#define K128_TR_N (K128_TR_W0 + 2 * K128_TR_WARPS) /* then per warp: rows usable, stored */
__device__ unsigned long long g_k128_trace[K128_TR_LAUNCHES][K128_TR_CTAS][K128_TR_N];

/* the record of the CTA in launch n (kargs.trace_launch, counted by the launcher: a graph's
 * nodes keep the index they were captured with), or null past the traced CTAs. Marks are stores
 * only: a load in a mark would wait behind the checkpoint's loads and move the warp's timeline. */
__device__ __forceinline__ unsigned long long *k128_rec(int n)
{
    const int c = blockIdx.y * gridDim.x + blockIdx.x;
    return c < K128_TR_CTAS ? g_k128_trace[n % K128_TR_LAUNCHES][c] : nullptr;
}
__device__ __forceinline__ void k128_mark(int n, int k, unsigned long long v)
{
    unsigned long long *r = k128_rec(n);
    if (r) r[k] = v;
}
/* warp w's rows usable: the timer read waits for x (its last row's last element) */
__device__ __forceinline__ void k128_trace_rows(int n, int w, float x)
{
    if (__float_as_uint(x) != 0x7fbadbadu) k128_mark(n, K128_TR_W0 + 2 * w, trace_now());
}
__device__ __forceinline__ void k128_trace_entry(int n)
{
    if (threadIdx.x == 0) {
        unsigned smid;
        asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
        k128_mark(n, K128_TR_ENTRY, trace_now());
        k128_mark(n, K128_TR_SMID, smid);
    }
}
#define K128_TRACE_ENTRY(A) k128_trace_entry((A).trace_launch)
#define K128_TRACE(A, k)                                                                                               \
    do {                                                                                                               \
        if (threadIdx.x == 0) k128_mark((A).trace_launch, k, trace_now());                                             \
    } while (0)
#define K128_TRACE_VALUE(A, k, v)                                                                                      \
    do {                                                                                                               \
        if (threadIdx.x == 0) k128_mark((A).trace_launch, k, (unsigned long long)(v));                                 \
    } while (0)
#define K128_TRACE_ROWS(A, w, lane, x)                                                                                 \
    do {                                                                                                               \
        if ((lane) == 0) k128_trace_rows((A).trace_launch, w, x);                                                      \
    } while (0)
#define K128_TRACE_STORED(A, w, lane)                                                                                  \
    do {                                                                                                               \
        __syncwarp();                                                                                                  \
        if ((lane) == 0) k128_mark((A).trace_launch, K128_TR_W0 + 2 * (w) + 1, trace_now());                           \
    } while (0)

/* CSV: launch,cta,smid,end,entry,slot,ring,rows,fold,foldst,gates, then rows_w / stored_w per
 * warp, microseconds from the launch's earliest entry (-1: not recorded) */
static void k128_trace_dump(const char *path)
{
    static unsigned long long t[K128_TR_LAUNCHES][K128_TR_CTAS][K128_TR_N];
    if (!path || cudaDeviceSynchronize() != cudaSuccess ||
        cudaMemcpyFromSymbol(t, g_k128_trace, sizeof t) != cudaSuccess)
        return;
    char name[4096];
    snprintf(name, sizeof name, "%s.k128.csv", path);
    FILE *f = fopen(name, "w");
    if (!f) return;
    fprintf(f, "launch,cta,smid,end,entry,slot,ring,rows,fold,foldst,gates");
    for (int w = 0; w < K128_TR_WARPS; w++)
        fprintf(f, ",rows%d,stored%d", w, w);
    fprintf(f, "\n");
    for (int n = 0; n < K128_TR_LAUNCHES; n++) {
        unsigned long long t0 = ~0ull;
        for (int c = 0; c < K128_TR_CTAS; c++)
            if (t[n][c][K128_TR_ENTRY] && t[n][c][K128_TR_ENTRY] < t0) t0 = t[n][c][K128_TR_ENTRY];
        for (int c = 0; c < K128_TR_CTAS; c++) {
            const unsigned long long *r = t[n][c];
            if (!r[K128_TR_ENTRY]) continue;
            auto us = [&](unsigned long long v) { return v >= r[K128_TR_ENTRY] ? (v - t0) * 1e-3 : -1.0; };
            fprintf(f, "%d,%d,%llu,%llu,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f", n, c, r[K128_TR_SMID], r[K128_TR_END],
                    us(r[K128_TR_ENTRY]), us(r[K128_TR_SLOT]), us(r[K128_TR_RING]), us(r[K128_TR_ROWS]),
                    us(r[K128_TR_FOLD]), us(r[K128_TR_FOLDST]), us(r[K128_TR_GATES]));
            for (int w = 0; w < 2 * K128_TR_WARPS; w++)
                fprintf(f, ",%.3f", us(r[K128_TR_W0 + w]));
            fprintf(f, "\n");
        }
    }
    fclose(f);
}
#define K128_TRACE_WRITE(path) k128_trace_dump(path)
#else
#define K128_TRACE_ENTRY(A) ((void)0)
#define K128_TRACE(A, k) ((void)0)
#define K128_TRACE_VALUE(A, k, v) ((void)0)
#define K128_TRACE_ROWS(A, w, lane, x) ((void)0)
#define K128_TRACE_STORED(A, w, lane) ((void)0)
#define K128_TRACE_WRITE(path) ((void)(path))
#endif

#endif
