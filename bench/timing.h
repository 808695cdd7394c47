/*
 * timing.h — timing a unit of work on a context's device and measuring the device's memory
 * bandwidth, for the benchmarks (and the graph-replay test). Not part of the library.
 *
 * On CUDA contexts the work is captured once into a CUDA graph on the context's stream (when
 * `graph` is 1) and the graph is replayed between CUDA events; on host contexts it is called
 * directly between wall-clock reads. A failure prints what failed on stderr.
 */
#ifndef RSSM_BENCH_TIMING_H
#define RSSM_BENCH_TIMING_H

#include "replayssm.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A unit of work to time: enqueues it on `stream`; returns 0 on success. */
typedef int (*bench_work)(void *arg, void *stream);

/* Runs `warmup` untimed, then `reps` timed repetitions; mean microseconds per repetition. */
rssm_status bench_time(rssm_context *ctx, bench_work work, void *arg, int graph, int warmup, int reps,
                       double *us_per_rep);

/* The work captured once and launched at will, each launch with what the device buffers hold
 * then (the graph-replay test changes the planner's rows between launches): a CUDA graph on
 * CUDA contexts, enqueued on the context's stream; host contexts call the work. */
typedef struct bench_graph bench_graph;
rssm_status bench_graph_capture(rssm_context *ctx, bench_work work, void *arg, bench_graph **out);
rssm_status bench_graph_launch(bench_graph *g);
void bench_graph_free(bench_graph *g);

/* Bandwidths over three buffers of `bytes` each (not cache-resident when large enough), best of
 * several runs: copy a[i] = b[i] counting bytes read plus written; triad a[i] = b[i] + s c[i]
 * counting three streams (STREAM's convention). GB/s = 1e9 bytes per second. */
rssm_status bench_bandwidth(rssm_context *ctx, size_t bytes, double *copy_gbps, double *triad_gbps);

/* The CUDA halves (timing_cuda.cu; without CUDA they are never called). */
rssm_status bench_time_cuda(rssm_context *ctx, bench_work work, void *arg, int graph, int warmup, int reps,
                            double *us_per_rep);
rssm_status bench_bandwidth_cuda(rssm_context *ctx, size_t bytes, double *copy_gbps, double *triad_gbps);
rssm_status bench_graph_capture_cuda(rssm_context *ctx, bench_work work, void *arg, void **exec);
rssm_status bench_graph_launch_cuda(rssm_context *ctx, void *exec);
void bench_graph_free_cuda(void *exec);

#ifdef __cplusplus
}
#endif
#endif /* RSSM_BENCH_TIMING_H */
