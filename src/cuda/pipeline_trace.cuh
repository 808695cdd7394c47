/*
 * pipeline_trace.cuh — optional per-item timeline of the replay pipeline (replay_pipeline.cu),
 * for finding where a step's time goes (start, per-item waits, folds, the last CTA).
 *
 * Off by default: the PIPE_TRACE_* macros compile to nothing and the kernels' SASS is unchanged.
 * Built with `cmake -DRSSM_PIPE_TRACE=ON`, every launch of the pipeline records, from
 * %globaltimer (ns):
 *   [cta][0]           kernel entry (thread 0)
 *   [cta][1 + 5 j]     consumers: item j's stage has landed (warp 0 lane 0, after the wait)
 *   [cta][2 + 5 j]     consumers: item j is done (before the stage is released)
 *   [cta][3 + 5 j]     producer: item j's state copy is issued
 *   [cta][4 + 5 j]     producer: item j begun (its token inputs' loads issued)
 *   [cta][5 + 5 j]     producer: item j handed over (header written, full arrived)
 * for the first PTR_CTAS CTAs and PTR_ITEMS items of each; a later launch overwrites an earlier
 * one. When a context whose params.pipeline_trace_file names a file is freed, the last launch's
 * records go there as CSV
 * (cta,item,issue_us,full_us,done_us,begin_us,hand_us, microseconds from the earliest entry);
 * bench/pipe_trace.py summarises them. The stores cost about 3% at B = 512 (GDN: 300 us in a
 * trace build, 291-292 us without, in separate calls on the H200).
 */
#ifndef RSSM_PIPELINE_TRACE_CUH
#define RSSM_PIPELINE_TRACE_CUH

#ifdef RSSM_PIPE_TRACE
#include <stdio.h>
#include <stdlib.h>
/* trace_now: k128_common.cuh, included before this header */

#define PTR_CTAS 132
#define PTR_ITEMS 64
__device__ unsigned long long g_pipe_trace[PTR_CTAS][1 + 5 * PTR_ITEMS];

__device__ __forceinline__ void pipe_trace_mark(int slot)
{
    if (blockIdx.x < PTR_CTAS) g_pipe_trace[blockIdx.x][slot] = trace_now();
}
/* item j's mark k (1: landed, 2: done, 3: copy issued, 4: begun, 5: handed over) */
#define PIPE_TRACE_ENTRY() pipe_trace_mark(0)
#define PIPE_TRACE_ITEM(j, k)                                                                                          \
    do {                                                                                                               \
        if ((j) < PTR_ITEMS) pipe_trace_mark(5 * (j) + (k));                                                           \
    } while (0)

static void pipe_trace_dump(const char *path)
{
    static unsigned long long t[PTR_CTAS][1 + 5 * PTR_ITEMS];
    if (!path || cudaDeviceSynchronize() != cudaSuccess ||
        cudaMemcpyFromSymbol(t, g_pipe_trace, sizeof t) != cudaSuccess)
        return;
    FILE *f = fopen(path, "w");
    if (!f) return;
    unsigned long long t0 = ~0ull;
    for (int c = 0; c < PTR_CTAS; c++)
        if (t[c][0] && t[c][0] < t0) t0 = t[c][0];
    fprintf(f, "cta,item,issue_us,full_us,done_us,begin_us,hand_us\n");
    for (int c = 0; c < PTR_CTAS; c++) {
        if (!t[c][0]) continue;
        const double e = (t[c][0] - t0) * 1e-3;
        fprintf(f, "%d,-1,0,%.3f,%.3f,%.3f,%.3f\n", c, e, e, e, e); /* entry */
        /* items of this launch: marks after this CTA's entry (older launches left earlier ones) */
        /* mark k of item j, -1 where this launch did not mark it */
        auto at = [&](int j, int k) {
            const unsigned long long x = t[c][5 * j + k];
            return x > t[c][0] ? (x - t0) * 1e-3 : -1.0;
        };
        for (int j = 0; j < PTR_ITEMS && at(j, 1) >= 0 && at(j, 2) >= 0; j++)
            fprintf(f, "%d,%d,%.3f,%.3f,%.3f,%.3f,%.3f\n", c, j, at(j, 3), at(j, 1), at(j, 2), at(j, 4), at(j, 5));
    }
    fclose(f);
}
#define PIPE_TRACE_WRITE(path) pipe_trace_dump(path)
#else
#define PIPE_TRACE_ENTRY() ((void)0)
#define PIPE_TRACE_ITEM(j, k) ((void)0)
#define PIPE_TRACE_WRITE(path) ((void)(path))
#endif

#endif
