/*
 * device.h — device memory, streams and timing for the library's own tools and tests
 * (the CLI, the benchmarks, the state pool). Not part of the public API: engines bring
 * their own memory and streams.
 *
 * On CPU and reference contexts memory is host memory (64-byte aligned) and timing is
 * wall-clock; on CUDA it is device memory (cudaMalloc), the context's own stream, and
 * CUDA events around a captured CUDA graph.
 */
#ifndef RSSM_DEVICE_H
#define RSSM_DEVICE_H

#include "replayssm.h"

#ifdef __cplusplus
extern "C" {
#endif

rssm_status rssm_dev_alloc(rssm_context *ctx, size_t bytes, void **out);
void rssm_dev_free(rssm_context *ctx, void *ptr); /* accepts NULL */
rssm_status rssm_dev_memset(rssm_context *ctx, void *dst, int byte, size_t bytes);
rssm_status rssm_dev_upload(rssm_context *ctx, void *dst, const void *host, size_t bytes);
rssm_status rssm_dev_download(rssm_context *ctx, void *host, const void *src, size_t bytes);
rssm_status rssm_dev_copy(rssm_context *ctx, void *dst, const void *src, size_t bytes); /* device to device */
/* The same, only enqueued on the context's stream (in order with its kernels): the caller
 * synchronises (rssm_dev_sync) before anything else may rely on the bytes. Host contexts:
 * done on return. */
rssm_status rssm_dev_memset_async(rssm_context *ctx, void *dst, int byte, size_t bytes);
rssm_status rssm_dev_copy_async(rssm_context *ctx, void *dst, const void *src, size_t bytes);
/* `rows` device-to-device copies of `width` bytes, row r from src + r * spitch to
 * dst + r * dpitch, in one call (one cudaMemcpy2DAsync on CUDA), enqueued like the above. */
rssm_status rssm_dev_copy2d_async(rssm_context *ctx, void *dst, size_t dpitch, const void *src, size_t spitch,
                                  size_t width, size_t rows);
rssm_status rssm_dev_sync(rssm_context *ctx);
/* Orders the context's stream after the work enqueued on a caller's `stream` so far
 * (order_after), or that stream after the context's (order_before), with a device-side event
 * wait: the host does not block. Host devices: nothing to order. */
rssm_status rssm_dev_order_after(rssm_context *ctx, void *stream);
rssm_status rssm_dev_order_before(rssm_context *ctx, void *stream);
/* The stream that tools pass to kernel calls (NULL on host devices). */
void *rssm_dev_stream(rssm_context *ctx);

/* A unit of work to time: enqueues work on `stream`; returns 0 on success. */
typedef int (*rssm_dev_work)(void *arg, void *stream);

/* Times `work`: on CUDA it is captured once into a CUDA graph (when `graph` is 1) and the
 * graph is replayed; on host devices it is called directly. Runs `warmup` untimed, then
 * `reps` timed repetitions, and returns the mean microseconds per repetition. */
rssm_status rssm_dev_time(rssm_context *ctx, rssm_dev_work work, void *arg, int graph, int warmup, int reps,
                          double *us_per_rep);

/* Measured bandwidths over buffers of `bytes` each (not cache-resident when large enough):
 * copy = a[i] = b[i] counting bytes read plus written; triad = a[i] = b[i] + s*c[i] counting
 * three streams (STREAM's convention). GB/s = 1e9 bytes per second. */
rssm_status rssm_dev_bandwidth(rssm_context *ctx, size_t bytes, double *copy_gbps, double *triad_gbps);

/* Multiprocessors of a CUDA context's GPU; 0 on host devices (and for NULL). */
int rssm_dev_sm_count(rssm_context *ctx);

#ifdef __cplusplus
}
#endif
#endif /* RSSM_DEVICE_H */
